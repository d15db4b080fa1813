"""The engine's erasure half: messages, people, chats and guilds leaving the memory, the purge
of their old row versions, and opt-outs; a base of MemoryEngine, never used alone
(docs/design.md, erasure)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from memory.clock import Clock
from memory.config import MemoryConfig
from memory.policy import rate_marks, settings_audit
from memory.privacy import erase, erase_everywhere
from memory.privacy.bot_words import redact_bot_messages
from memory.privacy.erase import ErasureReport
from memory.privacy.mention_erasure import person_names, scrub_mentions
from memory.storage import dashboard_links
from memory.storage.models import Chat, GuildSettings, Message, OptOut
from memory.storage.people_cards import drop_cards_about

DM_SCOPE = 0  # opt-outs and erasure of direct messages use guild id 0


class EngineErasure:
    """Erasure and opt-outs, each method one unit of work; a base of MemoryEngine."""

    sessions: async_sessionmaker[AsyncSession]
    config: MemoryConfig
    clock: Clock
    # Set by every erasure and edit: the old row versions still hold the words in the table
    # files until VACUUM (see :meth:`purge`; the bot's scheduler runs it).
    purge_due: bool

    async def erase_messages(self, chat_id: int, snowflakes: Iterable[int]) -> ErasureReport:
        """Erase these Discord messages of the chat; the lines built from them are rebuilt without them."""
        async with self.sessions() as s, s.begin():
            report = await erase.erase_snowflakes(s, chat_id, snowflakes, self.clock.now())
        self.purge_due = True
        return report

    async def erase_author(
        self,
        guild_id: int | None,
        author_id: int,
        names: Iterable[str] = (),
        *,
        moment: Callable[[], int | None] | None = None,
    ) -> ErasureReport:
        """Everything one person wrote in a guild (``guild_id`` None or 0: their DMs with the
        bot, both sides, since a DM memory is about that person alone), the bot's replies to
        it, and the person's name in what others and the bot wrote there. ``names``: what the
        caller knows them by (Discord's display name, username) besides the names the log shows.
        ``moment``: the erasure's time as a Discord snowflake, asked for at the end of the
        transaction; no later backfill of the guild's chats starts below it
        (memory.storage.log.backfill_start)."""
        async with self.sessions() as s, s.begin():
            report = ErasureReport()
            if guild_id in (None, DM_SCOPE):
                theirs = await self._dm_chats_of(s, author_id)
                dms = (await s.scalars(select(Chat.id).where(Chat.kind == "dm"))).all()
                others = [chat for chat in dms if chat not in theirs]
                known = await person_names(s, [*theirs, *others], author_id) | set(names)
                # The whole DM chat goes, not just its messages: its name holds their username.
                report = await erase.delete_chats(s, theirs)
                # Their name in other people's DMs with the bot (the DM scope of opt-outs).
                report.mentions, lines = await scrub_mentions(s, others, author_id)
                report.names, more = await redact_bot_messages(s, others, known)
                report.nodes += lines + more
                await drop_cards_about(s, others, author_id, known)
            else:
                chat_ids = (await s.scalars(select(Chat.id).where(Chat.guild_id == guild_id))).all()
                report = await erase.erase_author(s, chat_ids, author_id, self.clock.now(), names)
                await settings_audit.forget_user(s, author_id, guild_id)
                await dashboard_links.forget_user(s, author_id)
                floor = moment() if moment is not None else None
                if floor is not None:
                    await erase.set_backfill_floor(s, chat_ids, floor)
            await rate_marks.forget_person(s, author_id)
        self.purge_due = True
        return report

    async def _dm_chats_of(self, s: AsyncSession, user_id: int) -> list[int]:
        # By the chat's recipient: their own messages may all be deleted while the bot's
        # replies quoting them remain. By authored messages too, for a DM whose recipient
        # was never known (its first sight had no recipient in discord.py's cache).
        rows = await s.scalars(
            select(Chat.id)
            .where(Chat.kind == "dm")
            .where(
                (Chat.recipient_id == user_id)
                | Chat.id.in_(select(Message.chat_id).where(Message.author_id == user_id))
            )
        )
        return list(rows.all())

    async def erase_author_everywhere(self, author_id: int, names: Iterable[str] = ()) -> ErasureReport:
        """Everything one person wrote in every chat: guilds, imports, and their DM chats whole."""
        async with self.sessions() as s, s.begin():
            dms = await self._dm_chats_of(s, author_id)
            report = await erase_everywhere.erase_person_everywhere(
                s, author_id, self.clock.now(), dms, names
            )
            await settings_audit.forget_user(s, author_id)
            await dashboard_links.forget_user(s, author_id)
            await rate_marks.forget_person(s, author_id)
        self.purge_due = True
        return report

    async def authored_by_chat(self, author_id: int, scope: int | None) -> list[tuple[str, int]]:
        """(chat name, messages) for each chat where ``author_id`` wrote, within what an erasure
        of them reaches: one guild, their DMs (``scope`` 0), or every chat (``scope`` None).
        Shown before `eva forget` erases them; it changes nothing."""
        query = (
            select(Chat.name, func.count())
            .join(Message, Message.chat_id == Chat.id)
            .where(Message.author_id == author_id, Message.erased_at.is_(None))
            .group_by(Chat.id, Chat.name)
            .order_by(Chat.name)
        )
        if scope == DM_SCOPE:
            query = query.where(Chat.kind == "dm")
        elif scope is not None:
            query = query.where(Chat.guild_id == scope)
        async with self.sessions() as s:
            return [(name, count) for name, count in (await s.execute(query)).all()]

    async def chats_known_by_name(self, guild_id: int | None = None) -> list[str]:
        """Names of chats whose authors are known only by name, which an erasure by id cannot reach."""
        async with self.sessions() as s:
            return await erase_everywhere.chats_known_by_name(s, guild_id)

    async def delete_chat(self, chat_id: int) -> ErasureReport:
        """The chat and its whole memory, its name included (an import, a DM)."""
        async with self.sessions() as s, s.begin():
            report = await erase.delete_chats(s, [chat_id])
        self.purge_due = True
        return report

    async def wipe_chat(
        self, chat_id: int, *, moment: Callable[[], int | None] | None = None
    ) -> ErasureReport:
        """The chat's whole memory; ``moment``: the wipe's time as a Discord snowflake, asked for
        at the end of the transaction: no message older than it is logged again."""
        async with self.sessions() as s, s.begin():
            report = await erase.wipe_chat(s, chat_id, moment)
        self.purge_due = True
        return report

    async def forget_discord_chat(self, discord_id: int) -> ErasureReport:
        """A channel or thread was deleted: its memory (and its threads') goes too."""
        async with self.sessions() as s, s.begin():
            ids = (
                await s.scalars(
                    select(Chat.id).where(
                        (Chat.discord_id == discord_id)
                        | (Chat.parent_id == discord_id)
                        | (Chat.source_channel_id == discord_id)  # its imports are copies of it
                    )
                )
            ).all()
            report = await erase.delete_chats(s, ids)
        self.purge_due = True
        return report

    async def forget_guild(self, guild_id: int) -> ErasureReport:
        """Everything of a guild the bot left: its chats, their memory and its settings (opt-outs stay)."""
        async with self.sessions() as s, s.begin():
            ids = (await s.scalars(select(Chat.id).where(Chat.guild_id == guild_id))).all()
            # Opt-outs stay (they hold only ids): after a re-invite the person is still not logged.
            report = await erase.delete_chats(s, ids)
            await s.execute(delete(GuildSettings).where(GuildSettings.guild_id == guild_id))
            await settings_audit.forget_guild(s, guild_id)
        self.purge_due = True
        return report

    async def purge(self) -> None:
        """VACUUM the tables erasures and edits touch, so the old words leave the table files
        now rather than at autovacuum's pace (memory.privacy.erase.purge_dead_rows)."""
        self.purge_due = False  # cleared first: an erasure during the VACUUM asks for another
        try:
            await erase.purge_dead_rows(self.sessions.kw["bind"])
        except BaseException:
            self.purge_due = True
            raise

    # --- opt-outs
    async def opt_out(self, guild_id: int | None, user_id: int) -> None:
        """Stop logging a person in a guild (``guild_id`` None: in DMs). Their card and every
        card naming them go at once (the cards are built again without them)."""
        async with self.sessions() as s, s.begin():
            scope = Chat.guild_id == guild_id if guild_id not in (None, DM_SCOPE) else Chat.kind == "dm"
            chats = list((await s.scalars(select(Chat.id).where(scope))).all())
            await drop_cards_about(s, chats, user_id, await person_names(s, chats, user_id))
            await s.execute(
                insert(OptOut).values(guild_id=guild_id or DM_SCOPE, user_id=user_id).on_conflict_do_nothing()
            )

    async def opt_in(self, guild_id: int | None, user_id: int) -> bool:
        """Log a person again; False when they had not opted out."""
        async with self.sessions() as s, s.begin():
            gone = await s.execute(
                delete(OptOut)
                .where(OptOut.guild_id == (guild_id or DM_SCOPE), OptOut.user_id == user_id)
                .returning(OptOut.user_id)
            )
            return bool(gone.all())

    async def opted_out(self, guild_id: int | None) -> set[int]:
        """The people not logged in a guild (``guild_id`` None: in DMs)."""
        async with self.sessions() as s:
            rows = await s.scalars(select(OptOut.user_id).where(OptOut.guild_id == (guild_id or DM_SCOPE)))
            return set(rows.all())
