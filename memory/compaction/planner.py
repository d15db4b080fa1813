"""The compactor's next steps for one chat, decided in one short transaction.

Each call to :func:`plan_chat` runs under the chat's memory-row lock and does everything
that needs no model: it arms compaction when the raw tail passes TAIL_START, builds free
nodes (short messages, short merges, erased messages), applies the batch merges whose
parents are built, rebuilds nodes an erasure or edit removed, and swaps the staged row in
when the chat has been quiet for QUIET (or at once past TAIL_FORCE). What is left needs a
model: it returns those tasks, in order, each with its context. The caller runs them and
calls again. Nothing here scans the whole tree: it reads the row's own parts, their
parents, and index ranges of the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from memory.compaction.node_cache import NodeCache
from memory.compaction.staged_row import keep_staged, lock_row, write_staged
from memory.compaction.summarizer import CompactTask
from memory.config import MemoryConfig
from memory.storage.log import keep_boundary, range_bytes, read_range
from memory.storage.models import Chat, MemoryRow, Message
from memory.storage.tree_nodes import NodeRecord, NodeWrite, insert_nodes
from memory.tree.node import Node, children, free_leaf, free_merge, nodes_of, utf8_len
from memory.tree.row import check_tiling, plan_batch
from memory.tree.swap import is_quiet, should_arm, swap_reason


@dataclass(frozen=True, slots=True)
class PlannedTask:
    node: Node
    task: CompactTask
    # Every built line of the row before the task's input, oldest first, up to the first
    # unbuilt one (no placeholder reaches the model). The call's context is a run of these:
    # memory/compaction/call_plan.py picks one context per call that holds only lines before every
    # task's input.
    before: Sequence[str]
    first_at: datetime | None
    last_at: datetime | None
    # UTF-8 bytes of ``before`` with a newline each: the planner knows it from its prefix sums;
    # the call plan sorts and tiers by it (summing ~4,700 lines per task cost more than the
    # model on an import: docs/benchmarks.md).
    before_bytes: int = -1

    def __post_init__(self) -> None:
        if self.before_bytes < 0:
            object.__setattr__(self, "before_bytes", sum(utf8_len(line) + 1 for line in self.before))


@dataclass(slots=True)
class Plan:
    version: int
    tasks: list[PlannedTask] = field(default_factory=list)
    waiting: bool = False  # work remains that is in flight or waiting to be retried
    swapped: bool = False
    forced: bool = False
    batched: bool = False  # a batch merge finished in this plan (the row went down to VIEW_LOW)
    free_built: int = 0


def _json(parts: Sequence[Node]) -> list[list[int]]:
    # Tuples are written as JSON arrays, [[level, index], ...], like lists (json encodes them
    # in C: a staged row after an import holds every imported leaf); the column's type says
    # lists because that is what it reads back.
    return cast(list[list[int]], list(parts))


class ChatPlanner:
    """One plan's work on one chat: builds free nodes, hands out model tasks (at most one
    call window of them), runs the batch merge and repairs what an erasure deleted."""

    def __init__(
        self,
        session: AsyncSession,
        config: MemoryConfig,
        cache: NodeCache,
        busy: set[Node],
        blocked: set[Node],
    ) -> None:
        self.s, self.cfg, self.cache = session, config, cache
        self.chat_id = cache.chat_id
        self.busy, self.blocked = busy, blocked
        self.window = config.jobs * config.tasks_per_call
        self.writes: list[NodeWrite] = []
        # The staged row's parts (memory/compaction/staged_row.py): read and written through
        # here, never through the row object, which does not load them.
        self.staged: list[Node] | None = None

    def set_staged(self, state: MemoryRow, parts: list[Node] | None) -> None:
        write_staged(state, parts)
        self.staged = parts

    # --- free nodes and tasks
    def _skip(self, node: Node) -> bool:
        return node in self.busy or node in self.blocked

    async def _flush(self) -> int:
        built = await insert_nodes(self.s, self.chat_id, self.writes)
        for w in self.writes:
            self.cache.add(NodeRecord(w.node, w.text, w.first_at, w.last_at, w.by_model))
        self.writes = []
        return built

    def _context(self, row: Sequence[Node], node: Node) -> tuple[Sequence[str], int]:
        """The row's built lines before ``node`` and their bytes (RowContext.before)."""
        return self.cache.context_of(row).before(node)

    async def leaves(self, row: list[Node], nodes: list[Node], plan: Plan) -> None:
        """Build the unbuilt leaves ``nodes`` (in order): free ones now, the rest as tasks."""
        if not nodes:
            return
        first, last = nodes[0][1], nodes[-1][1]
        messages: dict[int, Message] = {}
        for chunk_start in range(first, last + 1, 2000):
            for msg in await read_range(self.s, self.chat_id, chunk_start, min(last + 1, chunk_start + 2000)):
                messages[msg.idx] = msg
        for node in nodes:
            m = messages.get(node[1])
            if m is None:
                continue
            line = free_leaf(m.author_name, m.text, self.cfg.node_bytes)
            if line is not None:
                self.writes.append(NodeWrite(node, line, m.created_at, m.created_at, by_model=False))
                plan.free_built += 1
            elif self._skip(node):
                plan.waiting = True
            elif len(plan.tasks) < self.window:
                task = CompactTask("compress", 0, node[1], author=m.author_name or "", text=m.text or "")
                before, size = self._context(row, node)
                plan.tasks.append(PlannedTask(node, task, before, m.created_at, m.created_at, size))
            else:
                plan.waiting = True
        await self._flush()

    def merge(self, row: list[Node], node: Node, plan: Plan, context_row: list[Node] | None = None) -> bool:
        """Build parent ``node`` (of row parts or of nodes under them); True if it was free."""
        left, right = (self.cache.get(child) for child in children(node))
        if left is None or right is None:
            return False
        line = free_merge(left.text, right.text, self.cfg.node_bytes)
        if line is not None:
            self.writes.append(NodeWrite(node, line, left.first_at, right.last_at, by_model=False))
            plan.free_built += 1
            return True
        if self._skip(node):
            plan.waiting = True
        elif len(plan.tasks) < self.window and all(t.node != node for t in plan.tasks):
            task = CompactTask("merge", node[0], node[1], left=left.text, right=right.text)
            before, size = self._context(context_row or row, node)
            plan.tasks.append(PlannedTask(node, task, before, left.first_at, right.last_at, size))
        else:
            plan.waiting = True
        return False

    # --- the staged row
    def _size_or_free(self, node: Node, plan: Plan) -> int | None:
        """Line bytes of ``node`` for the batch plan; a parent known to be unbuilt whose
        children fit together is built free on the spot, so a batch never stops for it."""
        size = self.cache.line_bytes(node)
        if size is not None or node[0] == 0 or node not in self.cache.unbuilt:
            return size
        left, right = (self.cache.get(child) for child in children(node))
        if left is None or right is None:
            return None
        line = free_merge(left.text, right.text, self.cfg.node_bytes)
        if line is None:
            return None
        self.writes.append(NodeWrite(node, line, left.first_at, right.last_at, by_model=False))
        self.cache.add(NodeRecord(node, line, left.first_at, right.last_at, False))
        plan.free_built += 1
        return self.cache.line_bytes(node)

    async def batch(
        self, row: list[Node], boundary: int, target: int, plan: Plan, armed: list[Node]
    ) -> tuple[list[Node], bool]:
        """Run the batch as far as built parents allow; returns the row and whether it ended.
        Merges take their lines before from ``armed`` (the row as armed: shown, then new leaves),
        which holds until the swap, so all passes share one cached context (memory/compaction/call_plan.py).

        Parents the cache has not seen are looked up and the plan is run again; the order of
        merges depends only on the row, so a re-run resumes exactly where it stopped.
        """
        await self.cache.load(self.s, self.cache.pairs.new(row))
        while True:
            before = row
            result = plan_batch(
                row,
                boundary,
                lambda node: self._size_or_free(node, plan),
                target,
                estimate=self.cfg.node_bytes + 40,
                max_needed=self.window,
                resume=self.cache.batch,
                known=self.cache.sizes,
            )
            self.cache.batch = result.state
            row = result.parts
            self.cache.pairs.moved(before, row, result.merged)
            if result.done or not result.needed:
                await self._flush()
                return row, True
            unseen = [n for n in result.needed if n not in self.cache.unbuilt and n not in self.cache.records]
            if unseen:
                await self.cache.load(self.s, unseen + [k for n in unseen for k in children(n)])
                continue
            await self.cache.unbuilt_parts(self.s, armed)  # loads the merges' lines before
            for needed in result.needed:
                self.merge(row, needed, plan, armed)
            await self._flush()
            return row, False

    async def repair(self, row: list[Node], plan: Plan) -> bool:
        """Rebuild, bottom up, what an erasure or edit deleted under the row's parts; True when whole."""
        while True:
            await self.cache.load(self.s, row)
            frontier = [p for p in row if self.cache.get(p) is None]
            if not frontier:
                return True
            ready_leaves: list[Node] = []
            ready_merges: list[Node] = []
            while frontier:
                nxt: list[Node] = []
                kids = [k for node in frontier if node[0] > 0 for k in children(node)]
                await self.cache.load(self.s, kids)
                for node in frontier:
                    if node[0] == 0:
                        ready_leaves.append(node)
                        continue
                    missing = [k for k in children(node) if self.cache.get(k) is None]
                    if missing:
                        nxt.extend(missing)
                    else:
                        ready_merges.append(node)
                frontier = nxt
            before = plan.free_built
            await self.leaves(row, sorted(ready_leaves), plan)
            for node in ready_merges:
                self.merge(row, node, plan)
            await self._flush()
            if plan.free_built == before:
                return False


