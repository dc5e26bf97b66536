"""Reading a shard set: one snapshot per reachable shard, opened together (a clean cut).

BM25 uses the statistics of the whole set: live chunks, total length and each query term's
document frequency are summed over the shards, the idf and average length computed from the
sums exactly as one server computes them from its own, and each shard scores its chunks with
those numbers (`ragloom.store.postgres.leg_sql.scored`). A chunk's score needs only its own
postings and these numbers, so it is the same float one server would give it; the set's top
k is the merge of each shard's top k. Dense search runs on each shard's own HNSW index, the
candidates merged by score. Filters go to every shard as SQL. Shards run in parallel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np
import psycopg

from ragloom.config import CollectionConfig
from ragloom.errors import NotFound
from ragloom.filters import FilterNode
from ragloom.lexical.bm25 import BM25Params, bm25_idf
from ragloom.store.base import CollectionReader, DenseQuery, LexicalQuery, Ranked, Snapshot
from ragloom.store.postgres import leg_sql
from ragloom.store.postgres.snapshot import PostgresSnapshot, with_chunks
from ragloom.store.records import CollectionInfo, StoredChunk, StoredDocument
from ragloom.store.shards.cut import HeldLocks
from ragloom.store.shards.fanout import Shards
from ragloom.store.shards.placement import (
    by_shard,
    global_row,
    global_rows,
    merge_top,
    rows_by_shard,
    shard_of,
)

T = TypeVar("T")
WITH_CHUNKS = 100  # a shard's top k up to this size comes with its chunks (no hydration)


class ShardedCollection(CollectionReader):
    """One collection across the shards of a snapshot."""

    def __init__(self, snapshot: ShardedSnapshot, name: str, readers: dict[int, Any]) -> None:
        self.snapshot = snapshot
        self.readers = readers  # shard -> PostgresCollection
        first = readers[min(readers)]
        self.info = CollectionInfo(first.info.id, name, first.info.config)
        self.config = CollectionConfig.from_dict(first.info.config)
        self.chunks = sum(r.row.chunks for r in readers.values())
        self.total_length = sum(r.row.total_length for r in readers.values())
        self._frequencies: dict[str, int] = {}  # terms asked in this snapshot -> summed df

    def missing_shards(self) -> list[str]:
        return list(self.snapshot.missing.values())

    # -- legs -------------------------------------------------------------------------
    def lexical(self, query: LexicalQuery, k: int) -> Ranked:
        return self._lexical(query.terms, query.weights, k, query.params, query.where)

    def _lexical(
        self,
        terms: Sequence[str],
        term_weights: Sequence[float] | None,
        k: int,
        params: BM25Params,
        where: FilterNode | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        empty = (np.zeros(0, np.int64), np.zeros(0, np.float64))
        if k <= 0 or not terms or not self.chunks:
            return empty
        counts = leg_sql.query_counts(terms, term_weights)
        frequencies = self.frequencies(list(counts))
        if not frequencies:
            return empty
        names = [t for t in counts if t in frequencies]
        weights = [counts[t] * bm25_idf(frequencies[t], self.chunks) for t in names]
        avgdl = self.total_length / self.chunks

        def score(i: int, reader: Any) -> tuple[np.ndarray, np.ndarray]:
            if not reader.row.chunks:
                return empty
            query = leg_sql.scored_query(reader, names, weights, avgdl, k, params, where)
            if k > WITH_CHUNKS:
                rows, scores = leg_sql.scored(reader, query)
                return global_rows(rows, i), scores
            return self.snapshot.keep(i, with_chunks(reader.conn, *query))

        return merge_top(list(self.snapshot.each(score, self.readers).values()), k)

    def frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """Each term's live chunks summed over the shards (terms none holds left out); asked
        once per snapshot (a search asks again for its explanations)."""
        known = self._frequencies
        asked = [t for t in dict.fromkeys(terms) if t not in known]
        if asked:
            found = dict.fromkeys(asked, 0)
            work = self.snapshot.each(lambda i, r: leg_sql.term_frequencies(r, asked), self.readers)
            for part in work.values():
                for term, df in part.items():
                    found[term] += df
            known.update(found)
        return {t: known[t] for t in terms if known[t] > 0}

    def document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        return self.frequencies(list(set(terms))), self.chunks

    def dense(self, query: DenseQuery, k: int) -> Ranked:
        def search(i: int, reader: Any) -> tuple[np.ndarray, np.ndarray]:
            rows, scores = leg_sql.dense(reader, query.vector, k, query.where)
            return global_rows(rows, i), scores

        rows, scores = merge_top(list(self.snapshot.each(search, self.readers).values()), k)
        return rows, scores.astype(np.float32)

    # -- lookups ----------------------------------------------------------------------
    def metadata(self, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        wanted = {i: local for i, local in rows_by_shard(rows).items() if i in self.readers}
        found = self.snapshot.each(lambda i, local: self.readers[i].metadata(local), wanted)
        for i, part in found.items():
            out.update((global_row(r, i), m) for r, m in part.items())
        return out

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        dimension = int((self.info.config.get("embedding") or {}).get("dimension") or 0)
        out = np.zeros((len(rows), dimension), np.float32)
        position = {int(r): n for n, r in enumerate(rows)}
        for i, local in rows_by_shard(rows).items():
            if i in self.readers:
                found = self.readers[i].vectors(local)
                if found.shape[1] == dimension:
                    out[[position[global_row(r, i)] for r in local]] = found
        return out

    def counts(self) -> dict[str, Any]:
        self.snapshot.release_all()
        parts = [r.counts() for r in self.readers.values()]
        terms: set[str] = set()
        for reader in self.readers.values():
            terms.update(
                t
                for (t,) in reader.conn.execute(
                    "SELECT term FROM term_stats WHERE collection_id = %s AND df > 0",
                    (reader.row.id,),
                )
            )
        out = {key: sum(p[key] for p in parts) for key in ("documents", "chunks", "vectors")}
        out["pending"] = sum(p["pending"] for p in parts)
        out["terms"] = len(terms)
        out["avg_chunk_terms"] = round(self.total_length / self.chunks, 2) if self.chunks else 0.0
        return out

    def size(self) -> int:
        return self.chunks

    def pending(self) -> int:
        return sum(r.pending() for r in self.readers.values())

    def field_values(self, key: str) -> list[Any]:
        found = self.snapshot.each(lambda i, r: r.field_values(key), self.readers)
        return [value for values in found.values() for value in values]

    def chunk_documents(self) -> dict[int, str]:
        self.snapshot.release_all()
        out: dict[int, str] = {}
        for i, reader in self.readers.items():
            out.update((global_row(r, i), d) for r, d in reader.chunk_documents().items())
        return out


class ShardedSnapshot(Snapshot):
    """A snapshot of every reachable shard, taken as one cut."""

    def __init__(
        self,
        store: Shards,
        parts: dict[int, Any],
        missing: dict[int, str],
        locks: dict[int, psycopg.Connection] | None = None,
    ) -> None:
        self.store = store
        self.parts = parts  # shard -> PostgresSnapshot
        self.missing = missing  # shard -> why it is left out
        self.generation = sum(p.generation for p in parts.values())
        self._readers: dict[str, ShardedCollection] = {}
        self.held = HeldLocks(store.schema, parts, locks or {})
        self.hydrated: dict[int, StoredChunk] = {}  # chunks read with their scores

    def each(self, work: Callable[[int, Any], T], items: dict[int, Any]) -> dict[int, T]:
        """`work(shard, item)` on every shard at once (each shard's first lets go of its
        commit lock, `HeldLocks.on`)."""
        return self.held.each(work, items)

    def release_all(self) -> None:
        self.held.release_all()

    def finish(self) -> None:
        self.held.finish()

    def _homes(self, doc_id: str) -> list[int]:
        """The shards that may hold `doc_id`: its home, and while the set grows its old one."""
        home = shard_of(doc_id, self.store.count)
        moving = self.store.moving_from
        old = shard_of(doc_id, moving) if moving else home
        return [home] if old == home else [home, old]

    def _groups(self, doc_ids: Sequence[str]) -> dict[int, list[str]]:
        groups = by_shard(doc_ids, self.store.count)
        moving = self.store.moving_from
        if moving:
            for i, ids in by_shard(doc_ids, moving).items():
                mine = groups.setdefault(i, [])
                known = set(mine)
                mine.extend(d for d in ids if d not in known)
        return {i: ids for i, ids in groups.items() if i in self.parts}

    def collections(self) -> dict[str, CollectionInfo]:
        out: dict[str, CollectionInfo] = {}
        for i in sorted(self.parts):
            for name, info in self.parts[i].collections().items():
                out.setdefault(name, info)
        return out

    def collection(self, name: str) -> ShardedCollection:
        reader = self._readers.get(name)
        if reader is None:
            readers = {i: p.collection(name) for i, p in self.parts.items() if name in p.rows}
            if not readers:
                raise NotFound(
                    f"no collection {name!r} in {self.store.location}",
                    f"known collections: {', '.join(sorted(self.collections())) or 'none yet'}",
                )
            reader = self._readers[name] = ShardedCollection(self, name, readers)
        return reader

    def content_hashes(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str]:
        return self._at_homes(lambda part, ids: part.content_hashes(collection, ids), doc_ids)

    def file_ids_by_source(self, collection: str, sources: Sequence[str]) -> dict[str, list[str]]:
        self.release_all()
        out: dict[str, list[str]] = {}
        for part in self.parts.values():
            for source, ids in part.file_ids_by_source(collection, sources).items():
                out.setdefault(source, []).extend(ids)
        return out

    def file_documents_under(self, collection: str, folder: str) -> dict[str, str]:
        self.release_all()
        out: dict[str, str] = {}
        for part in self.parts.values():
            out.update(part.file_documents_under(collection, folder))
        return out

    def sources_of(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str | None]:
        return self._at_homes(lambda part, ids: part.sources_of(collection, ids), doc_ids)

    def document_vectors(
        self, collection: CollectionInfo, doc_ids: Sequence[str], wanted: set[bytes]
    ) -> dict[bytes, np.ndarray]:
        self.release_all()
        out: dict[bytes, np.ndarray] = {}
        for i, ids in self._groups(doc_ids).items():
            part = self.parts[i]
            if collection.name in part.rows:
                local = part.collections()[collection.name]
                out.update(part.document_vectors(local, ids, wanted))
        return out

    def cached_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        self.release_all()
        out: dict[bytes, np.ndarray] = {}
        for part in self.parts.values():
            rest = [h for h in hashes if h not in out]
            if rest:
                out.update(part.cached_vectors(model, rest))
        return out

    def chunk_counts(self, collection: str, doc_ids: Sequence[str]) -> dict[str, int]:
        return self._at_homes(lambda part, ids: part.chunk_counts(collection, ids), doc_ids)

    def _at_homes(
        self, lookup: Callable[[PostgresSnapshot, list[str]], dict[str, T]], doc_ids: Sequence[str]
    ) -> dict[str, T]:
        """`lookup(shard's snapshot, ids)` of each shard the documents live on, put together."""
        self.release_all()
        out: dict[str, T] = {}
        for i, ids in self._groups(doc_ids).items():
            out.update(lookup(self.parts[i], ids))
        return out

    def keep(self, i: int, found: list[tuple[int, float, StoredChunk]]) -> tuple:
        """A shard's ranked (row, score, chunk)s as global (rows, scores); the chunks kept
        for `chunks` (a search's hits then need no round trip of their own)."""
        kept = self.hydrated
        if len(kept) > 20 * WITH_CHUNKS:  # a long read (an evaluation): keep the newest
            kept.clear()
        rows = np.array([global_row(r, i) for r, _, _ in found], np.int64)
        for row, (_, _, chunk) in zip(rows.tolist(), found):
            kept[row] = replace(chunk, row_id=row)
        return rows, np.array([score for _, score, _ in found], np.float64)

    def chunks(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        kept = self.hydrated
        out = {int(r): kept[int(r)] for r in rows if int(r) in kept}
        rest = [r for r in rows if int(r) not in out]
        wanted = {i: local for i, local in rows_by_shard(rest).items() if i in self.parts}
        for i, found in self.each(lambda i, local: self.parts[i].chunks(local), wanted).items():
            for r, chunk in found.items():
                row = global_row(r, i)
                out[row] = replace(chunk, row_id=row)
        return out

    def document_text(self, collection: str, doc_id: str) -> str:
        self.release_all()
        for i in self._homes(doc_id):
            if i not in self.parts:
                down = self.missing.get(i, "its shard is down")
                raise NotFound(f"no document {doc_id!r} in collection {collection!r} ({down})")
            try:
                return self.parts[i].document_text(collection, doc_id)
            except NotFound:
                continue
        raise NotFound(f"no document {doc_id!r} in collection {collection!r}")

    def documents(
        self, collection: str | None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        self.release_all()
        if collection is not None and collection not in self.collections():
            raise NotFound(f"no collection {collection!r} in {self.store.location}")
        pages: list[StoredDocument] = []
        for part in self.parts.values():
            if collection is None or collection in part.rows:
                pages.extend(part.documents(collection, 0, offset + limit))
        pages.sort(key=lambda d: (d.collection, d.doc_id))
        return pages[offset : offset + limit]

    def document_counts(self) -> dict[str, dict[str, int]]:
        self.release_all()
        out: dict[str, dict[str, int]] = {}
        for part in self.parts.values():
            for name, counts in part.document_counts().items():
                mine = out.setdefault(name, {"documents": 0, "chunks": 0})
                mine["documents"] += counts["documents"]
                mine["chunks"] += counts["chunks"]
        return dict(sorted(out.items()))
