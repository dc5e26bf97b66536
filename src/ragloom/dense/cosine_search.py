"""The dense leg over one version of a collection (`ragloom.segments.view`): cosine top k of
the live chunks with a vector that pass the filter, exactly (one matrix product) or through
a segment's approximate-search graph (`ragloom.dense.graph`) when it has one and the filter
leaves many chunks; the graph's candidates are scored exactly, so scores are true cosines."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragloom.dense import dots
from ragloom.dense.topn import best_of
from ragloom.filters import FilterNode
from ragloom.segments.view import CollectionView, Part

_NO_DOCS = np.zeros(0, np.int64)
EXACT_BELOW = 30_000  # eligible vectors scanned exactly rather than through the graph
EXACT_SHARE = 0.05
# A part's pool of up to this many scored chunks goes to the view uncut: ordering every
# part's pool once costs less than cutting each (a graph's 51 candidates and a small
# segment's 200 chunks: 16-20 us a cut).
FEW_SCORED = 512
# A view of fewer live chunks is scored by numpy, the kernels never loaded for it (as fast
# there: 5,000 rows of 384 floats, 100 us either way); the rule reads only the view, so every
# search of one version takes one path, whatever this process has loaded.
COMPILED_FROM = 20_000


def search_view(
    view: CollectionView,
    query: np.ndarray,
    k: int,
    where: FilterNode | None = None,
    where_key: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top k (rows, cosine) over live chunks with vectors passing the filter."""
    if k <= 0:
        return _NO_DOCS, np.zeros(0, np.float32)
    query = np.asarray(query, np.float32)
    compiled = view.n_live >= COMPILED_FROM and dots.compiled()
    rows, scores = [], []
    for part in view.parts:
        eligible = part.eligible(where, where_key)
        docs, sims = search_part(part, query, k, eligible, view.epoch, where_key, compiled)
        if len(docs):
            rows.append(part.segment.rows[docs])
            scores.append(sims)
    if not rows:
        return _NO_DOCS, np.zeros(0, np.float32)
    all_rows = rows[0] if len(rows) == 1 else np.concatenate(rows)
    all_scores = scores[0] if len(scores) == 1 else np.concatenate(scores)
    order = np.lexsort((all_rows, -all_scores))[:k]
    return all_rows[order], all_scores[order]


def search_part(
    part: Part,
    query: np.ndarray,
    k: int,
    eligible: np.ndarray | None,
    epoch: int,
    key: Any = None,
    compiled: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """(chunk numbers, cosine) holding a part's top k among its live chunks with a vector:
    through the segment's graph when it has one and the filter leaves many chunks, else
    exactly. A pool of up to `FEW_SCORED` is returned whole (the view orders every part's
    pool at once); a larger one is cut to its best k first. `compiled`: the kernels may
    score (`ragloom.dense.dots`, `ragloom.dense.topn`), else numpy does."""
    seg = part.segment
    pools = []
    if seg.vectors is not None and seg.vector_epoch == epoch:
        ok = _searchable(part, eligible, epoch, key)
        docs = _approximate(part, query, k, ok, epoch, key)
        if docs is None:
            docs = part.listed(ok)  # (`ok` is remembered per filter: so is its list)
        if len(docs):
            pools.append((docs, dots.row_dots(seg.vectors, docs, query, compiled)))
    if part.late_vectors is not None and len(part.late_docs):
        docs = part.late_docs
        scores = dots.row_dots(part.late_vectors, None, query, compiled)
        if eligible is not None:
            keep = eligible[docs]
            docs, scores = docs[keep], scores[keep]
        pools.append((docs, scores))
    if not pools:
        return _NO_DOCS, np.zeros(0, np.float32)
    docs = pools[0][0] if len(pools) == 1 else np.concatenate([p[0] for p in pools])
    scores = pools[0][1] if len(pools) == 1 else np.concatenate([p[1] for p in pools])
    scores = scores.astype(np.float32, copy=False)
    if len(docs) <= max(k, FEW_SCORED):
        return docs, scores
    best = best_of(scores, k, compiled)
    return docs[best], scores[best]


def _searchable(part: Part, eligible: np.ndarray | None, epoch: int, key: Any) -> np.ndarray:
    """Chunks whose own segment vector may be returned: it exists (no late vector replaces
    it), the chunk is live and passes the filter. Remembered per part and filter."""
    cache_key = ("searchable", epoch, key)
    mask = part.cache.get(cache_key)
    if mask is None:
        seg = part.segment
        mask = np.array(seg.has_vector, bool)  # type: ignore[arg-type]
        mask[part.late_docs] = False  # a late vector replaces the segment's own
        if eligible is not None:
            mask &= eligible
        elif part.dead is not None:
            mask &= ~part.dead
        part.cache[cache_key] = mask
    return mask


def _mask_facts(part: Part, ok: np.ndarray, epoch: int, key: Any) -> tuple[int, np.ndarray | None]:
    """How many chunks `_searchable`'s mask allows, and its bits packed for the graph's
    selector (None when it allows every chunk: the graph then needs no selector).
    Remembered beside the mask: counting 1M flags took 0.7 ms a query here."""
    cache_key = ("mask facts", epoch, key)
    facts = part.cache.get(cache_key)
    if facts is None:
        count = int(ok.sum())
        packed = None if count == len(ok) else np.packbits(ok, bitorder="little")
        facts = part.cache[cache_key] = (count, packed)
    return facts


def _approximate(
    part: Part, query: np.ndarray, k: int, ok: np.ndarray, epoch: int, key: Any
) -> np.ndarray | None:
    """Candidates from the graph (to be scored exactly), or None to scan exactly."""
    ann = part.segment.ann
    if ann is None:
        return None
    count, packed = _mask_facts(part, ok, epoch, key)
    if count <= EXACT_BELOW or count < EXACT_SHARE * part.segment.n:
        return None  # a selective filter: the few eligible vectors are scanned exactly
    want = max(3 * k, k + 40)
    docs = ann.search(query, want, None if packed is None else ok, packed=packed)
    return docs if len(docs) >= min(k, count) else None
