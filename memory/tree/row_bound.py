"""The row's ceiling after an erasure (docs/design.md, the memory row): pure planning.

An erasure deletes every line above the erased message, and the row shows each deleted part
through its surviving built descendants until the compactor rebuilds it. Those descendants
can be many: erasing one author in eight from a compacted 13,714-message chat left almost
every part of the row unbuilt and the row grew from 47.7 KB to 795 KB, past the model's
window. So when the expanded row would pass VIEW_HIGH, some unbuilt parts ("gaps") are shown
as one short placeholder line each instead, until they are rebuilt.

Which gaps: the ones that save the most bytes first (ties: the oldest), until the row fits.
That keeps the fewest placeholders, so as much of the surviving memory as fits stays
readable; a placeholder still points at zoom and recall, which read the words themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartCost:
    """One part of the shown row, measured both ways (bytes include each line's newline).

    ``expanded``: the part's own line if built, else the lines of its built descendants.
    ``placeholder``: its one "being rebuilt" line; None when the part is built (not a gap).
    """

    expanded: int
    placeholder: int | None = None

    @property
    def saving(self) -> int:
        return 0 if self.placeholder is None else self.expanded - self.placeholder


def gaps_to_collapse(parts: Sequence[PartCost], limit: int) -> set[int]:
    """Positions of the gaps to show as placeholders so the row is at most ``limit`` bytes
    (or as small as placeholders can make it, when even that is over)."""
    total = sum(part.expanded for part in parts)
    if total <= limit:
        return set()
    order = sorted(
        (k for k, part in enumerate(parts) if part.saving > 0), key=lambda k: (-parts[k].saving, k)
    )
    collapsed: set[int] = set()
    for k in order:
        if total <= limit:
            break
        collapsed.add(k)
        total -= parts[k].saving
    return collapsed


def bounded_bytes(parts: Sequence[PartCost], limit: int) -> int:
    """The row's bytes once :func:`gaps_to_collapse` has been applied."""
    collapsed = gaps_to_collapse(parts, limit)
    return sum(
        part.placeholder if k in collapsed and part.placeholder is not None else part.expanded
        for k, part in enumerate(parts)
    )
