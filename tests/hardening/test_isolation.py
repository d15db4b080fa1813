"""Isolation: one channel, one thread, one DM and one other guild never see each
other's memory. A word only one chat ever contains is planted in each (in its raw tail and in
its summary lines); every read path is then run in every chat it exists for: the reply turn's
request, its zoom and recall tools, /zoom, /recall, /memory view, /memory node, /memory status,
and `eva view`, `eva zoom`, `eva recall`. Each output shows its own chat's word and no other."""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Awaitable, Callable
from typing import Any

import simcord
from simcord.builders import ChannelHandle

from bot.cli.memory_commands import cmd_recall, cmd_view, cmd_zoom
from bot.settings import Settings
from tests.fakes.anthropic_behaviours import ScriptedReply, tool_use_block
from tests.worlds.hardening_world import World

WORD = {
    "general": "aardvarkword",
    "other": "bisonword",
    "thread": "camelword",
    "dm": "dingoword",
    "far": "emuword",
}
GUILD_CHATS = ("general", "other", "thread", "far")
Output = Callable[[World, str, Settings], Awaitable[str]]


def channel(w: World, where: str) -> ChannelHandle:
    return {"general": w.general, "other": w.other, "thread": w.thread, "far": w.far, "dm": w.dm}[where]


def people(w: World, where: str) -> list[Any]:
    return {"far": [w.carol, w.far_alice], "dm": [w.alice]}.get(where, [w.alice, w.bob])


def admin(w: World, where: str) -> Any:
    return w.carol if where == "far" else w.admin


async def say(w: World, where: str, who: Any, text: str) -> None:
    if where == "dm":
        await w.alice.user.send_dm(text)
    else:
        await who.send(channel(w, where), text)


async def plant(w: World) -> None:
    for k in range(8):
        for where, word in WORD.items():
            speakers = people(w, where)
            await say(
                w,
                where,
                speakers[k % len(speakers)],
                f"{word} note {k}: the plans for the lake trip on sunday",
            )
    await w.settle()
    for where, word in WORD.items():
        view = await w.engine.prompt_view(await w.chat_of(channel(w, where)))
        assert view.row_lines and word in "".join(view.row_lines), f"{where}'s word is in its summary lines"


def others(where: str) -> list[str]:
    return [word for place, word in WORD.items() if place != where]


def shown(result: simcord.InteractionResult) -> str:
    assert result.response is not None and result.response.ephemeral
    message = result.followups[-1] if result.followups else result.response
    return message.content


async def slash(w: World, where: str, actor: Any, name: str, **options: Any) -> str:
    if where == "dm":
        return shown(await w.alice.user.slash(name, **options))
    return shown(await actor.slash(channel(w, where), name, **options))


# --- the reply turn and its tools -----------------------------------------------------------


async def turn(w: World, where: str) -> tuple[str, dict[str, str], str]:
    """One turn in ``where`` that recalls every planted word and zooms into message #0: the
    first request's memory and tail, each recall's result, and the zoom's."""
    uses = [
        tool_use_block("recall", {"query": word}, f"toolu_recall_{place}") for place, word in WORD.items()
    ]
    uses.append(tool_use_block("zoom", {"id": 0, "n": 1}, "toolu_zoom"))
    w.fake.script.push(ScriptedReply(uses), match="reply")
    w.fake.script.push_text("Done looking.", match="reply")
    before = len(w.fake.requests("reply"))
    await say(w, where, people(w, where)[0], f"{w.me.mention} what do you remember?")
    first, second = w.fake.requests("reply")[before:]
    memory = "".join(b["text"] for b in first.body["messages"][0]["content"])
    results = {
        b["tool_use_id"]: b["content"]
        for b in second.body["messages"][-1]["content"]
        if b["type"] == "tool_result"
    }
    recalls = {place: results[f"toolu_recall_{place}"] for place in WORD}
    return memory, recalls, results["toolu_zoom"]


