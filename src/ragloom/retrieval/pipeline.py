"""The candidate a search ranks, and its order: ranks and scores that tie to 6 significant
digits, the weak dense-only hits, the minimum score, and the top k (then hydration,
`ragloom.engine.hydrate`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields, replace
from typing import Any, NamedTuple

import numpy as np

LEXICAL, DENSE = "lexical", "dense"
# Scores equal to this many significant digits are ties: a cosine computed in float32 differs
# by a unit in its last place between segments and stores (0.69751197 and 0.69751191 for one
# vector), a BM25 sum in its 16th digit between SQLite and PostgreSQL.
TIE_DIGITS = 6


@dataclass(frozen=True)
class Candidate:
    """A chunk row on its way through the pipeline, carrying each stage's provenance."""

    row_id: int
    score: float
    match: str  # "lexical", "dense" or "both"
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    fused_score: float | None = None
    fused_by: str | None = None  # "adaptive", "rrf" or "weighted" when legs were fused
    lexical_share: float | None = None  # adaptive fusion: BM25 over the query's ceiling
    dense_share: float | None = None  # adaptive fusion: the cosine counted (0 if negative)
    fusion_detail: Any = None  # adaptive fusion: the query's weights and why (QueryWeights)
    metadata_score: float | None = None  # share of `prefer` rules matched (weighted fusion)
    boosts: tuple[tuple[str, float], ...] = ()  # (label, factor) of each boost applied
    diversity: tuple[str, ...] = ()  # what diversity stages decided about this candidate
    variants: tuple[tuple[int, int], ...] = ()  # (query variant, rank in its ranking)
    hop: int | None = None  # the multi-hop round that first found this chunk
    rerank_score: float | None = None  # the reranker's relevance score
    reranked_by: str | None = None  # the reranker's name
    rank_before_rerank: int | None = None


# Every field with a default, in Candidate's order: the template hot paths fill in.
CANDIDATE_DEFAULTS = {f.name: f.default for f in fields(Candidate) if f.default is not MISSING}
_TIE_SPEC = f".{TIE_DIGITS}g"
_APART = 2.0 * 10.0 ** (1 - TIE_DIGITS)  # neighbours further apart (relative) never tie
_FEW = 16  # below this many scores, `tie_ranks` rounds them all


def make_candidate(values: dict[str, Any]) -> Candidate:
    """`Candidate(**values)` for the hot paths: the frozen dataclass's `__init__` sets its 20
    fields one `object.__setattr__` at a time (about 5 us; a leg makes one per row)."""
    return candidate_of({**CANDIDATE_DEFAULTS, **values})


def candidate_of(fields: dict[str, Any]) -> Candidate:
    """A candidate holding `fields`, a dict with every one of Candidate's fields (taken as it
    is, not copied): `make_candidate` without merging in the defaults."""
    new = object.__new__(Candidate)
    object.__setattr__(new, "__dict__", fields)
    return new


def evolve(cand: Candidate, **changes: Any) -> Candidate:
    """`dataclasses.replace` for the hot paths: the same new candidate, without running the
    generated `__init__` over its 20 fields again (fusion makes one per merged row per query;
    `replace` costs about 10 us each, a millisecond a hybrid query)."""
    fields = cand.__dict__
    unknown = changes.keys() - fields.keys()
    if unknown:
        raise TypeError(f"Candidate has no field {sorted(unknown)[0]!r}")
    new = object.__new__(Candidate)
    new.__dict__.update(fields)
    new.__dict__.update(changes)
    return new


def tie_ranks(scores: Sequence[float] | np.ndarray) -> list[int]:
    """1-based ranks of a leg's scores (best first) where rows with equal scores (to
    TIE_DIGITS) share the rank of the first of them.

    Only neighbours that could round alike are rounded (`tie_score`): equal ones tie, and
    ones further apart than 2 units in the 6th significant digit of the larger cannot (each
    moves by at most half a unit when rounded), so a leg's 40 scores cost a few array
    operations instead of 40 `format` calls (also among subnormals: below 1e-318, where
    the bound would be within a spacing of them, 6 digits tell every subnormal apart)."""
    if len(scores) < _FEW:  # the arrays' fixed cost is more than comparing a few scores
        return _tie_ranks_few([float(s) for s in scores])
    values = np.asarray(scores, np.float64)
    ranks = list(range(1, len(values) + 1))
    size = np.abs(values)
    with np.errstate(over="ignore", invalid="ignore"):
        apart = np.abs(values[1:] - values[:-1]) > np.maximum(size[1:], size[:-1]) * _APART
    for i in np.flatnonzero(~apart).tolist():  # in order: a tie takes its first row's rank
        after, before = values[i + 1], values[i]
        if after == before or tie_score(float(after)) == tie_score(float(before)):
            ranks[i + 1] = ranks[i]
    return ranks


