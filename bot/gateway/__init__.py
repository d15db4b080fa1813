"""What happens to a Discord event: the ingest cog, its queues and write path, backfill, reconcile,
chats and mentions.
"""
