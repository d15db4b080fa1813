"""The replay's people-card figures (bench/turns.py): the cards' calls and dollars per 1,000
messages beside the compaction's, and the reply turns measured with and without the cards on
the same timeline."""

from __future__ import annotations

from pathlib import Path

from bench.meters import AUTO, WITHOUT_KEEP_WARM, compact_model
from bench.turns import RunSpec, headline, measure_run
from memory.storage.database import create_database, drop_database, with_database
from tests.memory.helpers import SMALL


async def test_the_replay_prices_the_cards_and_the_turns_without_them(
    postgres_admin_url: str, shared_data: Path
) -> None:
    await create_database(postgres_admin_url, "eva_replay_cards")
    try:
        spec = RunSpec(shared_data / "irc" / "rust.jsonl", "cards", 700, SMALL, ttls=(AUTO,), sample_every=10)
        run = await measure_run(spec, with_database(postgres_admin_url, "eva_replay_cards"))
    finally:
        await drop_database(postgres_admin_url, "eva_replay_cards")
    out = headline(run, compact_model())
    # One cards call per quiet swap at most, each priced as the request the bot sends.
    assert 0 < int(run.replay["card_calls"]) <= int(run.replay["swaps"])
    assert run.cards[compact_model()].requests == run.replay["card_calls"]
    assert out["cards_calls_per_1k_messages"] == round(int(run.replay["card_calls"]) / 700 * 1000, 4)
    assert 0 < out["cards_usd_per_1k_messages"] < out["cards_usd_per_1k_messages_haiku_4_5"]
    both = out["usd_per_1k_messages"] + out["cards_usd_per_1k_messages"]
    assert abs(out["compaction_and_cards_usd_per_1k_messages"] - both) <= 0.0002  # each rounded to 4 places
    # The same turns twice: the prompts with the cards cost more, and are not the same prompts.
    with_cards, without = run.replies[AUTO], run.replies_without_cards[AUTO]
    assert with_cards.requests == run.turns + run.reply_pings and run.turns > 0  # a request a turn, and pings
    unpinged = run.replies[WITHOUT_KEEP_WARM], run.replies_without_cards[WITHOUT_KEEP_WARM]
    assert unpinged[0].requests == unpinged[1].requests == run.turns
    assert with_cards.prompt_tokens > without.prompt_tokens
    assert 0 < out["reply_cache_read_share"] <= 1 and 0 < out["reply_cache_read_share_without_cards"] <= 1
