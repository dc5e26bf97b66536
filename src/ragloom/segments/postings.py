"""A chunk's forward postings (term ids and their frequencies), compactly encoded.

Stored with each chunk row: they let a segment be rebuilt and BM25 statistics be corrected
when the chunk is deleted. Term ids are sorted and delta-encoded; deltas and frequencies use
the narrowest of uint8/uint16/uint32 that fits, so a typical chunk costs about 3 bytes a term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_WIDTHS = (np.dtype("<u1"), np.dtype("<u2"), np.dtype("<u4"))
_HEADER = np.dtype([("count", "<u4"), ("delta_width", "u1"), ("tf_width", "u1")])


def _narrowest(values: np.ndarray) -> int:
    top = int(values.max()) if len(values) else 0
    return 0 if top < 2**8 else (1 if top < 2**16 else 2)


@dataclass(frozen=True, eq=False)
class Postings:
    """One chunk's distinct term ids (ascending) and how often each occurs."""

    term_ids: np.ndarray  # uint32, ascending, unique
    tfs: np.ndarray  # uint32, same length

    @property
    def length(self) -> int:
        """The chunk's length in terms (BM25's document length)."""
        return int(self.tfs.sum(dtype=np.int64))

    def to_bytes(self) -> bytes:
        """Compact encoding: header, delta-encoded term ids, frequencies."""
        ids = self.term_ids.astype(np.int64)
        deltas = np.diff(ids, prepend=0)
        dw, tw = _narrowest(deltas), _narrowest(self.tfs)
        header = np.array([(len(ids), dw, tw)], _HEADER).tobytes()
        body = deltas.astype(_WIDTHS[dw]).tobytes() + self.tfs.astype(_WIDTHS[tw]).tobytes()
        return header + body

    @classmethod
    def from_bytes(cls, blob: bytes) -> Postings:
        header = np.frombuffer(blob, _HEADER, count=1)[0]
        count = int(header["count"])
        dw, tw = _WIDTHS[header["delta_width"]], _WIDTHS[header["tf_width"]]
        start = _HEADER.itemsize
        deltas = np.frombuffer(blob, dw, count, start)
        tfs = np.frombuffer(blob, tw, count, start + count * dw.itemsize)
        return cls(np.cumsum(deltas, dtype=np.int64).astype(np.uint32), tfs.astype(np.uint32))


def encode_flat(ids: np.ndarray, tfs: np.ndarray, counts: np.ndarray) -> list[bytes]:
    """Encode chunks given flat (term ids, frequencies, terms per chunk)."""
    if not len(counts):
        return []
    ids = ids.astype(np.int64)
    tfs = tfs.astype(np.int64)
    counts = np.asarray(counts, np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    deltas = np.diff(ids, prepend=0)
    nonempty = counts > 0
    deltas[starts[nonempty]] = ids[starts[nonempty]]  # each chunk's first id is absolute
    dmax = np.zeros(len(counts), np.int64)
    tmax = np.zeros(len(counts), np.int64)
    if nonempty.any():
        dmax[nonempty] = np.maximum.reduceat(deltas, starts[nonempty])
        tmax[nonempty] = np.maximum.reduceat(tfs, starts[nonempty])
    dws = np.where(dmax < 2**8, 0, np.where(dmax < 2**16, 1, 2))
    tws = np.where(tmax < 2**8, 0, np.where(tmax < 2**16, 1, 2))
    encoded_d = {w: deltas.astype(_WIDTHS[w]).tobytes() for w in np.unique(dws).tolist()}
    encoded_t = {w: tfs.astype(_WIDTHS[w]).tobytes() for w in np.unique(tws).tolist()}
    headers = np.zeros(len(counts), _HEADER)
    headers["count"], headers["delta_width"], headers["tf_width"] = counts, dws, tws
    header_bytes = headers.tobytes()
    size = _HEADER.itemsize
    out = []
    for i, (lo, n, dw, tw) in enumerate(
        zip(starts.tolist(), counts.tolist(), dws.tolist(), tws.tolist())
    ):
        a, b = _WIDTHS[dw].itemsize, _WIDTHS[tw].itemsize
        out.append(
            header_bytes[i * size : (i + 1) * size]
            + encoded_d[dw][lo * a : (lo + n) * a]
            + encoded_t[tw][lo * b : (lo + n) * b]
        )
    return out


def concat_ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """All positions start..start+size-1 of several ranges, concatenated."""
    total = int(sizes.sum())
    if not total:
        return np.zeros(0, np.int64)
    shift = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    return np.arange(total, dtype=np.int64) + shift


def decode_many(blobs: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many encoded chunks at once: (term ids, frequencies, terms per chunk), flat.

    The inverse of `to_bytes`, vectorized over the batch (opening an index decodes the
    newest chunks this way)."""
    if not blobs:
        empty = np.zeros(0, np.uint32)
        return empty, empty, np.zeros(0, np.int64)
    sizes = np.fromiter(map(len, blobs), np.int64, len(blobs))
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    raw = np.frombuffer(b"".join(blobs), np.uint8)
    header = raw[concat_ranges(starts, np.full(len(blobs), _HEADER.itemsize, np.int64))]
    header = header.view(_HEADER)
    counts = header["count"].astype(np.int64)
    dws = np.array([1, 2, 4])[header["delta_width"]]
    tws = np.array([1, 2, 4])[header["tf_width"]]
    body = starts + _HEADER.itemsize

    def column(at: np.ndarray, widths: np.ndarray) -> np.ndarray:
        out = np.zeros(int(counts.sum()), np.int64)
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))
        for width, dtype in ((1, "<u1"), (2, "<u2"), (4, "<u4")):
            chosen = widths == width
            if not chosen.any():
                continue
            values = raw[concat_ranges(at[chosen], counts[chosen] * width)].view(dtype)
            out[concat_ranges(first[chosen], counts[chosen])] = values
        return out

    deltas = column(body, dws)
    tfs = column(body + counts * dws, tws)
    running = np.concatenate(([0], np.cumsum(deltas)))
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    ids = running[1:] - np.repeat(running[first], counts)  # each chunk restarts from 0
    return ids.astype(np.uint32), tfs.astype(np.uint32), counts


def count_ids(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many chunks' postings at once, flat (term ids, frequencies, terms per chunk, each
    chunk's ids ascending), from every chunk's term ids (repeats kept) one
    chunk after another, `lengths` terms each."""
    ids = np.asarray(ids, np.int64)
    lengths = np.asarray(lengths, np.int64)
    width = int(ids.max()) + 1 if len(ids) else 1
    keys = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths) * width + ids
    unique, counts = np.unique(keys, return_counts=True)
    chunk_of, term_of = np.divmod(unique, width)
    per_chunk = np.bincount(chunk_of, minlength=len(lengths)).astype(np.int64)
    return term_of.astype(np.uint32), counts.astype(np.uint32), per_chunk
