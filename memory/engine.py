"""The memory engine's public API: what `bot/`, the CLI and the benchmarks call.

Each method is one unit of work with its own session and transaction. Nothing here knows
Discord: chats are keyed by plain ids, messages arrive as :class:`NewMessage`. Database failures
leave as :mod:`memory.errors` (DatabaseUnavailable, DuplicateEntry, StorageError), never as
SQLAlchemy's. The ledger, statistics and reconcile methods live in memory/engine_books.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.clock import Clock, WallClock
from memory.compaction.compactor import Compactor, PassReport
from memory.compaction.summarizer import Summarizer
from memory.config import MemoryConfig
from memory.engine_books import EngineBooks
from memory.engine_dashboard import EngineDashboard
from memory.engine_erasure import DM_SCOPE, EngineErasure
from memory.errors import ChatNotEmpty
from memory.imports.write import ImportJob, ImportResult, write_import
from memory.policy import rate_marks
from memory.policy.guild_settings import GuildSettingsStore
from memory.pricing import PriceTable
from memory.privacy import erase
from memory.reading import export, reads
from memory.reading.export import PersonExport
from memory.reading.view import PromptView, people_lines, prompt_view
from memory.storage import log
from memory.storage.chats import ensure_chat, find_chat, get_chat, matching_chats
from memory.storage.database import translates_storage_errors
from memory.storage.log import ChatKey, NewMessage
from memory.storage.models import Chat, MemoryRow, Message, OptOut
from memory.text import frame_tags
from memory.text.mentions import MentionNames
from memory.tree.node import address


@dataclass(frozen=True, slots=True)
class ChatInfo:
    id: int
    discord_id: int | None
    guild_id: int | None
    kind: str
    name: str
    paused: bool
    recipient_id: int | None = None  # a DM chat's person


@translates_storage_errors
class MemoryEngine(EngineBooks, EngineErasure, EngineDashboard):
    """The memory as the bot, the CLI and the benchmarks use it: chats, the log, erasure,
    opt-outs, what a prompt reads and compaction, each method one unit of work (the ledger,
    statistics and reconcile cursors come from :class:`EngineBooks`, erasure and opt-outs from
    :class:`EngineErasure`)."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        config: MemoryConfig,
        *,
        compactor: Compactor | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.sessions, self.config = sessions, config
        frame_tags.prepare()  # once per process, before the first message needs it
        self.compactor = compactor
        self.clock = clock or WallClock()
        # One per process: the reply gate, the settings cog and `eva stats` share it.
        self.guild_settings = GuildSettingsStore(sessions, config.timezone)
        # Set by every erasure and edit: the old row versions still hold the words in the
        # table files until VACUUM (see :meth:`purge`; the bot's scheduler runs it).
        self.purge_due = False

    # --- a person's own data, and limits in time
    async def export_person(
        self, user_id: int, guild_id: int | None, *, everywhere: bool = False
    ) -> PersonExport:
        """Everything kept that ``user_id`` wrote: in a guild, in their DMs (``guild_id`` None
        or 0), or ``everywhere`` (the host's export); memory/reading/export.py."""
        async with self.sessions() as s:
            scope = "everywhere" if everywhere else "dms" if guild_id in (None, DM_SCOPE) else "server"
            dms = await self._dm_chats_of(s, user_id) if scope == "dms" else []
            where = export.chats_in_scope(scope, guild_id, dms)
            return await export.export_person(s, user_id, scope, where, self.clock.now())

    async def mark_wait(self, kind: str, scope: int, every: timedelta) -> float:
        """Seconds until ``kind`` may happen again in ``scope`` (memory/policy/rate_marks.py)."""
        async with self.sessions() as s:
            return await rate_marks.wait_of(s, kind, scope, every, self.clock.now())

    async def claim_mark(self, kind: str, scope: int, every: timedelta) -> bool:
        """Mark ``kind`` as happening now in ``scope``; False when it happened within ``every``."""
        async with self.sessions() as s, s.begin():
            return await rate_marks.claim(s, kind, scope, every, self.clock.now())

    # --- chats
    async def ensure_chat(self, key: ChatKey) -> int:
        """The chat's id, created with its empty memory row on first sight."""
        async with self.sessions() as s, s.begin():
            return await ensure_chat(s, key, self.config.timezone)

    async def chat_by_discord_id(self, discord_id: int) -> ChatInfo | None:
        """The chat logged for a Discord channel, thread or DM; None when there is none."""
        async with self.sessions() as s:
            chat = await s.scalar(select(Chat).where(Chat.discord_id == discord_id))
            return _info(chat) if chat else None

    async def chat(self, chat_id: int) -> ChatInfo | None:
        """The chat with our id ``chat_id``; None when there is none."""
        async with self.sessions() as s:
            chat = await s.get(Chat, chat_id)
            return _info(chat) if chat else None

    async def find_chat(self, ref: str) -> ChatInfo:
        """The one chat ``ref`` names (name, Discord id or our id); ChatNotFound when none or several."""
        async with self.sessions() as s:
            return _info(await find_chat(s, ref))

    async def find_chats(self, ref: str) -> list[ChatInfo]:
        """Every chat ``ref`` names (a name two chats share gives both)."""
        async with self.sessions() as s:
            return [_info(chat) for chat in await matching_chats(s, ref)]

    async def list_chats(self) -> list[ChatInfo]:
        """Every chat, in id order."""
        async with self.sessions() as s:
            return [_info(c) for c in (await s.scalars(select(Chat).order_by(Chat.id))).all()]

    async def logged_discord_chats(self) -> list[ChatInfo]:
        """Chats with a Discord channel, for backfill at start and on resume."""
        async with self.sessions() as s:
            rows = await s.scalars(select(Chat).where(Chat.discord_id.is_not(None)).order_by(Chat.id))
            return [_info(c) for c in rows.all()]

    async def import_export(self, name: str, job: ImportJob, progress: Callable[[int], None]) -> ImportResult:
        """A parsed export into a new (or empty) imported chat named ``name``, in one
        transaction: a bad record (ImportFormatError) leaves nothing behind."""
        async with self.sessions() as s, s.begin():
            chat_id = await ensure_chat(s, ChatKey(kind="imported", name=name), self.config.timezone)
            existing = await s.scalar(select(Chat.next_index).where(Chat.id == chat_id))
            if existing:
                raise ChatNotEmpty(
                    f"chat {name!r} already has {existing} messages; import only into an empty chat"
                )
            return await write_import(s, chat_id, job, progress)

    async def set_paused(self, chat_id: int, paused: bool) -> None:
        """Stop (or resume) logging the chat's messages."""
        async with self.sessions() as s, s.begin():
            chat = await get_chat(s, chat_id)
            chat.logging_paused = paused

    # --- the log
    async def append(self, chat_id: int, message: NewMessage) -> int | None:
        """Log one message; its index, or None when its snowflake is already logged."""
        async with self.sessions() as s, s.begin():
            return await log.append(s, chat_id, message)

    async def append_replies(
        self, chat_id: int, items: Sequence[tuple[NewMessage, int | None]]
    ) -> list[int | None]:
        """Messages as they arrived, each with the snowflake it replies to, in one transaction
        (the bot's ingest writes what a channel's queue holds this way; see log.append_replies)."""
        async with self.sessions() as s, s.begin():
            return await log.append_replies(s, chat_id, items)

    async def append_from_discord(
        self, discord_id: int, items: Sequence[tuple[NewMessage, int | None]], about: Sequence[int | None]
    ) -> tuple[ChatInfo, list[int | None]] | None:
        """One batch of a Discord channel in one transaction: its chat (None: it has none yet,
        nothing written), then, unless the chat is paused, every item appended (with the
        snowflake it replies to, as :meth:`append_replies`) except those about a person
        (``about``, one per item; None: nobody) who opted out where the chat is, read in the
        same transaction. Returns the chat and each item's index (None: refused or a duplicate)."""
        if len(about) != len(items):  # one person per item, or the opt-outs would slip
            raise ValueError(f"{len(items)} items but {len(about)} persons they are about")
        async with self.sessions() as s, s.begin():
            chat = await s.scalar(select(Chat).where(Chat.discord_id == discord_id))
            if chat is None:
                return None
            indexes: list[int | None] = [None] * len(items)
            if chat.logging_paused:
                return _info(chat), indexes
            scope = chat.guild_id or DM_SCOPE
            opted = set((await s.scalars(select(OptOut.user_id).where(OptOut.guild_id == scope))).all())
            kept = [k for k, person in enumerate(about) if person is None or person not in opted]
            written = await log.append_replies(s, chat.id, [items[k] for k in kept])
            for k, index in zip(kept, written, strict=True):
                indexes[k] = index
            return _info(chat), indexes

    async def append_many(self, chat_id: int, messages: Sequence[NewMessage]) -> list[int | None]:
        """Log a batch in order (imports, backfill); each index, None for one already logged."""
        async with self.sessions() as s, s.begin():
            return await log.append_many(s, chat_id, messages)

    async def last_snowflake(self, chat_id: int) -> int | None:
        """The newest logged Discord message of the chat; None when none is logged."""
        async with self.sessions() as s:
            return await log.last_snowflake(s, chat_id)

    async def backfill_start(self, chat_id: int) -> int | None:
        """The snowflake a backfill fetches after; never below an erasure's moment."""
        async with self.sessions() as s:
            return await log.backfill_start(s, chat_id)

    async def index_of_snowflake(self, chat_id: int, snowflake: int) -> int | None:
        """The log index of a Discord message; None when it is not logged."""
        async with self.sessions() as s:
            return await log.index_of_snowflake(s, chat_id, snowflake)

    async def slot_of_snowflake(self, chat_id: int, snowflake: int) -> tuple[int, bool] | None:
        """The log index of a Discord message and whether its slot is erased; None: not logged."""
        async with self.sessions() as s:
            row = (
                await s.execute(
                    select(Message.idx, Message.erased_at.is_not(None)).where(
                        Message.chat_id == chat_id, Message.snowflake == snowflake
                    )
                )
            ).one_or_none()
            return (int(row[0]), bool(row[1])) if row is not None else None

    async def edit(
        self,
        chat_id: int,
        snowflake: int,
        content: str,
        attachments: tuple[str, ...] = (),
        names: MentionNames | None = None,
    ) -> int | None:
        """A new version of a logged message: ``content`` as Discord shows it (raw ``<@id>``
        mentions), ``names`` what its ids are called (memory/text/mentions.py); rendered under the
        row's lock, so a person an erasure took out of the message is never named again."""
        async with self.sessions() as s, s.begin():
            deleted = await erase.edit_message(
                s, chat_id, snowflake, content, attachments, self.clock.now(), names
            )
        self.purge_due = True  # after the commit: a VACUUM before it would find nothing to remove
        return deleted

    # --- erasure
    # --- reads
    async def prompt_view(self, chat_id: int) -> PromptView:
        """What a reply prompt shows of the chat: the memory row and the raw tail."""
        async with self.sessions() as s:
            return await prompt_view(s, self.config, chat_id)

    async def people_cards(self, chat_id: int) -> list[str]:
        """Every people card of the chat as a ``{name}: {card}`` line, most active person first
        (the prompt shows those that fit PEOPLE_BYTES)."""
        async with self.sessions() as s:
            return await people_lines(s, chat_id, budget=1 << 30)

    async def zoom(self, chat_id: int, first: int, count: int, page: int = 1) -> str:
        """The text under one line (``first``, ``count``): a message whole, or the two lines below."""
        async with self.sessions() as s:
            return await reads.zoom(s, chat_id, first, count, page)

    async def zoom_address(self, chat_id: int, address: str, page: int = 1) -> str:
        """The text under the line at ``address`` (``id+n``); BadRequest for no such line."""
        async with self.sessions() as s:
            chat = await get_chat(s, chat_id)
            first, count = reads.parse(address, chat.next_index)
            return await reads.zoom(s, chat_id, first, count, page)

    async def recall(
        self,
        chat_id: int,
        query: str,
        *,
        author: str | None = None,
        author_id: int | None = None,
        limit: int = 5,
        max_chars: int = 8000,
    ) -> str:
        """Logged messages matching ``query``, best first, each with its neighbours, in ``max_chars``."""
        async with self.sessions() as s:
            wanted = reads.RecallQuery(query, author, author_id, limit)
            return await reads.recall(s, chat_id, wanted, max_chars=max_chars)

    async def row_addresses(self, chat_id: int) -> list[str]:
        """The addresses (``id+n``) of the memory row's lines, oldest first."""
        async with self.sessions() as s:
            state = await s.get(MemoryRow, chat_id)
            return [address((int(a), int(b))) for a, b in (state.shown if state else [])]

    async def message_count(self, chat_id: int) -> int:
        """Messages logged in the chat (erased slots included); 0 for no such chat."""
        async with self.sessions() as s:
            return int(
                await s.scalar(select(func.coalesce(Chat.next_index, 0)).where(Chat.id == chat_id)) or 0
            )

    # --- compaction
    async def compact(
        self, chat_id: int, *, until_idle: bool = False, force_swap: bool = False
    ) -> PassReport:
        """Run the compactor on the chat (``until_idle``: until nothing is left); what it did."""
        if self.compactor is None:
            raise RuntimeError("this engine was built without a compactor")
        return await self.compactor.run(chat_id, until_idle=until_idle, force_swap=force_swap)


def _info(chat: Chat) -> ChatInfo:
    return ChatInfo(
        chat.id, chat.discord_id, chat.guild_id, chat.kind, chat.name, chat.logging_paused, chat.recipient_id
    )


def build(
    sessions: async_sessionmaker[AsyncSession],
    config: MemoryConfig,
    summarizer: Summarizer | None = None,
    *,
    clock: Clock | None = None,
    prices: PriceTable | None = None,
) -> MemoryEngine:
    """The engine and, given a summarizer, its compactor (``engine.compactor``), sharing one
    clock: the one wiring of the memory for the bot, the CLI, the benchmarks and the tests."""
    clock = clock or WallClock()
    compactor = None
    if summarizer is not None:
        compactor = Compactor(sessions, config, summarizer, clock, prices=prices)
    return MemoryEngine(sessions, config, compactor=compactor, clock=clock)