def tie_rank(scores: Sequence[float], i: int) -> int:
    """`tie_ranks(scores)[i]` alone: the rank of the first score tied with the i-th (a top
    k built from a fused pool needs the ranks of a few rows of each leg)."""
    while i and _tied(scores[i - 1], scores[i]):
        i -= 1
    return i + 1


def _tie_ranks_few(values: list[float]) -> list[int]:
    """`tie_ranks` of a few scores: the same neighbour test in plain Python."""
    ranks = list(range(1, len(values) + 1))
    for i in range(1, len(values)):
        if _tied(values[i - 1], values[i]):
            ranks[i] = ranks[i - 1]
    return ranks


def _tied(before: float, after: float) -> bool:
    """Whether two neighbouring scores round alike (`tie_score`), rounding them only when
    they are close enough that they could."""
    if after == before:
        return True
    if abs(after - before) > max(abs(after), abs(before)) * _APART:
        return False
    return tie_score(after) == tie_score(before)


def leg_candidates(
    leg: str, row_ids: np.ndarray, scores: np.ndarray, alone: bool = False
) -> list[Candidate]:
    """Wrap one leg's ranked output as candidates (ranks are 1-based).

    `alone` marks a single-leg search, where the leg's score is also the fused score. Rows
    with equal scores (to TIE_DIGITS) share the rank of the first of them, so that rank-based
    fusion (RRF) keeps them tied rather than ordered by the rows the store had first.
    """
    rank_of, score_of = (
        ("lexical_rank", "lexical_score") if leg == LEXICAL else ("dense_rank", "dense_score")
    )
    match = LEXICAL if leg == LEXICAL else DENSE
    values = scores.tolist()
    return [
        make_candidate(
            {
                "row_id": row,
                "score": score,
                "match": match,
                rank_of: rank,
                score_of: score,
                "fused_score": score if alone else None,
            }
        )
        for row, score, rank in zip(row_ids.tolist(), values, tie_ranks(scores))
    ]


def drop_weak_dense_only(candidates: Sequence[Candidate], min_similarity: float) -> list[Candidate]:
    """Drop hits found only by the dense leg whose cosine is below `min_similarity`."""
    return [
        c
        for c in candidates
        if c.match != DENSE or (c.dense_score is not None and c.dense_score >= min_similarity)
    ]


def head_positions(
    order: Sequence[int], scores: Sequence[float], weak: Sequence[bool], keep: int | None
) -> tuple[list[int], int]:
    """The positions of `order` (best first by `scores`) left once the `weak` ones are
    dropped, and how many were; with `keep`, only those a top `keep` can hold: the first
    `keep` and the ones tied with the last of them (`head_of`'s ties at the cut). No cut
    when a score is NaN or infinite (`head_of` then rounds every score)."""
    kept = [m for m in order if not weak[m]]
    dropped = len(order) - len(kept)
    if keep is None or keep < 1 or len(kept) <= keep:
        return kept, dropped
    if not math.isfinite(sum(scores)):  # the weak ones too: no cut is always exact
        return kept, dropped
    last, end = scores[kept[keep - 1]], keep
    while end < len(kept) and _tied(last, scores[kept[end]]):
        end += 1
    return kept[:end], dropped


def tie_score(score: float) -> float:
    """A score as the order compares it (to TIE_DIGITS significant digits)."""
    return float(format(score, _TIE_SPEC))


