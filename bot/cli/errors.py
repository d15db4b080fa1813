"""The CLI's one error boundary: every exception that ends a command becomes one line on stderr
and an exit code (2: bad input a person can fix; 1: a service did not answer, or a bug).

Tracebacks appear only at LOG_LEVEL=DEBUG, through the logs (bot/log_setup.py renders them
without exception messages or locals, which could quote chat text). `explain` is a pure
mapping from exception to line, tested without a process.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp
import anthropic
import discord
from pydantic import ValidationError
from pydantic_settings import SettingsError

from bot.errors import ServiceRefused, ServiceUnreachable
from bot.settings import Settings
from memory.errors import UserFacingError

BAD_INPUT, UNREACHABLE = 2, 1
TOKEN_REJECTED = "Discord rejected DISCORD_TOKEN (reset the token in the Developer Portal)"
CHAIN_DEPTH = 8  # causes followed when looking under an unknown exception


@dataclass(frozen=True)
class Failure:
    line: str
    exit_code: int


def settings_line(exc: ValidationError | SettingsError) -> str:
    """'bad settings: NAME: what is wrong' for each setting, never the value (it may be a secret)."""
    if isinstance(exc, SettingsError):
        # pydantic-settings: 'error parsing value for field "prices" from source "EnvSettingsSource"',
        # caused by the JSON decoder's own message (a position, no value).
        field = re.search(r'field "(\w+)"', str(exc))
        name = field.group(1).upper() if field else "a setting"
        cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
        return f"bad settings: {name} is not valid JSON{cause}"
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']).upper()}: {err['msg'].removeprefix('Value error, ')}"
        for err in exc.errors()
    )
    return f"bad settings: {problems}"


def where(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc.rsplit("@", 1)[-1] or url  # host:port, never credentials


def network_reason(exc: BaseException) -> str:
    """A short phrase for a failed connection, from the innermost OS error."""
    inner: BaseException | None = exc
    while inner is not None:
        if isinstance(inner, ConnectionRefusedError):
            return "connection refused"
        if isinstance(inner, socket.gaierror):
            return "host name not found"
        if isinstance(inner, TimeoutError):
            return "no answer in time"
        if isinstance(inner, aiohttp.ClientConnectorError):
            inner = inner.os_error
            continue
        inner = inner.__cause__ or inner.__context__
    return type(exc).__name__


def explain(exc: BaseException, settings: Settings | None) -> Failure | None:
    """The line and exit code for an exception that ended a command; None for a bug (the
    caller prints a generic line)."""
    if isinstance(exc, ValidationError | SettingsError):
        return Failure(settings_line(exc), BAD_INPUT)
    if isinstance(exc, UserFacingError):
        return Failure(str(exc), BAD_INPUT)
    if isinstance(exc, ServiceUnreachable | ServiceRefused):
        return Failure(str(exc), UNREACHABLE)
    discord_base = settings.discord_api_base if settings else "DISCORD_API_BASE"
    if isinstance(exc, discord.ConnectionClosed) and exc.code not in (1000, 1001):
        if exc.code == 4004:  # the gateway's "Authentication failed"
            return Failure(TOKEN_REJECTED, BAD_INPUT)
        return Failure(f"Discord closed the gateway connection (close code {exc.code})", UNREACHABLE)
    if isinstance(exc, discord.LoginFailure):
        return Failure(TOKEN_REJECTED, BAD_INPUT)
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return Failure(
            "Discord refused the Message Content intent: enable it under Bot > Privileged Gateway "
            "Intents in the Developer Portal",
            BAD_INPUT,
        )
    # discord.py is the only user of aiohttp here, so a connection error of aiohttp is Discord's:
    # its REST API, or its gateway when the address is the gateway's.
    if isinstance(exc, aiohttp.ClientConnectionError | discord.GatewayNotFound | discord.ConnectionClosed):
        gateway = settings.discord_gateway_url if settings else ""
        if isinstance(exc, aiohttp.ClientConnectorError) and gateway and _is_at(exc, gateway):
            return Failure(
                f"cannot reach the Discord gateway at DISCORD_GATEWAY_URL ({where(gateway)}): "
                f"{network_reason(exc)}",
                UNREACHABLE,
            )
        return Failure(
            f"cannot reach Discord at DISCORD_API_BASE ({where(discord_base)}): {network_reason(exc)}",
            UNREACHABLE,
        )
    if isinstance(exc, discord.DiscordServerError):
        return Failure(f"Discord answered with a server error ({exc.status}); try again later", UNREACHABLE)
    if isinstance(exc, anthropic.AuthenticationError):
        return Failure("Anthropic rejected ANTHROPIC_API_KEY (create a new key in the console)", BAD_INPUT)
    if isinstance(exc, anthropic.APIConnectionError):
        base = (settings.anthropic_base_url if settings else None) or "https://api.anthropic.com"
        return Failure(
            f"cannot reach Anthropic at ANTHROPIC_BASE_URL ({where(base)}): {network_reason(exc)}",
            UNREACHABLE,
        )
    return _unreachable_underneath(exc, settings)


def _unreachable_underneath(exc: BaseException, settings: Settings | None) -> Failure | None:
    """A library that fails while handling a connection failure (discord.py 2.7.1 raises
    AttributeError when its first gateway connection cannot be made: `self.ws` is None in its
    retry path) should still read as the service being unreachable, which is what to fix."""
    seen = {id(exc)}
    inner = exc.__cause__ or exc.__context__
    while inner is not None and id(inner) not in seen and len(seen) < CHAIN_DEPTH:
        seen.add(id(inner))
        failure = explain(inner, settings)
        if failure is not None:
            return failure if failure.exit_code == UNREACHABLE else None
        inner = inner.__cause__ or inner.__context__
    return None


def _is_at(exc: aiohttp.ClientConnectorError, url: str) -> bool:
    parts = urlsplit(url)
    default = 443 if parts.scheme in ("wss", "https") else 80
    try:
        return (exc.host, exc.port) == (parts.hostname, parts.port or default)
    except ValueError:  # a malformed port in the setting
        return False


def unexpected_line(exc: BaseException) -> str:
    # The type only: an exception's message can quote chat text.
    return f"unexpected {type(exc).__name__}; run with LOG_LEVEL=DEBUG to see where it happened"