_NEEDS_PASS = text("""
    SELECT r.staged IS NOT NULL, r.staged_ready, r.needs_repair, r.cards_due, c.last_message_at,
           (SELECT coalesce(sum(m.line_bytes), 0) FROM messages m
             WHERE m.chat_id = r.chat_id AND m.idx >= r.boundary) AS tail
    FROM memory_rows r JOIN chats c ON c.id = r.chat_id
    WHERE r.chat_id = :chat_id
""")


async def needs_pass(session: AsyncSession, config: MemoryConfig, chat_id: int, now: datetime) -> bool:
    """One cheap read that tells whether :func:`plan_chat` has anything to do: most
    messages only lengthen the raw tail, and most ticks find a staged row still waiting
    for quiet."""
    row = (await session.execute(_NEEDS_PASS, {"chat_id": chat_id})).one_or_none()
    if row is None:
        return False
    staged, ready, repair, cards_due, last_at, tail = row
    if repair:
        return True
    if cards_due and config.people_cards > 0 and is_quiet(last_at, now, config):
        return True  # the people cards wait for a quiet chat (memory/compaction/cards.py)
    if not staged:
        return should_arm(int(tail), config)
    if not ready:
        return True
    return swap_reason(last_at, now, int(tail), config) is not None


async def plan_chat(
    session: AsyncSession,
    config: MemoryConfig,
    cache: NodeCache,
    now: datetime,
    *,
    busy: set[Node],
    blocked: set[Node],
    force_swap: bool = False,
) -> Plan:
    """The chat's next steps, under its memory-row lock: free work done, model tasks returned."""
    state, staged = await lock_row(session, cache)
    chat = (await session.execute(select(Chat).where(Chat.id == cache.chat_id))).scalar_one()
    cache.reset(state.version)
    planner = ChatPlanner(session, config, cache, busy, blocked)
    planner.staged = staged
    plan = Plan(version=state.version)
    for _round in range(3):  # arm, build, swap; a swap may leave enough tail to arm again
        await _repair_rows(planner, state, plan)
        if planner.staged is None and not await _arm(planner, state, chat.next_index):
            break
        if not await _build_staged(planner, state, plan):
            break
        if not await _swap_when_due(planner, state, chat, now, plan, force_swap):
            break
        cache.reset(state.version)
    state.updated_at = now
    await keep_staged(session, cache, planner.staged)
    return plan


