"""Names for ids, from the gateway's cache at the moment a page is drawn: the database keeps
ids only (the audit list, the settings' lists), so a renamed or erased person is never shown
under a stale name. An id the cache does not know is shown as the id."""

from __future__ import annotations

import discord


class Names:
    def __init__(self, client: discord.Client) -> None:
        self.client = client

    def guild(self, guild_id: int) -> str:
        guild = self.client.get_guild(guild_id)
        return guild.name if guild is not None else f"server {guild_id}"

    def member(self, guild_id: int, user_id: int | None) -> str:
        if user_id is None:
            return "the host (or a person since erased)"
        guild = self.client.get_guild(guild_id)
        member = guild.get_member(user_id) if guild is not None else None
        return member.display_name if member is not None else f"member {user_id}"

    def of(self, guild_id: int, kind: str, item: int) -> str:
        """A channel, role or member of the server's lists."""
        guild = self.client.get_guild(guild_id)
        if guild is None:
            return f"{kind} {item}"
        if kind == "channel":
            channel = guild.get_channel_or_thread(item)
            return f"#{channel.name}" if channel is not None else f"channel {item}"
        if kind == "role":
            role = guild.get_role(item)
            return f"@{role.name}" if role is not None else f"role {item}"
        return f"@{self.member(guild_id, item)}"
