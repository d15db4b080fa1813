"""README lists every slash command the bot serves, each with who may use it, and says
"Manage Server" exactly for the commands that require it."""

from __future__ import annotations

import re
from pathlib import Path

from discord import app_commands

from bot.cli.sync_commands import COMMAND_EXTENSIONS, command_bot

REPO = Path(__file__).resolve().parents[2]


async def served_commands() -> dict[str, bool]:
    """'/name' or '/group sub' -> whether it needs Manage Server, from the real command tree."""
    bot = command_bot()
    for extension in COMMAND_EXTENSIONS:
        await bot.load_extension(extension)
    served: dict[str, bool] = {}
    for command in bot.tree.get_commands():
        perms = getattr(command, "default_permissions", None)
        admin = perms is not None and perms.manage_guild
        if isinstance(command, app_commands.Group):
            for sub in command.commands:
                served[f"/{command.name} {sub.name}"] = admin
        else:
            served[f"/{command.name}"] = admin
    return served


async def test_readme_lists_every_slash_command_with_who_may_use_it() -> None:
    rows = {
        name: who
        for name, who in re.findall(
            r"^\| `(/[a-z-]+(?: [a-z-]+)?)` \| ([^|]+) \|", (REPO / "README.md").read_text(), re.M
        )
    }
    served = await served_commands()
    assert {"/zoom", "/recall", "/remember-me", "/forget-me", "/settings show", "/memory pause"} <= set(
        served
    )
    assert set(rows) == set(served)
    for name, admin in served.items():
        assert ("Manage Server" in rows[name]) == admin, name
