"""The dashboard tests of this folder run in tests/worlds/dashboard_world.py's world."""

from tests.worlds.dashboard_world import bot_settings, dash, dashboard_port, eva_extensions

__all__ = ["bot_settings", "dash", "dashboard_port", "eva_extensions"]  # fixtures, found by name
