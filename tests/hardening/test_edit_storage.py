"""An edit is stored the way the message was: through the real `eva run` (real discord.py on the
Discord fake, its own embedded PostgreSQL), a message whose file name holds a NUL and whose
embed title holds a lone surrogate is logged, then edited; the edit is stored (the names
sanitised by the rule the append uses), and neither the bot's log nor PostgreSQL's server log
(DATA_DIR/pg/log) quotes the names. A statement that does fail, with words in its parameter,
leaves its error in the server log and not its parameter."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from memory.storage.models import Message
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_world import UploadedFile
from tests.hardening.support import leaked
from tests.worlds.eva_process import (
    EmbeddedFolder,
    embedded_database,
    endpoints,
    eventually,
    logged_message,
    start_eva,
)

FILE_WORD = "quinceplanfile"  # in the attachment's name, beside a NUL
EMBED_WORD = "marzipanguide"  # in the embed's title, beside a lone surrogate
STATEMENT_WORD = "tamarindparam"  # in the parameter of a statement that fails
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"


async def test_an_edit_with_unstorable_names_is_stored_and_no_log_quotes_them(
    fakes: tuple[FakeDiscord, FakeAnthropic], workdir: Path, embedded_folder: EmbeddedFolder
) -> None:
    discord_fake, anthropic_fake = fakes
    ids = discord_fake.ids
    environment = {**endpoints(discord_fake, anthropic_fake, embedded_folder.data_dir), "LOG_LEVEL": "DEBUG"}
    eva = await start_eva(workdir, environment)
    database, sessions = embedded_database(embedded_folder.pgdata)
    try:
        await eva.wait_for("bot.ready")
        posted = discord_fake.chat.post_user_message(
            ids.general,
            ids.alice,
            "the plan for saturday",
            attachments=[UploadedFile(f"{FILE_WORD}\x00map.png", b"\x89PNG")],
            embeds=[{"type": "rich", "title": f"{EMBED_WORD} \ud83d guide"}],
        )
        snowflake = int(posted["id"])
        first = await eventually(lambda: logged_message(sessions, snowflake))
        names = [f"file:{FILE_WORD}{REPLACEMENT}map.png", f"embed:{EMBED_WORD} {REPLACEMENT} guide"]
        assert first.attachments == names

        discord_fake.chat.edit_user_message(snowflake, "the plan for sunday")

        async def edited() -> Message | None:
            row = await logged_message(sessions, snowflake)
            return row if row is not None and row.edited_at is not None else None

        row = await eventually(edited)
        assert row.text == (
            f"the plan for sunday [file: {FILE_WORD}{REPLACEMENT}map.png] "
            f"[embed: {EMBED_WORD} {REPLACEMENT} guide]"
        )
        assert row.attachments == names

        # The server's own rule, whatever fails: a JSON parameter PostgreSQL cannot take.
        async with database.connect() as conn:
            try:
                await conn.execute(text("SELECT CAST(:v AS jsonb)"), {"v": f'["{STATEMENT_WORD} \\u0000"]'})
            except DBAPIError:
                pass
            else:
                raise AssertionError("PostgreSQL took a NUL in jsonb")
        await database.dispose()
        assert await eva.terminate() == 0
    finally:
        await database.dispose()
        eva.kill()
    words = [FILE_WORD, EMBED_WORD, STATEMENT_WORD]
    assert not leaked("\n".join(eva.raw), words)
    assert not any('"ingest.write_failed"' in line for line in eva.raw)
    server_log = (embedded_folder.pgdata / "log").read_text(errors="replace")
    assert "unsupported Unicode escape sequence" in server_log  # the failure is logged...
    assert not leaked(server_log, words)  # ...and what failed is not