async def test_reply_turns_and_their_tools_read_only_their_own_chat(world: World) -> None:
    w = world
    await plant(w)
    for where, word in WORD.items():
        memory, recalls, zoomed = await turn(w, where)
        assert word in memory and not [o for o in others(where) if o in memory], (where, "request")
        assert word in zoomed and not [o for o in others(where) if o in zoomed], (where, "zoom")
        for place, result in recalls.items():
            if place == where:
                assert result.startswith("Hit 1: message #") and word in result, (where, "recall")
            else:
                assert result == f"No message matches {WORD[place]!r}.", (where, "recall", place)


# --- slash commands and the CLI -----------------------------------------------------------------


async def zoom_message(w: World, where: str, settings: Settings) -> str:
    return await slash(w, where, people(w, where)[0], "zoom", address="0+1")


async def zoom_row_line(w: World, where: str, settings: Settings) -> str:
    first = (await w.engine.row_addresses(await w.chat_of(channel(w, where))))[0]
    return await slash(w, where, people(w, where)[0], "zoom", address=first)


async def recall_own(w: World, where: str, settings: Settings) -> str:
    return await slash(w, where, people(w, where)[0], "recall", query=WORD[where])


async def memory_view(w: World, where: str, settings: Settings) -> str:
    result = await admin(w, where).slash(channel(w, where), "memory view")
    assert result.response is not None
    message = result.followups[-1] if result.followups else result.response
    (attachment,) = message.attachments
    return (await attachment.read()).decode()


async def memory_node(w: World, where: str, settings: Settings) -> str:
    return await slash(w, where, admin(w, where), "memory node", address="0+1")


async def cli(w: World, where: str, settings: Settings, command: Any, **args: Any) -> str:
    """The CLI command's handler, as `eva COMMAND --chat <channel id>` runs it."""
    chat = str(channel(w, where).id)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await command(argparse.Namespace(chat=chat, **args), settings)
    return out.getvalue()


async def eva_view(w: World, where: str, settings: Settings) -> str:
    return await cli(w, where, settings, cmd_view)


async def eva_zoom(w: World, where: str, settings: Settings) -> str:
    return await cli(w, where, settings, cmd_zoom, address="0+1", page=1)


async def eva_recall(w: World, where: str, settings: Settings) -> str:
    return await cli(w, where, settings, cmd_recall, words=[WORD[where]], author=None, limit=5)


READS: list[tuple[str, Output, tuple[str, ...]]] = [
    ("/zoom id+1", zoom_message, tuple(WORD)),
    ("/zoom a row line", zoom_row_line, tuple(WORD)),
    ("/recall", recall_own, tuple(WORD)),
    ("/memory view", memory_view, GUILD_CHATS),
    ("/memory node", memory_node, GUILD_CHATS),
    ("eva view", eva_view, tuple(WORD)),
    ("eva zoom", eva_zoom, tuple(WORD)),
    ("eva recall", eva_recall, tuple(WORD)),
]


async def test_commands_and_the_cli_read_only_the_chat_they_name(world: World, database_url: str) -> None:
    w = world
    await plant(w)
    settings = Settings(_env_file=None, database_url=database_url)  # type: ignore[call-arg]
    for label, read, places in READS:
        for where in places:
            text = await read(w, where, settings)
            assert WORD[where] in text, (label, where, text[:300])
            assert not [o for o in others(where) if o in text], (label, where)
    for where in GUILD_CHATS:
        status = await slash(w, where, admin(w, where), "memory status")
        assert status.startswith("**Memory of <#") and not [word for word in WORD.values() if word in status]
    for where in WORD:  # another chat's word is never found, not even as a fragment
        for other_place, other_word in WORD.items():
            if other_place != where:
                found = await slash(w, where, people(w, where)[0], "recall", query=other_word[:5])
                assert found == f"No message matches {other_word[:5]!r}.", (where, other_place)
    # An admin may name another channel of the same guild: that one's memory, not a mix.
    result = await w.admin.slash(w.general, "memory view", channel=w.other)
    message = result.followups[-1] if result.followups else result.response
    assert message is not None
    (attachment,) = message.attachments
    picked = (await attachment.read()).decode()
    assert WORD["other"] in picked and not [o for o in others("other") if o in picked]
    assert w.env.errors == []
