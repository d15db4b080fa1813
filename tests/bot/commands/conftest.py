"""The slash-command tests of this folder all run in the world of tests/worlds/commands_world.py:
its bot (ingest and the two command extensions), its settings, its seeded guild. Imported
here once, they override tests/bot/conftest.py's fixtures of the same names for this folder."""

from tests.worlds.commands_world import bot_settings, eva_extensions, world

__all__ = ["bot_settings", "eva_extensions", "world"]  # fixtures: pytest finds them by name here
