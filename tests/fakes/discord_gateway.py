"""Gateway (websocket) side of the fake Discord.

Handshake as discord.py 2.7.1 drives it (gateway.py): we send op10 HELLO; the client heartbeats (op1,
answered with op11) and sends op2 IDENTIFY → op0 READY (s=1) then one GUILD_CREATE per guild of its
shard; or op6 RESUME → missed dispatches replayed, then op0 RESUMED. Frames are plain JSON text: the
client asks for zlib-stream compression but also accepts uncompressed TEXT frames.

Sessions outlive their socket so a dropped connection can RESUME and get the events it missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.discord_model import (
    INTENT_DIRECT_MESSAGES,
    INTENT_GUILD_MEMBERS,
    INTENT_GUILD_MESSAGES,
    INTENT_GUILDS,
    INTENT_MESSAGE_CONTENT,
    Json,
)
from tests.fakes.discord_world import FakeWorld

OP_DISPATCH, OP_HEARTBEAT, OP_IDENTIFY, OP_RESUME, OP_RECONNECT = 0, 1, 2, 6, 7
OP_REQUEST_MEMBERS, OP_INVALID_SESSION, OP_HELLO, OP_HEARTBEAT_ACK = 8, 9, 10, 11
# Discord's real interval is ~41 s; discord.py only needs *some* value (it heartbeats right after HELLO).
DEFAULT_HEARTBEAT_MS = 41250
REPLAY_BUFFER = 10_000  # dispatches kept per session for RESUME
CLOSE_AUTHENTICATION_FAILED = 4004
CLOSE_DISALLOWED_INTENTS = 4014  # a privileged intent the application has not enabled
# A close code discord.py treats as resumable (anything but 1000/4004/4010-4014 from its side).
CLOSE_RESUMABLE = 4000

MESSAGE_EVENTS = ("MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK")
GUILD_EVENTS = (
    "GUILD_CREATE",
    "GUILD_DELETE",
    "GUILD_ROLE_CREATE",
    "GUILD_ROLE_UPDATE",
    "CHANNEL_CREATE",
    "CHANNEL_DELETE",
    "THREAD_CREATE",
    "THREAD_DELETE",
)


@dataclass
class GatewaySession:
    session_id: str
    shard_id: int
    shard_count: int
    intents: int
    seq: int = 0
    sent: deque[Json] = field(default_factory=lambda: deque(maxlen=REPLAY_BUFFER))
    outbox: asyncio.Queue[Json | None] | None = None  # the live connection's queue, None when dropped

    def covers(self, guild_id: int | None) -> bool:
        """Guild events go to shard (guild_id >> 22) % shard_count; DMs go to shard 0."""
        if guild_id is None:
            return self.shard_id == 0
        return (guild_id >> 22) % self.shard_count == self.shard_id

    def wants(self, event: str, data: Json, guild_id: int | None, bot_id: int) -> bool:
        if event in MESSAGE_EVENTS:
            needed = INTENT_DIRECT_MESSAGES if guild_id is None else INTENT_GUILD_MESSAGES
            return bool(self.intents & needed)
        if event in ("GUILD_MEMBER_ADD", "GUILD_MEMBER_UPDATE"):
            # Updates about the bot's own member arrive without the privileged GUILD_MEMBERS intent.
            return bool(self.intents & INTENT_GUILD_MEMBERS) or int(data["user"]["id"]) == bot_id
        if event in GUILD_EVENTS:
            return bool(self.intents & INTENT_GUILDS)
        return True

    def push(self, event: str, data: Json) -> Json:
        self.seq += 1
        frame = {"op": OP_DISPATCH, "t": event, "s": self.seq, "d": data}
        self.sent.append(frame)
        if self.outbox is not None:
            self.outbox.put_nowait(frame)
        return frame


def strip_content(data: Json, bot_id: int) -> Json:
    """Without the MESSAGE_CONTENT intent Discord blanks content in guild messages that neither come
    from the bot nor mention it (Discord docs, 'Message Content Intent')."""
    if "guild_id" not in data or "author" not in data:
        return data
    if int(data["author"]["id"]) == bot_id or any(int(m["id"]) == bot_id for m in data.get("mentions", [])):
        return data
    return {**data, "content": "", "embeds": [], "attachments": [], "components": []}


class FakeGateway:
    def __init__(
        self,
        world: FakeWorld,
        *,
        token: str | None = None,
        shard_count: int = 1,
        heartbeat_ms: int = DEFAULT_HEARTBEAT_MS,
    ) -> None:
        self.world = world
        self.token = token
        self.shard_count = shard_count
        self.heartbeat_ms = heartbeat_ms
        self.url = ""  # set once the server knows its port
        self.sessions: dict[str, GatewaySession] = {}
        self.sockets: set[web.WebSocketResponse] = set()
        self._closed_by_server: set[web.WebSocketResponse] = set()
        self.received: list[Json] = []  # every client frame except heartbeats, for tests
        self.connections = 0
        self.down = False  # while True the gateway refuses connections (an outage on our side)
        world.dispatcher = self.dispatch

    # ----- outgoing ---------------------------------------------------------------------------

    def dispatch(self, event: str, data: Json, guild_id: int | None) -> None:
        for session in list(self.sessions.values()):
            if not session.covers(guild_id) or not session.wants(event, data, guild_id, self.world.bot.id):
                continue
            payload = data
            if event in ("MESSAGE_CREATE", "MESSAGE_UPDATE") and not session.intents & INTENT_MESSAGE_CONTENT:
                payload = strip_content(data, self.world.bot.id)
            session.push(event, payload)

    async def drop_connections(self, code: int = CLOSE_RESUMABLE) -> int:
        """Close every live socket as a network failure would; sessions stay resumable."""
        sockets = list(self.sockets)
        self._closed_by_server.update(sockets)
        for ws in sockets:
            await ws.close(code=code, message=b"fake gateway drop")
        return len(sockets)

    def request_reconnect(self) -> int:
        """op7 RECONNECT: the client closes and resumes on its own."""
        count = 0
        for session in self.sessions.values():
            if session.outbox is not None:
                session.outbox.put_nowait({"op": OP_RECONNECT, "d": None})
                count += 1
        return count

    async def go_down(self) -> None:
        """The gateway becomes unreachable and forgets every session: events from now until
        :meth:`come_back` reach nobody, as when a bot is offline longer than Discord keeps a
        session; the client's next connection must IDENTIFY (READY), not RESUME."""
        self.down = True
        self.sessions.clear()
        await self.drop_connections()

    def come_back(self) -> None:
        self.down = False

    def invalidate_sessions(self) -> int:
        """op9 with d=false: the client must IDENTIFY again (discord.py waits 5 s before re-identifying)."""
        count = 0
        for session_id, session in list(self.sessions.items()):
            if session.outbox is not None:
                session.outbox.put_nowait({"op": OP_INVALID_SESSION, "d": False})
                count += 1
            del self.sessions[session_id]
        return count

    def describe(self) -> list[Json]:
        return [
            {
                "session_id": s.session_id,
                "shard": [s.shard_id, s.shard_count],
                "intents": s.intents,
                "seq": s.seq,
                "connected": s.outbox is not None,
            }
            for s in self.sessions.values()
        ]

    # ----- the websocket ---------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.down:
            return web.Response(status=503, text="fake gateway down")
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self.sockets.add(ws)
        self.connections += 1
        outbox: asyncio.Queue[Json | None] = asyncio.Queue()
        writer = asyncio.create_task(self._write(ws, outbox))
        outbox.put_nowait({"op": OP_HELLO, "d": {"heartbeat_interval": self.heartbeat_ms}})
        session: GatewaySession | None = None
        try:
            async for msg in ws:
                if msg.type != WSMsgType.TEXT:
                    continue
                frame: Json = json.loads(msg.data)
                session = await self._on_frame(ws, frame, outbox, session)
        finally:
            self.sockets.discard(ws)
            client_closed = ws not in self._closed_by_server
            self._closed_by_server.discard(ws)
            if session is not None and session.outbox is outbox:
                session.outbox = None
                # A client that closes with 1000/1001 ends its session (Discord docs, "Disconnecting").
                if client_closed and ws.close_code in (1000, 1001) and session.session_id in self.sessions:
                    del self.sessions[session.session_id]
            outbox.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError):
                await writer
        return ws

    async def _write(self, ws: web.WebSocketResponse, outbox: asyncio.Queue[Json | None]) -> None:
        while (frame := await outbox.get()) is not None:
            if ws.closed:
                return
            try:
                await ws.send_str(json.dumps(frame))
            except ConnectionError:
                return

    async def _on_frame(
        self,
        ws: web.WebSocketResponse,
        frame: Json,
        outbox: asyncio.Queue[Json | None],
        session: GatewaySession | None,
    ) -> GatewaySession | None:
        op = frame.get("op")
        data: Any = frame.get("d")
        if op == OP_HEARTBEAT:
            outbox.put_nowait({"op": OP_HEARTBEAT_ACK})
            return session
        self.received.append(frame)
        if op in (OP_IDENTIFY, OP_RESUME) and self.token is not None and data.get("token") != self.token:
            await ws.close(code=CLOSE_AUTHENTICATION_FAILED, message=b"Authentication failed.")
            return session
        wants_content = op == OP_IDENTIFY and int(data.get("intents", 0)) & INTENT_MESSAGE_CONTENT
        wants_members = op == OP_IDENTIFY and int(data.get("intents", 0)) & INTENT_GUILD_MEMBERS
        if (wants_content and not self.world.message_content_enabled) or (
            wants_members and not self.world.server_members_enabled
        ):
            await ws.close(code=CLOSE_DISALLOWED_INTENTS, message=b"Disallowed intent(s).")
            return session
        if op == OP_IDENTIFY:
            return self._identify(data, outbox)
        if op == OP_RESUME:
            return self._resume(data, outbox)
        if op == OP_REQUEST_MEMBERS and session is not None:
            self._send_member_chunk(session, data)
        return session

    def _identify(self, data: Json, outbox: asyncio.Queue[Json | None]) -> GatewaySession:
        shard_id, shard_count = data.get("shard") or [0, 1]
        # A fresh IDENTIFY for a shard supersedes dropped sessions of that shard (they would only buffer).
        for stale_id, stale in list(self.sessions.items()):
            if stale.shard_id == shard_id and stale.outbox is None:
                del self.sessions[stale_id]
        session = GatewaySession(
            session_id=secrets.token_hex(16),
            shard_id=shard_id,
            shard_count=shard_count,
            intents=int(data.get("intents", 0)),
            outbox=outbox,
        )
        self.sessions[session.session_id] = session
        world = self.world
        guilds = [g for g in world.bot_guilds() if session.covers(g.id)]
        ready: Json = {
            "v": 10,
            "user": {**world.bot.payload(), "verified": True, "mfa_enabled": False, "flags": 0},
            "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
            "session_id": session.session_id,
            "resume_gateway_url": self.url,
            "application": {"id": str(world.application_id), "flags": world.application_flags()},
            "private_channels": [],
            "relationships": [],
        }
        if "shard" in data:
            ready["shard"] = [shard_id, shard_count]
        session.push("READY", ready)
        for guild in guilds:
            if session.intents & INTENT_GUILDS and guild.id not in world.outages:
                session.push("GUILD_CREATE", world.guild_create_payload(guild))
        return session

    def _resume(self, data: Json, outbox: asyncio.Queue[Json | None]) -> GatewaySession | None:
        session = self.sessions.get(str(data.get("session_id")))
        if session is None:
            outbox.put_nowait({"op": OP_INVALID_SESSION, "d": False})
            return None
        session.outbox = outbox
        last_seen = int(data.get("seq") or 0)
        for frame in list(session.sent):
            if frame["s"] > last_seen:
                outbox.put_nowait(frame)
        session.push("RESUMED", {"_trace": ["fake-discord"]})
        return session

    def _send_member_chunk(self, session: GatewaySession, data: Json) -> None:
        guild = self.world.guilds.get(int(data.get("guild_id", 0)))
        if guild is None:
            return
        chunk: Json = {
            "guild_id": str(guild.id),
            "members": [m.payload() for m in guild.members.values()],
            "chunk_index": 0,
            "chunk_count": 1,
        }
        if data.get("nonce") is not None:
            chunk["nonce"] = data["nonce"]
        session.push("GUILD_MEMBERS_CHUNK", chunk)

    async def close(self) -> None:
        """Server shutdown: 1001 Going Away to every client still connected."""
        for ws in list(self.sockets):
            await ws.close(code=1001, message=b"fake discord shutting down")
