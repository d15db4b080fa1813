"""The text of `/memory status` and `/memory node` (the numbers come from memory/reading/stats.py)."""

from __future__ import annotations

from datetime import datetime

from bot.commands.forget import plural
from bot.services import Services
from memory import ChatStats, NodeDetail, ReconcileState


def _when(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC" if moment is not None else "never"


def _share(value: float | None) -> str:
    return f"{value:.0%}" if value is not None else "no replies yet"


def pending_work(stats: ChatStats) -> str:
    parts = []
    if stats.staged:
        parts.append(
            f"a next row up to message #{(stats.staged_boundary or 1) - 1:,}"
            f" ({plural(stats.unbuilt_leaves, 'message')} still to summarize)"
        )
    if stats.batch_target is not None:
        parts.append(f"a merge batch down to {stats.batch_target:,} bytes")
    if stats.needs_repair:
        parts.append("lines to rebuild after an erasure or edit")
    return "; ".join(parts) or "none"


def format_status(label: str, stats: ChatStats, now: datetime) -> str:
    reply, compact = stats.month.kind("reply"), stats.month.kind("compact")
    warm = stats.month.kind("keep_warm")  # bot/core/keep_warm.py: shown once there are any
    pings = f"{plural(warm.calls, 'keep-warm ping')} (${warm.cost_usd:.4f}), " if warm.calls else ""
    raw = stats.messages - stats.boundary
    last = _when(stats.last_message_at)
    swaps = f"{plural(stats.swaps, 'swap')}, {stats.forced_swaps:,} forced"
    row_span = f", covering messages 0 to {stats.boundary - 1:,}" if stats.boundary else ""
    lines = [
        f"**Memory of {label}**" + (" (logging paused)" if stats.paused else ""),
        f"Messages: {stats.messages:,} logged, {stats.erased:,} erased; last at {last}",
        f"Memory row: {plural(stats.row_lines, 'line')}, {stats.row_bytes:,} bytes{row_span}",
        f"Raw tail: {plural(raw, 'message')}, {stats.tail_bytes:,} bytes",
        f"Lines built: {stats.model_nodes:,} by the model, {stats.free_nodes:,} free",
        f"Pending work: {pending_work(stats)}",
        f"Next swap: {stats.next_swap(now)}",
        f"Last swap: {_when(stats.last_swap_at)} ({swaps})",
        f"Since {stats.month_start:%Y-%m-%d}: {plural(reply.calls, 'reply call')} (${reply.cost_usd:.4f}), "
        f"{pings}{plural(compact.calls, 'compactor call')} (${compact.cost_usd:.4f}); "
        f"reply input read from cache: {_share(stats.cache_read_share)}",
    ]
    return "\n".join(lines)


def format_reconciled(state: ReconcileState) -> str:
    """When the chat was last compared with Discord (deletions and edits made while the bot
    was away): the window after a reconnect, and the slow walk over the whole history."""
    walk = f"whole history {_when(state.history_at)}"
    if state.walking:
        walk += ", a new pass under way"
    return f"Reconciled with Discord: recent messages {_when(state.recent_at)}; {walk}"


async def memory_status(services: Services, chat_id: int, label: str, shards: str | None = None) -> str:
    """``shards``: the shards of the process answering (bot/shards.py), when it holds some."""
    now = services.clock.now()
    stats = await services.engine.chat_stats(chat_id, now)
    reconciled = await services.engine.reconcile_state(chat_id)
    served = f"\nServed by the process holding {shards}." if shards else ""
    return format_status(label, stats, now) + "\n" + format_reconciled(reconciled) + served


def format_node(detail: NodeDetail) -> str:
    first, count = (int(part) for part in detail.address.split("+"))
    if not detail.built:
        origin = "not built yet (shown below through the lines under it)"
    elif detail.by_model:
        origin = f"written by the model ({detail.model or 'unknown model'})"
    else:
        origin = "free: the words themselves, no model call"
    head = (
        f"message #{first}"
        if count == 1
        else f"line {detail.address} (messages {first:,} to {first + count - 1:,})"
    )
    authors = ", ".join(detail.authors) or "nobody (erased)"
    if detail.more_authors:
        authors += f" and {detail.more_authors:,} more"
    lines = [f"**{head}**, {detail.dates}, {origin}", f"Authors: {authors}"]
    if detail.line is not None and count > 1:
        lines += ["", detail.line]
    lines += ["", "The message:" if count == 1 else "The two lines under it:", detail.below]
    return "\n".join(lines)


async def node_report(services: Services, chat_id: int, address: str) -> str:
    detail = await services.engine.node_detail(chat_id, address)
    return format_node(detail)