class Head(NamedTuple):
    """A ranking's best `k` before the ties among them are put in their stable order: the
    first k as they stand when no two of them tie (`done`), else the candidates down to the
    k-th best tie score, best first, each with a key shared by exactly the rows of its tie
    (`pairs`), how many rows each tie key holds (`sizes`), and the rows of those ties
    (`tied`), whose stable keys order them."""

    k: int
    done: list[Candidate] | None = None
    pairs: Sequence[tuple[float, Candidate]] = ()
    tied: Sequence[int] = ()
    sizes: Mapping[float, int] = {}


def head_of(candidates: Sequence[Candidate], k: int) -> Head:
    """The best `k` in one total order, score to TIE_DIGITS significant digits first; what
    still orders a tie, the tied rows' stable keys (document id, chunk number), comes after
    (`ordered`), so that only a ranking with ties at its head reads them."""
    if _untied_head(candidates, k):  # already best first, no tie among the k and at the cut
        return Head(k, list(candidates[:k]))
    pairs = _head(candidates, k)  # the top k and ties at the cut, as (tie key, candidate)
    sizes = Counter(tie for tie, _ in pairs)
    return Head(k, None, pairs, [c.row_id for tie, c in pairs if sizes[tie] > 1], sizes)


def ordered(head: Head, keys: Mapping[int, tuple[Any, ...]] | None = None) -> list[Candidate]:
    """The top k of `head`, tied rows ordered by their stable `keys` (rows of `head.tied`,
    {} when none tie; without keys, None, earlier candidates win), so that equal scores rank
    alike on every store whatever its row ids. Tied hits all carry the best score of their
    tie, so that the scores shown never rise down the list."""
    if head.done is not None:
        return head.done
    pairs, sizes = head.pairs, head.sizes
    if keys is not None:
        pairs = sorted(pairs, key=lambda p: (-p[0], keys.get(p[1].row_id, ())))
    best: dict[float, float] = {}
    for tie, c in pairs:
        best[tie] = max(best.get(tie, c.score), c.score)
    return [replace(c, score=best[tie]) if sizes[tie] > 1 else c for tie, c in pairs[: head.k]]


def _untied_head(candidates: Sequence[Candidate], k: int) -> bool:
    """Whether the first k candidates are `head_of` as they stand (`untied` scores: the
    common case of one leg's ranking; a third of `_head`'s cost)."""
    return untied([c.score for c in candidates], k)


def untied(scores: list[float], k: int) -> bool:
    """Whether the first k scores (and the one after them) come best first with no two
    neighbours tied, and none later is above the one after them: no tie in the top k or at
    its cut. Rounding keeps order, so a later score cannot tie the k-th either."""
    if k < 1 or not math.isfinite(sum(scores)):  # NaN or infinities: the general path
        return False
    head = scores[: k + 1]
    for before, after in zip(head, head[1:]):
        if after >= before or _tied(before, after):
            return False
    return len(scores) <= k + 1 or max(scores[k + 1 :]) <= head[k]


def _head(candidates: Sequence[Candidate], k: int) -> list[tuple[float, Candidate]]:
    """The candidates whose tie score reaches the k-th best one's, best first (stable among
    equal tie scores), each with a key shared by exactly the rows of its tie. Rounding to
    TIE_DIGITS never reverses an order, so these are the first rows by raw score, and only
    neighbours close enough to tie are rounded (a hybrid query fuses about 80 candidates
    for a top 10)."""
    scores = [c.score for c in candidates]
    total = sum(scores)  # NaN when a score is NaN (or both infinities are there)
    if k < 1 or total != total:  # NaN has no order: round every score
        ranked = sorted(((tie_score(s), c) for s, c in zip(scores, candidates)), key=_first)
        if not ranked:
            return []
        cut = ranked[min(k, len(ranked)) - 1][0]
        return [p for p in ranked if p[0] >= cut]
    order = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)  # stable too
    last = min(k, len(order)) - 1
    runs: list[list[int]] = []  # runs of equal tie scores (contiguous: rounding keeps order)
    for position, i in enumerate(order):
        if position and _tied(scores[order[position - 1]], scores[i]):
            runs[-1].append(i)
        elif position > last:
            break
        else:
            runs.append([i])
    # a run's key is its best raw score: it orders, counts and names the run as its tie
    # score would (only `ordered` reads it), without rounding every score
    return [(scores[run[0]], candidates[i]) for run in runs for i in sorted(run)]


def _first(pair: tuple[float, Candidate]) -> float:
    return -pair[0]