async def _repair_rows(planner: ChatPlanner, state: MemoryRow, plan: Plan) -> None:
    """After an erasure or edit: rebuild what it deleted under the shown and the staged row."""
    if not state.needs_repair:
        return
    whole = await planner.repair(nodes_of(state.shown), plan)
    if planner.staged is not None:
        whole = await planner.repair(planner.staged, plan) and whole
    state.needs_repair = not whole


async def _arm(planner: ChatPlanner, state: MemoryRow, total: int) -> bool:
    """Stage the next row once the raw tail passes TAIL_START: the shown parts, then the leaves
    of the tail up to the newest TAIL_KEEP bytes. False: nothing to stage."""
    tail = await range_bytes(planner.s, planner.chat_id, state.boundary)
    if not should_arm(tail, planner.cfg):
        return False
    keep_from = await keep_boundary(planner.s, planner.chat_id, state.boundary, total, planner.cfg.tail_keep)
    if keep_from <= state.boundary:
        return False
    planner.set_staged(state, nodes_of(state.shown) + [(0, i) for i in range(state.boundary, keep_from)])
    state.staged_boundary, state.batch_target, state.staged_ready = keep_from, None, False
    return True


async def _build_staged(planner: ChatPlanner, state: MemoryRow, plan: Plan) -> bool:
    """Build the staged row's leaves, then its batch merge; True when it is ready to swap in."""
    if not state.staged_ready:
        staged = await _staged_leaves_built(planner, state, plan)
        if staged is not None:
            await _batch_when_over(planner, state, staged, plan)
            state.staged_ready = state.batch_target is None and not state.needs_repair
    return bool(state.staged_ready)


