"""A confirmation button pressed twice: the second press is answered privately, never left to
fail.

The second press comes from a client that still shows the buttons (a double click, or a slow
connection while the erasure runs): SimCord runs one operation at a time and its ``click`` reads
the message as it is now, so the stale press is sent with the button's custom id read before
the first press, through SimCord's own component dispatch."""

from __future__ import annotations

from typing import Any

import simcord
from simcord.actors import _component_interaction, _visible_message
from simcord.components import walk_components
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.commands.ui import ALREADY_DONE
from tests.worlds.commands_world import World, authored, reply_text


def button_press(actor: Any, message: Any, label: str) -> dict[str, Any]:
    """What a press of ``label`` on ``message`` as shown now sends to Discord."""
    stored = _visible_message(actor, message)
    (button,) = [c for c in walk_components(stored.components) if c.get("label") == label]
    return {"custom_id": button["custom_id"], "component_type": 2}


async def press_again(actor: Any, message: Any, press: dict[str, Any]) -> simcord.InteractionResult:
    return await _component_interaction(actor, _visible_message(actor, message), press)


async def test_a_second_press_of_forget_me_is_told_it_was_already_answered(
    world: World, sessions: async_sessionmaker[AsyncSession]
) -> None:
    result = await world.alice.slash(world.general, "forget-me")
    assert result.response is not None
    press = button_press(world.alice, result.response, "Erase my messages")
    await world.alice.click(result.response, label="Erase my messages")
    assert reply_text(result).startswith("Erased 33 messages")
    again = await press_again(world.alice, result.response, press)
    assert again.response is not None and again.response.ephemeral
    assert again.response.content == ALREADY_DONE
    assert await authored(sessions, world.alice.id) == 0


async def test_a_second_press_of_the_admin_wipe_is_told_it_was_already_answered(world: World) -> None:
    result = await world.admin.slash(world.general, "memory wipe")
    assert result.response is not None
    press = button_press(world.admin, result.response, "Wipe this memory")
    await world.admin.click(result.response, label="Wipe this memory")
    again = await press_again(world.admin, result.response, press)
    assert again.response is not None and again.response.ephemeral
    assert again.response.content == ALREADY_DONE
