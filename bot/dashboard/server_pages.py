"""One server's pages: overview, a chat's memory (with zoom and recall), the compactor,
settings (with the audit list) and privacy. The guard in bot/dashboard/web.py has already
checked the session, this server and the CSRF token; every chat is checked here to be one of
this server's (never a DM, never another server's) and, for a member's session, one whose
channel that member may read in Discord (View Channel and Read Message History, as `/memory`
asks): Manage Server alone does not open a private channel's memory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from aiohttp import web

from bot.dashboard import pages, settings_form
from bot.dashboard.access import ReadsChannel, Session
from bot.dashboard.html import esc, page
from bot.dashboard.names import Names
from bot.policy import policy_of, store_of
from bot.services import Services
from memory import Changer, ChatInfo
from memory.errors import UserFacingError


def html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")


class ServerPages:
    def __init__(
        self,
        services: Services,
        names: Names,
        session_of: Callable[[web.Request], Session],
        reads: ReadsChannel,
    ) -> None:
        """``session_of``: the session the guard let through for this request; ``reads``: whether
        a member may read a channel (the gateway cache's answer)."""
        self.services, self.names, self.session_of, self.reads = services, names, session_of, reads
        self.engine = services.engine

    def may_read(self, request: web.Request, guild_id: int, channel_id: int | None) -> bool:
        session = self.session_of(request)
        return session.host or self.reads(guild_id, session.user_id or 0, channel_id)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/g/{guild}", self.overview),
            web.get("/g/{guild}/chat/{chat}", self.memory),
            web.get("/g/{guild}/chat/{chat}/zoom", self.zoom),
            web.get("/g/{guild}/chat/{chat}/view.txt", self.raw_view),
            web.get("/g/{guild}/compactor", self.compactor),
            web.get("/g/{guild}/settings", self.settings),
            web.post("/g/{guild}/settings", self.change_settings),
            web.get("/g/{guild}/privacy", self.privacy),
        ]

    def signout_form(self, session: Session) -> str:
        return (
            f'<form method="post" action="/signout" class="inline"><input type="hidden" name="csrf"'
            f' value="{esc(session.csrf)}"><button type="submit">Sign out</button></form>'
        )

    def _page(self, request: web.Request, title: str, body: str, status: int = 200) -> web.Response:
        guild_id = int(request.match_info["guild"])
        session = self.session_of(request)
        nav = pages.server_nav(f"/g/{guild_id}")
        if session.host:
            nav = [("/host", "Every server"), *nav]
        full = f"{title} · {self.names.guild(guild_id)}"
        return html(page(full, nav, body, signout=self.signout_form(session)), status)

    async def _chat(self, request: web.Request) -> ChatInfo:
        """The chat of the path, if it is one of this server's; else 404 (DMs included)."""
        guild_id = int(request.match_info["guild"])
        raw = request.match_info["chat"]
        if not raw.isdigit() or len(raw) > 18:
            raise web.HTTPNotFound()
        chat = await self.engine.chat(int(raw))
        if chat is None or chat.guild_id != guild_id or chat.kind == "dm":
            raise web.HTTPNotFound()
        if not self.may_read(request, guild_id, chat.discord_id):
            raise web.HTTPNotFound()
        return chat

    # --- pages
    async def overview(self, request: web.Request) -> web.Response:
        guild_id = int(request.match_info["guild"])
        policy = await policy_of(self.services, guild_id)
        server = await self.engine.server_overview(guild_id, policy.timezone)
        shown = [c for c in server.chats if self.may_read(request, guild_id, c.discord_id)]
        server = replace(server, chats=shown)
        return self._page(
            request, "Overview", pages.overview(f"/g/{guild_id}", server, policy.monthly_budget_usd)
        )

    async def memory(self, request: web.Request) -> web.Response:
        chat = await self._chat(request)
        base = f"/g/{chat.guild_id}/chat/{chat.id}"
        query = request.query.get("q", "").strip()[:200]
        hits = None
        if query:
            try:
                hits = await self.engine.recall(chat.id, query, limit=10)
            except UserFacingError as exc:
                hits = str(exc)
        view = await self.engine.prompt_view(chat.id)
        body = pages.memory_page(view, f"{base}/zoom", f"{base}/view.txt", query, hits)
        return self._page(request, f"Memory of {chat.name}", body)

    async def zoom(self, request: web.Request) -> web.Response:
        chat = await self._chat(request)
        at = request.query.get("at", "")[:40]
        try:
            text = await self.engine.zoom_address(chat.id, at)
        except UserFacingError as exc:
            return html(f'<p class="notice">{esc(exc)}</p>', 400)
        return html(pages.zoom_fragment(text, f"/g/{chat.guild_id}/chat/{chat.id}/zoom"))

    async def raw_view(self, request: web.Request) -> web.Response:
        chat = await self._chat(request)
        view = await self.engine.prompt_view(chat.id)
        return web.Response(text=view.render(), content_type="text/plain", charset="utf-8")

    async def compactor(self, request: web.Request) -> web.Response:
        guild_id = int(request.match_info["guild"])
        state = await self.engine.compactor_overview(guild_id)
        shown = [c for c in state.chats if self.may_read(request, guild_id, state.channels.get(c.chat_id))]
        state = replace(state, chats=shown)
        return self._page(request, "Compactor", pages.compactor_page(state, self.services.clock.now()))

    async def privacy(self, request: web.Request) -> web.Response:
        guild_id = int(request.match_info["guild"])
        policy = await policy_of(self.services, guild_id)
        state = await self.engine.privacy_overview(guild_id, policy.timezone)
        return self._page(request, "Privacy", pages.privacy_page(state))

    async def settings(
        self, request: web.Request, notice: str | None = None, status: int = 200
    ) -> web.Response:
        guild_id = int(request.match_info["guild"])
        store = store_of(self.services)
        choices = await store.choices(guild_id)
        policy = await policy_of(self.services, guild_id)
        audit = await store.audit(guild_id)
        form = settings_form.settings_form(
            choices,
            policy,
            self.services.settings.reply_models(),
            self.session_of(request).csrf,
            lambda kind, item: self.names.of(guild_id, kind, item),
        )
        top = ""
        if notice is not None:
            top = f'<p class="notice{" error" if status >= 400 else ""}">{esc(notice)}</p>'
        elif request.query.get("saved"):
            top = '<p class="notice">Saved.</p>'
        audit_html = pages.audit_list(audit, lambda user_id: self.names.member(guild_id, user_id))
        body = top + form + "<h2>Changes (who, when, what)</h2>" + audit_html
        return self._page(request, "Settings", body, status)

    async def change_settings(self, request: web.Request) -> web.Response:
        guild_id = int(request.match_info["guild"])
        session = self.session_of(request)
        form = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
        store = store_of(self.services)
        by = Changer(session.user_id, "host" if session.host else "dashboard")
        if "list" in form:
            posted = settings_form.read_list(form)
            if posted.problem is None and posted.list_change is not None:
                column, item, add = posted.list_change
                await store.change_list(guild_id, column, item, add, by=by)
        else:
            models = self.services.settings.reply_models()
            posted = settings_form.read_scalars(form, await store.choices(guild_id), models)
            if posted.problem is None and posted.values:
                await store.set(guild_id, by=by, **posted.values)
        if posted.problem is not None:
            return await self.settings(request, posted.problem, 400)
        raise web.HTTPSeeOther(f"/g/{guild_id}/settings?saved=1")
