"""The pages of one server and the host's page, as HTML strings from the engine's figures.
Pure: no database, no Discord; every value is escaped here (bot/dashboard/html.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal

from bot.dashboard.html import esc, spend_chart, table
from memory import AuditEntry, CompactorOverview, HostOverview, PrivacyOverview, PromptView, ServerOverview

# A row or zoom line starts with its address and dates: "40+8 2026-01-03..2026-01-09|text".
LINE = re.compile(r"^(\d+)\+(\d+) (\S+)\|")


def when(at: datetime | None) -> str:
    return f"{at:%Y-%m-%d %H:%M} UTC" if at is not None else "never"


def money(value: Decimal) -> str:
    return f"${value:,.2f}" if value >= Decimal("0.01") or value == 0 else f"${value:.4f}"


def server_nav(base: str) -> list[tuple[str, str]]:
    return [
        (base, "Overview"),
        (f"{base}/compactor", "Compactor"),
        (f"{base}/settings", "Settings"),
        (f"{base}/privacy", "Privacy"),
    ]


def overview(base: str, server: ServerOverview, budget: Decimal | None) -> str:
    rows = [
        [
            f'<a href="{esc(base)}/chat/{c.chat_id}">{esc(c.name)}</a>',
            esc(c.kind),
            f'<span class="num">{c.messages:,}</span>',
            f'<span class="num">{c.lines:,}</span>',
            esc(when(c.last_message_at)),
            "paused" if c.paused else "logging",
        ]
        for c in server.chats
    ]
    against = "no budget" if budget is None else f"of {money(budget)}"
    if budget:
        against += f" ({int(server.spent * 100 / budget)}%)"
    return (
        "<h2>Chats</h2>"
        + table(["chat", "kind", "messages", "row lines", "last message", "state"], rows)
        + f"<h2>Spend this month: {esc(money(server.spent))} {esc(against)}</h2>"
        + spend_chart(server.days)
    )


def line_item(line: str, zoom_base: str) -> str:
    """One row or zoom line: its address, dates and size, then its text; clickable to zoom."""
    found = LINE.match(line)
    if found is None:
        return f'<li class="note">{esc(line)}</li>'
    first, count, dates = found.group(1), found.group(2), found.group(3)
    text = line[found.end() :]
    size = len(line.encode("utf-8"))
    return (
        f'<li class="line" data-zoom="{esc(zoom_base)}?at={first}%2B{count}">'
        f'<span class="addr">{esc(first)}+{esc(count)}</span>'
        f'<span class="meta">{esc(dates)} · {size} B</span><span class="text">{esc(text)}</span></li>'
    )


def zoom_fragment(text: str, zoom_base: str) -> str:
    """What a click on a line loads: its two halves as lines, or the message itself."""
    lines = text.split("\n")
    if all(LINE.match(line) or line.startswith("(and ") for line in lines):
        return '<ul class="row">' + "".join(line_item(line, zoom_base) for line in lines) + "</ul>"
    return f'<pre class="message">{esc(text)}</pre>'


def memory_page(view: PromptView, zoom_base: str, raw_href: str, query: str, hits: str | None) -> str:
    row = "".join(line_item(line, zoom_base) for line in view.row_lines)
    tail = view.tail_text()
    found = ""
    if hits is not None:
        found = f'<h2>Search results for “{esc(query)}”</h2><pre class="recall">{esc(hits)}</pre>'
    return (
        f"<p>{view.total:,} messages; the memory row covers the first {view.boundary:,}"
        f" in {len(view.row_lines):,} lines, the raw tail the {view.total - view.boundary:,} after it."
        f' This is exactly what the model reads (<a href="{esc(raw_href)}">as text</a>, the same as'
        " /memory view). Click a line to open its two halves, down to the messages.</p>"
        '<form method="get" class="search"><label>Search this chat (recall) '
        f'<input type="search" name="q" value="{esc(query)}" maxlength="200"></label>'
        '<button type="submit">Search</button></form>'
        + found
        + "<h2>Memory row</h2>"
        + (f'<ul class="row">{row}</ul>' if row else '<p class="empty">No lines yet.</p>')
        + "<h2>Raw tail</h2>"
        + (f'<pre class="tail">{esc(tail)}</pre>' if tail else '<p class="empty">Empty.</p>')
    )


def compactor_page(state: CompactorOverview, now: datetime) -> str:
    rows = []
    for s in state.chats:
        why = "forced (tail past TAIL_FORCE)" if s.tail_bytes > s.tail_force else "quiet"
        rows.append(
            [
                esc(s.name),
                f'<span class="num">{state.built.get(s.chat_id, 0):,}</span>',
                f'<span class="num">{s.model_nodes:,} / {s.free_nodes:,}</span>',
                f'<span class="num">{s.unbuilt_leaves:,}</span>',
                f'<span class="num">{s.tail_bytes:,} B</span>',
                esc(s.next_swap(now)) + (f" <em>({esc(why)})</em>" if s.staged else ""),
                f"{s.swaps:,} ({s.forced_swaps:,} forced)",
            ]
        )
    errors = [
        [esc(f.kind), f'<span class="num">{f.count:,}</span>', esc(when(f.last_at))] for f in state.failures
    ]
    return (
        table(
            ["chat", "lines built", "by model / free", "waiting", "raw tail", "next swap, and why", "swaps"],
            rows,
        )
        + "<h2>Last errors, by kind</h2>"
        + table(["kind", "count", "last"], errors, empty="No errors since the bot started.")
    )


def privacy_page(state: PrivacyOverview) -> str:
    total = sum(d.count for d in state.erasures)
    rows = [[esc(f"{d.day:%Y-%m-%d}"), f'<span class="num">{d.count:,}</span>'] for d in state.erasures]
    return (
        f"<p>{total:,} messages erased in this server's chats; {state.opt_outs:,} people opted out of"
        " being logged. Who they are is never shown here.</p>"
        "<h2>Erasures by day</h2>" + table(["day", "messages erased"], rows, empty="No erasures.")
    )


def audit_list(entries: Sequence[AuditEntry], name_of: Callable[[int | None], str]) -> str:
    rows = [
        [esc(when(e.at)), esc(name_of(e.user_id)), esc(e.source), esc(e.setting), esc(e.value)]
        for e in entries
    ]
    return table(["when", "who", "where", "setting", "new value"], rows, empty="No changes yet.")


def host_page(state: HostOverview, health: str, server_name: Callable[[int], str]) -> str:
    rows = [
        [
            f'<a href="/g/{s.guild_id}">{esc(server_name(s.guild_id))}</a>',
            f'<span class="num">{s.chats:,}</span>',
            f'<span class="num">{s.messages:,}</span>',
            esc(money(s.spent)),
        ]
        for s in state.servers
    ]
    t = state.totals
    return (
        f"<h2>Health</h2><p>{esc(health)}</p>"
        f"<p>Compactor backlog: {t.backlog_messages:,} messages waiting for lines"
        f" (oldest {t.lag_seconds / 60:,.0f} minutes old).</p>"
        "<h2>Servers</h2>"
        + table(["server", "chats", "messages", "spent this month"], rows)
        + f"<h2>Direct messages</h2><p>{state.dm_chats:,} DM chats holding {state.dm_messages:,} messages"
        " (counts only: their content is never shown here).</p>"
        '<p><a href="/metrics">/metrics</a> (Prometheus)</p>'
    )
