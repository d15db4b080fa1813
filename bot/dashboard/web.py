"""The dashboard's web server (aiohttp.web), inside `eva run` when DASHBOARD_PORT is set.

Every page of a server lives under /g/{guild id}; the host's page is /host. One middleware
decides for every request (bot/dashboard/access.py): no session goes to the sign-in notice, a
session for another server or of a member who lost Manage Server is refused, and a POST without
its session's CSRF token is refused. Sign-in is two steps, so that a link preview fetching the
link does not spend it: GET /signin shows a button, its POST spends the link and sets the
cookie. aiohttp's access log is off: a link's secret is in its URL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import discord
import structlog
from aiohttp import web

from bot import health
from bot.dashboard import pages
from bot.dashboard.access import (
    Manages,
    ReadsChannel,
    Session,
    Sessions,
    Verdict,
    csrf_ok,
    manages_in_cache,
    reads_channel_in_cache,
    verdict,
)
from bot.dashboard.html import CSP, SCRIPT, STYLESHEET, esc, page
from bot.dashboard.names import Names
from bot.dashboard.server_pages import ServerPages
from bot.health import gateway_connected
from bot.services import Services
from memory import LinkRefused

log = structlog.get_logger(__name__)

HOST_COOKIE = "eva_host"
SERVER_COOKIE = "eva_server"  # Path=/g/{id}: the browser sends it to that server's pages only
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SIGNED_OUT = "/signed-out"
REFUSALS = {
    Verdict.OTHER_SERVER: "This sign-in is for another server's pages.",
    Verdict.NOT_MANAGER: "You are no longer a member of this server with Manage Server; you were signed out.",
    Verdict.HOST_ONLY: "Only the host's sign-in (eva dashboard-link) opens this page.",
}


def guild_of(request: web.Request) -> int | None:
    """The server a path is about (None: a host page); HTTPNotFound for a malformed id."""
    raw = request.match_info.get("guild")
    if raw is None:
        return None
    if not raw.isdigit() or len(raw) > 20:
        raise web.HTTPNotFound()
    return int(raw)


def plain(title: str, line: str, status: int) -> web.Response:
    return web.Response(text=page(title, [], f'<p class="notice">{esc(line)}</p>'), status=status,
                        content_type="text/html")  # fmt: skip


class Dashboard:
    """The web app over one bot process's services and its gateway cache."""

    def __init__(
        self,
        services: Services,
        client: discord.Client,
        manages: Manages | None = None,
        reads: ReadsChannel | None = None,
    ) -> None:
        """``manages`` and ``reads`` default to the gateway cache's answers (bench/dashboard_page.py
        gives its own: it serves the page without a gateway)."""
        self.services, self.client = services, client
        self.engine = services.engine
        self.manages = manages or manages_in_cache(client)
        self.sessions = Sessions()
        self.names = Names(client)
        reads = reads or reads_channel_in_cache(client)
        self.servers = ServerPages(services, self.names, self.session_of, reads)

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.headers, self.guard])
        app.add_routes(
            [
                web.get("/", self.home),
                web.get("/signin", self.signin_page),
                web.post("/signin", self.signin),
                web.get(SIGNED_OUT, self.signed_out),
                web.post("/signout", self.signout),
                web.get("/static/dashboard.css", self.stylesheet),
                web.get("/static/dashboard.js", self.script),
                web.get("/metrics", self.metrics),
                web.get("/host", self.host),
                *self.servers.routes(),
            ]
        )
        return app

    # --- every request
    @web.middleware
    async def headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            response = exc
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        if isinstance(response, web.HTTPException):
            raise response
        return response

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Pages under /g/{id} and /host: signed in, for this server, still a manager, CSRF."""
        path = request.path
        if not (path.startswith("/g/") or path == "/host"):
            return await handler(request)
        guild_id = guild_of(request)
        session = self._session(request, guild_id)
        found = verdict(session, guild_id, self.manages)
        if found is Verdict.SIGNED_OUT:
            raise web.HTTPSeeOther(SIGNED_OUT)
        if found is not Verdict.ALLOWED:
            if found is Verdict.NOT_MANAGER and session is not None:
                self.sessions.close(session.key)
            log.info("dashboard.refused", verdict=found.value, guild_id=guild_id)
            return plain("Not allowed", REFUSALS[found], 403)
        assert session is not None
        if request.method == "POST":
            form = await request.post()
            sent = form.get("csrf")
            if not csrf_ok(session, sent if isinstance(sent, str) else None):
                log.info("dashboard.csrf_refused", guild_id=guild_id)
                return plain("Not allowed", "This form is out of date or not ours; reload the page.", 403)
        return await handler(request)

    def session_of(self, request: web.Request) -> Session:
        """The session of a request the guard let through (found again: a dictionary lookup)."""
        session = self._session(request, guild_of(request))
        if session is None:  # closed between the guard and the handler
            raise web.HTTPSeeOther(SIGNED_OUT)
        return session

    def _session(self, request: web.Request, guild_id: int | None) -> Session | None:
        if guild_id is not None:
            mine = self.sessions.find(request.cookies.get(SERVER_COOKIE))
            if mine is not None:
                return mine
        return self.sessions.find(request.cookies.get(HOST_COOKIE))

    # --- signing in and out
    async def home(self, request: web.Request) -> web.StreamResponse:
        if self.sessions.find(request.cookies.get(HOST_COOKIE)) is not None:
            raise web.HTTPSeeOther("/host")
        raise web.HTTPSeeOther(SIGNED_OUT)

    async def signed_out(self, _request: web.Request) -> web.Response:
        return plain(
            "Sign in",
            "Sign in with a link: /memory dashboard in your server (Manage Server), or eva dashboard-link"
            " on the host. Each link works once, for 10 minutes.",
            200,
        )

    async def signin_page(self, request: web.Request) -> web.Response:
        secret = request.query.get("t", "")
        body = (
            '<p>Sign in to Eva\'s dashboard with this link (it works once).</p><form method="post">'
            f'<input type="hidden" name="t" value="{esc(secret)}"><button type="submit" id="signin">'
            "Sign in</button></form>"
        )
        return web.Response(text=page("Sign in", [], body), content_type="text/html")

    async def signin(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        secret = form.get("t")
        if not isinstance(secret, str) or not secret or len(secret) > 200:
            return plain("Sign in", "This sign-in link is not known; ask for a new one.", 400)
        try:
            grant = await self.engine.redeem_dashboard_link(secret)
        except LinkRefused as exc:
            return plain("Sign in", str(exc), 403)
        if grant.guild_id is not None and not self.manages(grant.guild_id, grant.user_id or 0):
            return plain("Sign in", REFUSALS[Verdict.NOT_MANAGER], 403)
        session = self.sessions.open(grant.guild_id, grant.user_id)
        secure = request.secure or self.services.settings.dashboard_base().startswith("https://")
        if session.host:
            response = web.HTTPSeeOther("/host")
            name, path = HOST_COOKIE, "/"
        else:
            response = web.HTTPSeeOther(f"/g/{grant.guild_id}")
            name, path = SERVER_COOKIE, f"/g/{grant.guild_id}"
        response.set_cookie(name, session.key, path=path, httponly=True, samesite="Strict", secure=secure)
        log.info("dashboard.signed_in", guild_id=grant.guild_id, user_id=grant.user_id)
        raise response

    async def signout(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        for name in (HOST_COOKIE, SERVER_COOKIE):
            session = self.sessions.find(request.cookies.get(name))
            sent = form.get("csrf")
            if session is not None and csrf_ok(session, sent if isinstance(sent, str) else None):
                self.sessions.close(session.key)
        raise web.HTTPSeeOther(SIGNED_OUT)

    # --- static and the host
    async def stylesheet(self, _request: web.Request) -> web.Response:
        return web.Response(text=STYLESHEET, content_type="text/css")

    async def script(self, _request: web.Request) -> web.Response:
        return web.Response(text=SCRIPT, content_type="application/javascript")

    async def metrics(self, _request: web.Request) -> web.Response:
        return await metrics_response(self.services)

    async def host(self, request: web.Request) -> web.Response:
        session = self.session_of(request)
        overview = await self.engine.host_overview()
        answered = await self.engine.answers(2.0)
        state = (
            f"Discord gateway: {'connected' if gateway_connected(self.client) else 'NOT connected'};"
            f" database: {'answers' if answered else 'does NOT answer'}."
        )
        beat_file = self.services.settings.health_file
        if beat_file is not None:  # what `eva health` (the container's check) would say
            beat = await asyncio.to_thread(health.read, beat_file)
            problem = health.verdict(beat, time.time())
            state += f" Heartbeat ({beat_file.name}): {problem or 'healthy'}."
        body = pages.host_page(overview, state, self.names.guild)
        signout = self.servers.signout_form(session)
        return web.Response(text=page("Every server", [("/host", "Host")], body, signout=signout),
                            content_type="text/html")  # fmt: skip


async def metrics_response(services: Services) -> web.Response:
    services.metrics.refresh(await services.engine.totals())
    body = services.metrics.render()
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


def metrics_app(services: Services) -> web.Application:
    """/metrics alone (METRICS_PORT, without the dashboard)."""

    async def handler(_request: web.Request) -> web.Response:
        return await metrics_response(services)

    app = web.Application()
    app.add_routes([web.get("/metrics", handler)])
    return app


async def serve(app: web.Application, host: str, port: int) -> web.AppRunner:
    """Start ``app`` on host:port; the caller cleans the runner up. No access log (secrets in URLs)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


def bound_port(runner: web.AppRunner) -> int:
    """The port a runner listens on (port 0 picks a free one)."""
    return int(runner.addresses[0][1])
