"""Forget-me, one implementation for `/forget-me` and the reply model's `forget_me` tool.

Only ever for the person who asked, and only after they pressed the confirmation button
(the callers own that step). In a server it erases everything that person wrote in the
server's channels and threads; in DMs (guild None) their direct-message memory. With
``opt_out`` their later messages are not logged at all until `/remember-me`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

import structlog

from bot.gateway.erasure_order import erasing, narrow_after_opt_in
from bot.gateway.ingest import Ingest
from bot.services import Services

log = structlog.get_logger(__name__)


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def names_of(user: Any) -> tuple[str, ...]:
    """What Discord shows for a person now (their name in the server, their global display
    name, their username): the bot's words may name them by any of these."""
    found = [getattr(user, key, None) for key in ("display_name", "global_name", "name")]
    return tuple(dict.fromkeys(name for name in found if isinstance(name, str) and name))


async def forget_person(
    services: Services,
    ingest: Ingest | None,
    guild_id: int | None,
    user_id: int,
    opt_out: bool,
    names: Iterable[str] = (),
    *,
    asked_at: int | None = None,
) -> str:
    """Erase ``user_id``'s messages and the bot's replies to them, and take their name out of
    what others and the bot wrote (``names``: what Discord calls them now, :func:`names_of`);
    opt them out if asked. Returns the report to show them. ``ingest``: the ingest running in
    this process (bot/gateway/cog.py, ``ingest_of``), None when there is none.
    ``asked_at``: the snowflake of their button press (Discord's clock for the erasure's moment).
    Ordered against ingest by bot/gateway/erasure_order.py: nothing of theirs written before the
    erasure is logged after it, not even after a restart."""
    if opt_out:
        # Opt out first: a message that arrives while the erasure runs is then either
        # erased with the rest or never logged.
        await services.engine.opt_out(guild_id, user_id)
        if ingest is not None:
            await ingest.refresh_opt_outs(guild_id)
    async with erasing(ingest, guild_id, user_id, asked_at) as moment:
        report = await services.engine.erase_author(guild_id, user_id, tuple(names), moment=moment)
    # Counts only (messages, nodes, chats, mentions): never the erased words.
    log.info("forget.done", guild_id=guild_id, user_id=user_id, opt_out=opt_out, **asdict(report))
    if report.messages == 0:
        text = "I had no messages of yours to erase."
    elif guild_id is None:
        text = f"Erased {plural(report.messages, 'message')}: our direct-message memory is gone."
    else:
        lines = plural(report.nodes, "line")
        verb = "is" if report.nodes == 1 else "are"
        erased = plural(report.messages, "message")
        if report.replies:
            erased += f" and {report.replies:,} of my messages answering or quoting them"
        text = f"Erased {erased}; {lines} {verb} being rebuilt without them."
    named = report.mentions + report.names
    if named:  # a person only ever mentioned must not hear that nothing happened
        text += f" Your name is gone from {plural(named, 'message')} of others that named you."
    if opt_out:
        where = "in our direct messages" if guild_id is None else "in this server"
        text += f" I will not remember your messages {where} from now on; /remember-me undoes this."
    return text


async def remember_person(
    services: Services,
    ingest: Ingest | None,
    guild_id: int | None,
    user_id: int,
    *,
    asked_at: int | None = None,
) -> str:
    """Lift an opt-out; returns the sentence to show. ``asked_at``: the command's snowflake,
    after which what they write is surely written after any erasure they asked for."""
    lifted = await services.engine.opt_in(guild_id, user_id)
    if ingest is not None:
        await ingest.refresh_opt_outs(guild_id)
    narrow_after_opt_in(ingest, guild_id, user_id, asked_at)
    log.info("forget.opt_in", guild_id=guild_id, user_id=user_id, lifted=lifted)
    where = "in our direct messages" if guild_id is None else "in this server"
    if not lifted:
        return f"You were not opted out {where}; I remember your messages as usual."
    return f"Done: I will remember your messages {where} again from now on."
