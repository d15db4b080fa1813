"""Secrets: the Discord token, the Anthropic API key and the database password never
appear in logs, in error output or in exception messages. Extends
tests/cli/test_foundation.py::test_secrets_never_printed (`eva doctor`) to `eva run` failing
at each of its steps, to exceptions of failed model and database calls, and to how settings
print; the whole process at LOG_LEVEL=DEBUG is
test_log_privacy.py::test_whole_process_logs_and_data_folder_keep_no_message_text."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import text

from bot.settings import Settings
from memory.claude import ClaudeError, create_message, make_client
from memory.compaction.anthropic_summarizer import AnthropicSummarizer
from memory.compaction.summarizer import CompactTask, SummarizerError
from memory.storage.database import make_engine
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.worlds.eva_process import start_eva

TOKEN = "tok-SECRET-discord-1234"
API_KEY = "key-SECRET-anthropic-5678"
PASSWORD = "pw-SECRET-database-9012"


def everything_printed(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


@pytest.fixture
async def picky_fakes() -> AsyncIterator[tuple[FakeDiscord, FakeAnthropic]]:
    """Fakes that accept other credentials than ours."""
    async with (
        FakeDiscord(token="the-right-token") as discord_fake,
        FakeAnthropic(api_keys={"the-right-key"}) as claude,
    ):
        yield discord_fake, claude


async def run_until_exit(workdir: Path, environment: dict[str, str], within: float = 60) -> tuple[int, str]:
    eva = await start_eva(workdir, {**environment, "LOG_LEVEL": "DEBUG"})
    try:
        async with asyncio.timeout(within):
            code = await eva.proc.wait()
            await eva._reader
    finally:
        eva.kill()
    return code, "\n".join(eva.raw)


async def test_eva_run_with_a_rejected_token_says_so_without_printing_it(
    picky_fakes: tuple[FakeDiscord, FakeAnthropic], database_url: str, workdir: Path
) -> None:
    discord_fake, claude = picky_fakes
    environment = {
        "DISCORD_TOKEN": TOKEN, "DISCORD_API_BASE": discord_fake.api_base, "DISCORD_GATEWAY_URL": discord_fake.gateway_url,
        "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": claude.base_url, "DATABASE_URL": database_url,
    }  # fmt: skip
    code, output = await run_until_exit(workdir, environment)
    assert code == 2 and output.splitlines()[-1].startswith("eva run: Discord rejected DISCORD_TOKEN")
    assert "SECRET" not in output


async def test_eva_run_with_an_unreachable_database_does_not_print_its_password(workdir: Path) -> None:
    environment = {
        "DISCORD_TOKEN": TOKEN, "ANTHROPIC_API_KEY": API_KEY,
        "DATABASE_URL": f"postgresql://eva:{PASSWORD}@127.0.0.1:1/eva",
    }  # fmt: skip
    code, output = await run_until_exit(workdir, environment)
    assert (
        code == 1
        and "cannot reach the database at DATABASE_URL (127.0.0.1:1/eva): connection refused" in output
    ), output[-2000:]
    assert "SECRET" not in output


async def test_failed_model_calls_never_carry_the_key(picky_fakes: tuple[FakeDiscord, FakeAnthropic]) -> None:
    _, claude = picky_fakes
    client = make_client(API_KEY, claude.base_url, timeout=5.0, max_retries=0)
    offline = make_client(API_KEY, "http://127.0.0.1:1", timeout=2.0, max_retries=0)
    try:
        for target in (client, offline):
            with pytest.raises(ClaudeError) as failed:
                await create_message(
                    target,
                    model="claude-haiku-4-5",
                    max_tokens=10,
                    messages=[{"role": "user", "content": "hi"}],
                )
            assert "SECRET" not in everything_printed(failed.value)
        assert failed.value.reason == "connection error"
        summarizer = AnthropicSummarizer(client, model="claude-haiku-4-5")
        with pytest.raises(SummarizerError) as refused:
            await summarizer.summarize(
                [], [CompactTask("compress", 0, 0, author="alice", text="hello there")]
            )
        assert "authentication failed (401)" in str(refused.value)
        assert "SECRET" not in everything_printed(refused.value)
        assert "SECRET" not in repr(client) + repr(vars(summarizer))
    finally:
        await client.close()
        await offline.close()


async def test_database_errors_and_engines_never_show_the_password() -> None:
    engine = make_engine(f"postgresql://eva:{PASSWORD}@127.0.0.1:1/eva")
    try:
        with pytest.raises(OSError) as refused:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        assert "SECRET" not in everything_printed(refused.value)
        assert "SECRET" not in repr(engine) + str(engine.url)
    finally:
        await engine.dispose()


def test_settings_print_their_secrets_masked() -> None:
    settings = Settings(_env_file=None, discord_token=TOKEN, anthropic_api_key=API_KEY,  # type: ignore[call-arg]
                        database_url=f"postgresql://eva:{PASSWORD}@db/eva")  # fmt: skip
    assert "SECRET" not in repr(settings) + str(settings) + settings.model_dump_json()
    with pytest.raises(ValidationError) as bad:
        Settings(_env_file=None, discord_token=TOKEN, anthropic_api_key=API_KEY, view_high="lots")  # type: ignore[call-arg]
    assert "SECRET" not in str(bad.value)