async def _staged_leaves_built(planner: ChatPlanner, state: MemoryRow, plan: Plan) -> list[Node] | None:
    """Build the staged row's unbuilt leaves (free ones now, the rest as tasks); its parts when
    every one is built, else None. A missing parent is the repair's work."""
    cache, staged = planner.cache, planner.staged or []
    unbuilt = await cache.unbuilt_parts(planner.s, staged)
    if unbuilt and all(p[0] == 0 for p in unbuilt):
        await planner.leaves(staged, unbuilt, plan)
        unbuilt = await cache.unbuilt_parts(planner.s, staged)
    return None if unbuilt else staged


async def _batch_when_over(planner: ChatPlanner, state: MemoryRow, staged: list[Node], plan: Plan) -> None:
    """A staged row over VIEW_HIGH is merged down towards VIEW_LOW, as far as built parents allow."""
    staged_end = int(state.staged_boundary or 0)
    if (
        state.batch_target is None
        and sum(planner.cache.line_bytes(p) or 0 for p in staged) > planner.cfg.view_high
    ):
        state.batch_target = planner.cfg.view_low
    if state.batch_target is None:
        return
    armed = planner.cache.armed(nodes_of(state.shown), int(state.boundary), staged_end)
    staged, ended = await planner.batch(staged, staged_end, state.batch_target, plan, armed)
    if staged != planner.staged:  # most passes merge little or nothing: no row-long write then
        planner.set_staged(state, staged)
    planner.staged = staged  # the list the batch stands on: found by identity next pass
    planner.cache.whole(staged)
    if ended:
        state.batch_target = None
        plan.batched = True


async def _swap_when_due(
    planner: ChatPlanner, state: MemoryRow, chat: Chat, now: datetime, plan: Plan, force_swap: bool
) -> bool:
    """Swap the ready staged row in after QUIET, at once past TAIL_FORCE, or when the caller
    forces it; False when it keeps waiting."""
    tail = await range_bytes(planner.s, planner.chat_id, state.boundary)
    reason = swap_reason(chat.last_message_at, now, tail, planner.cfg)
    if reason is None and not force_swap:
        return False
    _swap(planner, state, now, plan, forced=reason == "forced", by_caller=force_swap)
    return True


def _swap(
    planner: ChatPlanner, state: MemoryRow, now: datetime, plan: Plan, *, forced: bool, by_caller: bool
) -> None:
    """The staged row becomes the shown row, in a new version (a swap the caller forced is
    not counted as forced by the tail)."""
    staged, staged_end = planner.staged or [], int(state.staged_boundary or 0)
    check_tiling(staged, staged_end)
    state.shown, state.boundary = _json(staged), staged_end
    planner.set_staged(state, None)
    state.staged_boundary = None
    state.staged_ready = False
    state.version += 1
    state.swaps += 1
    state.forced_swaps += int(forced and not by_caller)
    state.last_swap_at = now
    # The people cards are built again from the new row at a quiet swap only (or one the
    # caller asked for), in the same quiet stretch: a forced swap happens while people talk,
    # and new cards then would move the cached prefix a second time (memory/compaction/cards.py).
    if by_caller or not forced:
        state.cards_due = True
    plan.swapped, plan.forced = True, plan.forced or forced
    plan.version = state.version
