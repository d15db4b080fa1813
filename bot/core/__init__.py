"""The Discord-free application code: the reply turn, its prompts, the tools' schemas and
execution, the cache-mark policy. The benchmarks run it as the bot does, so nothing here may
import discord (tests/structure/test_core_is_discord_free.py holds that)."""
