"""The ingest of this process, for the cogs that need it (reply, commands): the loaded ingest
cog (bot/gateway/cog.py) owns it, so nothing writes it into the services.

Found by the cog's name, not its class: discord.py executes an extension module afresh when it
loads it, so a class imported from bot.gateway.cog before that is another class object.
"""

from __future__ import annotations

from discord.ext import commands

from bot.gateway.ingest import Ingest

INGEST_COG = "IngestCog"  # bot/gateway/cog.py


def ingest_of(bot: commands.Bot) -> Ingest | None:
    """None while the ingest cog is not loaded (a bot built with other extensions only, or
    after its teardown): nothing else writes the log in this process."""
    ingest = getattr(bot.get_cog(INGEST_COG), "ingest", None)
    return ingest if isinstance(ingest, Ingest) else None
