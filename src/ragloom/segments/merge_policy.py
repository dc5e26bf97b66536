"""When to merge segments: a size-tiered (logarithmic) policy, as Lucene's LogMergePolicy.

Segments are grouped into levels by size (level L holds sizes around `floor * factor**L`);
as soon as `factor` adjacent segments share a level they are merged into one of the next
level. Every chunk is therefore rewritten about log_factor(N / floor) times in all, so the
cost per write stays proportional to the write, never to the index. A segment that has lost
more than `max_dead` of its chunks to deletes is rewritten alone to drop them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def level(size: int, factor: int, floor: int) -> int:
    """The size tier of a segment of `size` chunks."""
    return int(math.log(max(size, floor) / floor, factor) + 1e-9)


def plan_merge(
    sizes: Sequence[int],
    dead: Sequence[int],
    factor: int = 10,
    floor: int = 1000,
    max_dead: float = 0.3,
) -> tuple[int, int] | None:
    """The range [i, j) of adjacent segments to merge next, or None.

    `sizes` are the segments' chunk counts (deleted ones included), oldest first, and `dead`
    how many of each are deleted.
    """
    levels = [level(s - d, factor, floor) for s, d in zip(sizes, dead)]
    end = len(levels)
    while end > 0:
        start = end - 1
        while start > 0 and levels[start - 1] == levels[end - 1]:
            start -= 1
        if end - start >= factor:
            return end - factor, end
        end = start
    for i, (size, gone) in enumerate(zip(sizes, dead)):
        if size and gone > max_dead * size:
            return i, i + 1
    return None
