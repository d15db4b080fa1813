"""The replay benchmark's machinery on a slice of real chat: invariants hold after every
swap, and a summarizer that fails 30% of calls and overshoots half of its first tries still
converges."""

from __future__ import annotations

from pathlib import Path

from bench.replay_loop import replay
from memory.storage.database import create_database, drop_database, with_database
from tests.memory.helpers import SMALL


async def _replay(admin_url: str, name: str, corpus: Path, **kwargs: float) -> dict[str, object]:
    await create_database(admin_url, name)
    try:
        result = await replay(
            corpus, database_url=with_database(admin_url, name), limit=700, config=SMALL, **kwargs
        )  # type: ignore[arg-type]
    finally:
        await drop_database(admin_url, name)
    return result.as_json()


async def test_replay_holds_the_invariants(postgres_admin_url: str, shared_data: Path) -> None:
    out = await _replay(postgres_admin_url, "eva_replay_clean", shared_data / "irc" / "rust.jsonl")
    assert out["messages"] == 700
    assert out["invariant_violations"] == 0, out["violations"]
    assert out["swaps"] >= 5 and out["converged"]
    assert int(out["max_row_bytes"]) <= SMALL.view_high  # type: ignore[call-overload]
    assert int(out["max_tail_bytes"]) <= SMALL.tail_force + 600  # type: ignore[call-overload]


async def test_replay_converges_with_a_failing_overshooting_summarizer(
    postgres_admin_url: str, shared_data: Path
) -> None:
    clean = await _replay(postgres_admin_url, "eva_replay_ref", shared_data / "irc" / "rust.jsonl")
    faulty = await _replay(
        postgres_admin_url,
        "eva_replay_faulty",
        shared_data / "irc" / "rust.jsonl",
        fail_rate=0.3,
        overshoot_rate=0.5,
    )
    assert int(faulty["failed_calls"]) > 0  # type: ignore[call-overload]
    assert faulty["invariant_violations"] == 0, faulty["violations"]
    assert faulty["converged"], "every staged row must end up swapped in"
    assert int(faulty["swaps"]) >= int(clean["swaps"]) - 1  # type: ignore[call-overload]
    # Retries in the same conversation cost extra requests, never extra lines over 512 bytes
    # (check_row counts a node over NODE_BYTES as a violation unless it took all TRIES).
    assert int(faulty["model_calls"]) > int(faulty["summarize_calls"]) - int(faulty["failed_calls"])  # type: ignore[call-overload]
