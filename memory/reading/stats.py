"""Numbers about one chat's memory: what `/memory status`, `/memory node` and `eva stats` show.

Read-only and cheap enough to run on demand: each figure is one indexed query (the row's
own parts, index ranges of the log, the ledger since the start of the month); nothing
reads message text except the authors of one node's range, which is capped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory.config import MemoryConfig
from memory.policy.guild_policy import month_start
from memory.policy.ledger import UsageSummary, usage_summary
from memory.reading import reads
from memory.storage.chats import get_chat
from memory.storage.log import range_bytes
from memory.storage.models import Chat, MemoryRow, Message, TreeNode
from memory.storage.tree_nodes import fetch
from memory.tree.node import address, end, node_for, nodes_of, start
from memory.tree.render import LineInfo, date_span, row_line, row_line_bytes

AUTHORS_SHOWN = 20  # a node over a busy month has hundreds of authors; name the most active


@dataclass(frozen=True, slots=True)
class ChatStats:
    chat_id: int
    name: str
    paused: bool
    messages: int  # T: messages logged (erased slots included)
    erased: int
    last_message_at: datetime | None
    boundary: int  # B: first message of the raw tail
    tail_bytes: int
    row_lines: int
    row_bytes: int  # bytes of the built row lines, newlines included
    model_nodes: int
    free_nodes: int
    # Pending work: a staged row waiting to be built or swapped in, and erasure repairs.
    staged: bool
    staged_boundary: int | None
    unbuilt_leaves: int  # leaves of the staged range [B, staged boundary) not built yet
    staged_ready: bool
    batch_target: int | None
    needs_repair: bool
    swaps: int
    forced_swaps: int
    last_swap_at: datetime | None
    # What triggers the next swap: quiet at last_message_at + QUIET, or forced past TAIL_FORCE.
    quiet_swap_at: datetime | None
    tail_start: int
    tail_force: int
    month_start: datetime
    month: UsageSummary = field(default_factory=UsageSummary)

    @property
    def cache_read_share(self) -> float | None:
        """Share of reply prompt tokens read from the cache this month (None: no replies)."""
        return self.month.cache_read_share

    def next_swap(self, now: datetime) -> str:
        """One sentence: when the memory row changes next, and why."""
        if self.needs_repair:
            return "an erasure or edit is being rebuilt; the row shows surviving lines meanwhile"
        if not self.staged:
            return (
                f"compaction starts when the raw tail passes {self.tail_start:,} bytes "
                f"(now {self.tail_bytes:,})"
            )
        if not self.staged_ready:
            return f"the next row is being built ({self.unbuilt_leaves:,} messages still to summarize)"
        forced = f"or at once when the raw tail passes {self.tail_force:,} bytes (now {self.tail_bytes:,})"
        if self.quiet_swap_at is None or self.quiet_swap_at <= now:
            return "the next row is ready and swaps in on the compactor's next pass"
        quiet = f"{self.quiet_swap_at:%Y-%m-%d %H:%M} UTC"
        return f"the next row is ready: it swaps in after quiet at {quiet}, {forced}"


@dataclass(frozen=True, slots=True)
class _ShownRow:
    boundary: int  # B: first message of the raw tail
    lines: int
    bytes: int  # bytes of the built row lines, newlines included
    tail_bytes: int


@dataclass(frozen=True, slots=True)
class _PendingWork:
    staged_boundary: int | None
    unbuilt_leaves: int  # leaves of the staged range [B, staged boundary) not built yet
    quiet_swap_at: datetime | None


async def chat_stats(
    session: AsyncSession, chat_id: int, now: datetime, config: MemoryConfig | None = None
) -> ChatStats:
    """Everything `/memory status` and `eva stats` show about one chat, as it stands now."""
    cfg = config or MemoryConfig()
    chat = await get_chat(session, chat_id)
    state = await session.get(MemoryRow, chat_id)
    row = await _shown_row(session, chat, state)
    nodes = await _nodes_by_model(session, chat_id)
    erased = await _erased_slots(session, chat_id)
    pending = await _pending_work(session, chat, state, row.boundary, cfg)
    since = month_start(now, cfg.timezone)  # the cap's and the budgets' month (guild_policy)
    month = await usage_summary(session, chat_id=chat_id, since=since)
    return _laid_out(chat, state, cfg, row, nodes, erased, pending, since, month)


async def _shown_row(session: AsyncSession, chat: Chat, state: MemoryRow | None) -> _ShownRow:
    """The row a prompt shows (its built lines' bytes) and the raw tail after it."""
    shown = nodes_of(state.shown if state else None)
    boundary = int(state.boundary) if state else 0
    built = await fetch(session, chat.id, shown)
    row_bytes = sum(row_line_bytes(record.info(), chat.timezone) for record in built.values())
    tail_bytes = await range_bytes(session, chat.id, boundary)
    return _ShownRow(boundary, len(shown), row_bytes, tail_bytes)


async def _nodes_by_model(session: AsyncSession, chat_id: int) -> dict[bool, int]:
    """Built nodes of the chat: True the model's, False the free ones."""
    counts = await session.execute(
        select(TreeNode.by_model, func.count()).where(TreeNode.chat_id == chat_id).group_by(TreeNode.by_model)
    )
    return {bool(model): int(n) for model, n in counts}


async def _erased_slots(session: AsyncSession, chat_id: int) -> int:
    """Log slots whose message was erased (the slot stays, its words are gone)."""
    erased = await session.scalar(
        select(func.count()).where(Message.chat_id == chat_id, Message.erased_at.is_not(None))
    )
    return int(erased or 0)


async def _pending_work(
    session: AsyncSession, chat: Chat, state: MemoryRow | None, boundary: int, cfg: MemoryConfig
) -> _PendingWork:
    """The staged row: how far it reaches, its leaves still to build, when quiet swaps it in."""
    staged_boundary = int(state.staged_boundary) if state and state.staged_boundary is not None else None
    unbuilt = 0
    if staged_boundary is not None and staged_boundary > boundary:
        leaves = await session.scalar(
            select(func.count()).where(
                TreeNode.chat_id == chat.id,
                TreeNode.level == 0,
                TreeNode.idx >= boundary,
                TreeNode.idx < staged_boundary,
            )
        )
        unbuilt = staged_boundary - boundary - int(leaves or 0)
    quiet_at = None
    if state is not None and state.staged is not None and chat.last_message_at is not None:
        quiet_at = chat.last_message_at + timedelta(seconds=cfg.quiet_seconds)
    return _PendingWork(staged_boundary, unbuilt, quiet_at)


def _laid_out(
    chat: Chat,
    state: MemoryRow | None,
    cfg: MemoryConfig,
    row: _ShownRow,
    nodes: dict[bool, int],
    erased: int,
    pending: _PendingWork,
    since: datetime,
    month: UsageSummary,
) -> ChatStats:
    """The figures read for one chat, laid out as :class:`ChatStats` (no query)."""
    return ChatStats(
        chat_id=chat.id,
        name=chat.name,
        paused=chat.logging_paused,
        messages=int(chat.next_index),
        erased=erased,
        last_message_at=chat.last_message_at,
        boundary=row.boundary,
        tail_bytes=row.tail_bytes,
        row_lines=row.lines,
        row_bytes=row.bytes,
        model_nodes=int(nodes.get(True, 0)),
        free_nodes=int(nodes.get(False, 0)),
        staged=state is not None and state.staged is not None,
        staged_boundary=pending.staged_boundary,
        unbuilt_leaves=pending.unbuilt_leaves,
        staged_ready=bool(state and state.staged_ready),
        batch_target=state.batch_target if state else None,
        needs_repair=bool(state and state.needs_repair),
        swaps=int(state.swaps) if state else 0,
        forced_swaps=int(state.forced_swaps) if state else 0,
        last_swap_at=state.last_swap_at if state else None,
        quiet_swap_at=pending.quiet_swap_at,
        tail_start=cfg.tail_start,
        tail_force=cfg.tail_force,
        month_start=since,
        month=month,
    )


@dataclass(frozen=True, slots=True)
class NodeDetail:
    address: str
    line: str | None  # the node's own line when built, else None
    built: bool
    by_model: bool
    model: str | None
    dates: str  # "YYYY-MM-DD" or "first..last" in the chat's time zone, "?" when unknown
    authors: list[str]  # distinct author names under it, most messages first, capped
    more_authors: int  # authors beyond the cap
    below: str  # count 1: the message itself; else the two child lines (as zoom shows them)


async def node_detail(session: AsyncSession, chat_id: int, text_address: str) -> NodeDetail:
    """Everything `/memory node` shows about the line at ``text_address`` (``id+n``).

    Raises :class:`memory.errors.BadRequest` for an address that names no node of this chat.
    """
    chat = await get_chat(session, chat_id)
    first, count = reads.parse(text_address, chat.next_index)
    node = node_for(first, count, chat.next_index)
    record = await session.get(TreeNode, (chat_id, node[0], node[1]))
    in_range = (Message.chat_id == chat_id, Message.idx >= start(node), Message.idx < end(node))
    if record is not None:
        first_at, last_at = record.first_at, record.last_at
    else:
        span = await session.execute(
            select(func.min(Message.created_at), func.max(Message.created_at)).where(*in_range)
        )
        first_at, last_at = span.one()
    authors = list(
        (
            await session.scalars(
                select(Message.author_name)
                .where(*in_range, Message.author_name.is_not(None))
                .group_by(Message.author_name)
                .order_by(func.count().desc(), Message.author_name)
                .limit(AUTHORS_SHOWN + 1)
            )
        ).all()
    )
    more = 0
    if len(authors) > AUTHORS_SHOWN:
        total = await session.scalar(select(func.count(func.distinct(Message.author_name))).where(*in_range))
        more = int(total or 0) - AUTHORS_SHOWN
        authors = authors[:AUTHORS_SHOWN]
    line = None
    if record is not None:
        line = row_line(LineInfo(node, record.text, record.first_at, record.last_at), chat.timezone)
    return NodeDetail(
        address=address(node),
        line=line,
        built=record is not None,
        by_model=bool(record and record.by_model),
        model=record.model if record else None,
        dates=date_span(first_at, last_at, chat.timezone),
        authors=[a for a in authors if a is not None],
        more_authors=more,
        below=await reads.zoom(session, chat_id, first, count),
    )
