"""The dashboard's HTML: one layout, the stylesheet and the one small script, and the spend
chart as inline SVG. Every piece of data goes through :func:`esc` (messages, names and lines
are hostile input); the Content-Security-Policy allows only our own script file besides."""

from __future__ import annotations

import html
from collections.abc import Sequence
from decimal import Decimal

from memory import DaySpend

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def esc(value: object) -> str:
    """Text as HTML, quotes included (it also goes into attributes)."""
    return html.escape(str(value), quote=True)


def page(title: str, nav: Sequence[tuple[str, str]], body: str, *, signout: str | None = None) -> str:
    """A whole page: ``nav`` is (href, label) pairs; ``signout`` the form that ends the session."""
    links = "".join(f'<a href="{esc(href)}">{esc(label)}</a>' for href, label in nav)
    out = ""
    if signout is not None:
        out = f'<span class="signout">{signout}</span>'
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · Eva</title>"
        '<link rel="stylesheet" href="/static/dashboard.css">'
        '<script src="/static/dashboard.js" defer></script></head>'
        f"<body><header><b>Eva</b><nav>{links}</nav>{out}</header><main><h1>{esc(title)}</h1>{body}</main>"
        "</body></html>"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str = "nothing yet") -> str:
    """Cells are HTML already (escape them where they are made)."""
    if not rows:
        return f'<p class="empty">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


CHART_HEIGHT = 120
BAR_WIDTH = 14


def spend_chart(days: Sequence[DaySpend]) -> str:
    """Spend per day as stacked bars, replies under compaction, scaled to the dearest day."""
    if not days:
        return '<p class="empty">No spending this month.</p>'
    top = max((d.reply + d.compact for d in days), default=Decimal(0)) or Decimal(1)
    bars = []
    for k, d in enumerate(days):
        x = k * (BAR_WIDTH + 4)
        reply_h = float(d.reply / top) * CHART_HEIGHT
        compact_h = float(d.compact / top) * CHART_HEIGHT
        label = esc(f"{d.day:%Y-%m-%d}: replies ${d.reply:.4f}, compaction ${d.compact:.4f}")
        bars.append(
            f"<g><title>{label}</title>"
            f'<rect class="reply" x="{x}" y="{CHART_HEIGHT - reply_h:.1f}" width="{BAR_WIDTH}"'
            f' height="{reply_h:.1f}"/>'
            f'<rect class="compact" x="{x}" y="{CHART_HEIGHT - reply_h - compact_h:.1f}" '
            f'width="{BAR_WIDTH}" height="{compact_h:.1f}"/></g>'
        )
    width = len(days) * (BAR_WIDTH + 4)
    legend = (
        '<p class="legend"><span class="reply">■</span> replies <span class="compact">■</span> compaction</p>'
    )
    return (
        f'<svg class="chart" width="{width}" height="{CHART_HEIGHT}" role="img" '
        f'aria-label="spend per day">{"".join(bars)}</svg>{legend}'
    )


STYLESHEET = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7fb}
header{display:flex;gap:1.5em;align-items:center;padding:.6em 1.2em;background:#2d3250;color:#fff}
header a{color:#cfd6ff;margin-right:1em;text-decoration:none}
header a:hover{text-decoration:underline}
.signout{margin-left:auto}
.signout button{background:none;border:1px solid #8890c0;color:#fff;border-radius:4px}
main{padding:1em 1.5em;max-width:1100px}
h1{font-size:1.4em}
h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{padding:.35em .6em;border-bottom:1px solid #e3e6ef;
text-align:left;vertical-align:top}
th{background:#eef0f7;font-weight:600}
.empty{color:#777;font-style:italic}
.num{text-align:right;font-variant-numeric:tabular-nums}
.chart rect.reply,.legend .reply{fill:#4f6bed;color:#4f6bed}
.chart rect.compact,.legend .compact{fill:#f0a830;color:#f0a830}
ul.row{list-style:none;padding:0;margin:0;background:#fff;border:1px solid #e3e6ef}
ul.row ul.row{margin:.3em 0 .3em 1.6em;border-left:3px solid #c6cdf0}
li.line{padding:.3em .6em;border-bottom:1px solid #f0f1f6;cursor:pointer}
li.line:hover{background:#f3f5ff}
li.line .addr{font-family:ui-monospace,monospace;color:#2d3250;font-weight:600}
li.line .meta{color:#667;font-size:.85em;margin:0 .6em}
li.line .text{white-space:pre-wrap}
pre.message,pre.tail,pre.recall{background:#fff;border:1px solid #e3e6ef;padding:.6em;white-space:pre-wrap;
word-break:break-word}
form.inline{display:inline}
label{display:block;margin:.5em 0}
input,select{font:inherit;padding:.2em}
.notice{background:#fff6d8;border:1px solid #ecd27a;padding:.5em .8em}
.error{background:#ffe3e3;border:1px solid #e59}
"""

# Clicking a line loads its two halves (or its message) under it, once; clicking again folds it.
SCRIPT = """
document.addEventListener('click', async (event) => {
  const line = event.target.closest('li.line[data-zoom]');
  if (!line) return;
  const open = line.nextElementSibling;
  if (open && open.classList.contains('zoomed')) { open.remove(); return; }
  const answer = await fetch(line.dataset.zoom, {credentials: 'same-origin'});
  const holder = document.createElement('li');
  holder.className = 'zoomed';
  holder.innerHTML = await answer.text();
  line.after(holder);
});
"""
