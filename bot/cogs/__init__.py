"""Discord extensions (cogs), loaded by the bot in `EvaBot.setup_hook`."""
