"""How an export comes in: the JSONL and DiscordChatExporter readers, their field checks, the
author map and the write.
"""
