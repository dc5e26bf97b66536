"""The store seam: what the engine needs from storage, whatever the storage is.

`Store.snapshot()` gives a `Snapshot`: one committed version of the whole index, from which a
search reads everything it uses (ranking, chunk text, metadata, vectors), so it never mixes
versions. `Store.write()` gives a `Write`: one atomic transaction; in-memory state changes
only once it has committed. The embedded SQLite store and the PostgreSQL store implement
this; the engine (chunking, embedding, ranking, packing) is shared."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from ragloom.filters import FilterNode
from ragloom.lexical.bm25 import BM25Params
from ragloom.segments.view import CollectionView
from ragloom.store.records import (
    ChunkTerms,
    CollectionInfo,
    NewDocument,
    NewDocuments,
    StoredChunk,
    StoredDocument,
    WriteOutcome,
)

Ranked = tuple[np.ndarray, np.ndarray]  # a leg's answer: row ids and scores, best first


@dataclass(frozen=True)
class LexicalQuery:
    """The lexical leg's question: the query's index terms in order (repeats kept), BM25's
    parameters, the metadata filter (`where`, with its cache key), and for a PRF-expanded
    query a weight per distinct term (`terms` then lists each term once)."""

    terms: Sequence[str]
    params: BM25Params
    where: FilterNode | None = None
    where_key: str | None = None
    weights: Sequence[float] | None = None


@dataclass(frozen=True, eq=False)
class DenseQuery:
    """The dense leg's question: the query's unit vector and the metadata filter."""

    vector: np.ndarray
    where: FilterNode | None = None
    where_key: str | None = None


class CollectionReader(ABC):
    """One collection inside a snapshot: the legs and the lookups a search needs. Each leg
    takes the query in its own form (`LexicalQuery`, `DenseQuery`) and answers with its
    top k over the live chunks that pass the filter."""

    info: CollectionInfo
    config: Any  # the parsed CollectionConfig

    @abstractmethod
    def lexical(self, query: LexicalQuery, k: int) -> Ranked:
        """BM25 top k (chunk row ids, scores)."""

    def document_frequencies(self, terms: Sequence[str]) -> tuple[dict[str, int], int]:
        """(live chunks containing each known term, live chunks in all): PRF statistics."""
        raise NotImplementedError("this store cannot report term statistics (PRF expansion)")

    @abstractmethod
    def dense(self, query: DenseQuery, k: int) -> Ranked:
        """Top k (chunk row ids, cosine) over the live chunks with vectors."""

    @abstractmethod
    def metadata(self, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Merged metadata (document's and chunk's) of the given rows."""

    @abstractmethod
    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The rows' vectors in order (zero rows for chunks without one)."""

    @abstractmethod
    def counts(self) -> dict[str, Any]:
        """documents, chunks, vectors, pending, terms, avg_chunk_terms."""

    @abstractmethod
    def size(self) -> int:
        """Live chunks in the collection."""

    @abstractmethod
    def pending(self) -> int:
        """Live chunks waiting for a vector."""

    @abstractmethod
    def chunk_documents(self) -> dict[int, str]:
        """Chunk row id -> document id, for the whole collection (evaluation)."""

    def prepare_dense(self) -> None:
        """Read now what dense searches need beyond the reader (SQLite's graphs): `warm()`."""
        return None  # (a dense search reads it itself when none did)

    def segments_view(self) -> CollectionView | None:
        """This version's segments, when the lexical leg scores them in this process (their
        common terms' weights can be built ahead: `Index.warm`); None for a store that
        scores BM25 in SQL."""
        return None

    def missing_shards(self) -> list[str]:
        """The shards of a shard set this reader could not reach (each named, with why);
        empty for a store of one piece."""
        return []

    def eligible_count(self, where: FilterNode, where_key: str | None) -> int | None:
        """How many live chunks pass the filter, when this reader can tell cheaply (None:
        it cannot; the engine then treats the filter as selective)."""
        return None

    @abstractmethod
    def field_values(self, key: str) -> list[Any]:
        """Values a filter on the metadata `key` (dots for nested fields) reads in this
        collection (distinct or not): what kinds of value the field holds."""


class Snapshot(ABC):
    """One committed version of the index."""

    generation: int

    @abstractmethod
    def collections(self) -> dict[str, CollectionInfo]:
        """Every collection by name."""

    @abstractmethod
    def collection(self, name: str) -> CollectionReader:
        """A collection's reader; `NotFound` when there is no such collection."""

    @abstractmethod
    def content_hashes(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str]:
        """Stored content hash of each of `doc_ids` that exists in the collection."""

    @abstractmethod
    def chunks(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        """Chunks with their documents for the given row ids (all of them: same version)."""

    @abstractmethod
    def document_text(self, collection: str, doc_id: str) -> str:
        """A stored document's full text; `NotFound` when missing."""

    @abstractmethod
    def documents(
        self, collection: str | None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        """A page of documents ordered by collection, then id."""

    @abstractmethod
    def document_counts(self) -> dict[str, dict[str, int]]:
        """documents and chunks per collection."""

    # File identity, for `Index.index_path`: a file document's metadata "path" equals its id
    # (a part's id is `{path}#{part}`) and its source is the file's real path. These defaults
    # page through `documents()`; a backend answers them with one indexed query each.
    def file_ids_by_source(self, collection: str, sources: Sequence[str]) -> dict[str, list[str]]:
        """Ids of the file documents (and parts) whose source is one of `sources`, by source."""
        wanted, found = set(sources), dict[str, list[str]]()
        for doc in self._every_document(collection):
            path, part = doc.metadata.get("path"), doc.metadata.get("part")
            if doc.source in wanted and doc.doc_id in (path, f"{path}#{part}"):
                found.setdefault(doc.source, []).append(doc.doc_id)
        return found

    def file_documents_under(self, collection: str, folder: str) -> dict[str, str]:
        """The file documents (and parts) whose source lies under `folder` (a real path), as
        id -> source: what a folder's re-index compares with what it found."""
        prefix = folder.rstrip("/") + "/"
        return {
            d.doc_id: d.source
            for d in self._every_document(collection)
            if d.source is not None
            and d.source.startswith(prefix)
            and d.doc_id in (p := d.metadata.get("path"), f"{p}#{d.metadata.get('part')}")
        }

    def sources_of(self, collection: str, doc_ids: Sequence[str]) -> dict[str, str | None]:
        """The source of each of `doc_ids` stored in the collection."""
        wanted = set(doc_ids)
        return {d.doc_id: d.source for d in self._every_document(collection) if d.doc_id in wanted}

    def _every_document(self, collection: str) -> Iterator[StoredDocument]:
        if collection not in self.collections():
            return
        offset = 0
        while page := self.documents(collection, offset, 1000):
            yield from page
            offset += len(page)

    # Vectors a write may reuse instead of embedding again (`Store.reusable_vectors`).
    def document_vectors(
        self, collection: CollectionInfo, doc_ids: Sequence[str], wanted: set[bytes]
    ) -> dict[bytes, np.ndarray]:
        """Vectors of the live chunks of `doc_ids` whose embedding text hashes to one of
        `wanted` (`ragloom.store.document_text.text_hash`), by that hash."""
        raise NotImplementedError

    def cached_vectors(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """Vectors `model` gave these texts (by hash) before their chunks were deleted."""
        raise NotImplementedError

    def chunk_counts(self, collection: str, doc_ids: Sequence[str]) -> dict[str, int]:
        """How many chunks each of `doc_ids` that exists holds. This default pages through
        the collection's documents; a backend answers it with one query instead."""
        wanted, found, offset = set(doc_ids), dict[str, int](), 0
        while wanted - found.keys():
            page = self.documents(collection, offset, 1000)
            if not page:
                break
            found.update((d.doc_id, d.chunks) for d in page if d.doc_id in wanted)
            offset += len(page)
        return found


S = TypeVar("S", bound=Snapshot)


class ThreadSnapshots(Generic[S]):
    """A store's snapshots, one open per thread at a time: a snapshot opened inside another
    one on the same thread is that same snapshot (nested reads see the same version). The
    store opens one (`_begin`), says what a failure inside it becomes (`_read_failure`:
    None leaves it as it is), and ends it (`_end`)."""

    _local: threading.local

    @contextmanager
    def snapshot(self) -> Iterator[S]:
        current = getattr(self._local, "snapshot", None)
        if current is not None:
            yield current
            return
        snap = self._begin()
        self._local.snapshot = snap
        try:
            yield snap
        except Exception as exc:
            failure = self._read_failure(snap, exc)
            if failure is None:
                raise
            raise failure from None
        finally:
            self._local.snapshot = None
            self._end(snap)

    def _begin(self) -> S:
        raise NotImplementedError

    def _read_failure(self, snap: S, exc: Exception) -> Exception | None:
        return None

    def _end(self, snap: S) -> None:
        """After the block: end the snapshot's transaction."""


class Write(ABC):
    """One atomic write. Everything is visible to searches after commit, or nothing."""

    @abstractmethod
    def ensure_collection(self, name: str, config: dict[str, Any]) -> CollectionInfo:
        """The collection, created with `config` if it does not exist."""

    @abstractmethod
    def set_config(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        """Replace a collection's configuration."""

    @abstractmethod
    def content_hashes(self, collection: CollectionInfo, doc_ids: Sequence[str]) -> dict[str, str]:
        """Stored content hash of each of `doc_ids` that exists."""

    @abstractmethod
    def put(
        self, collection: CollectionInfo, documents: NewDocuments, terms: ChunkTerms | None = None
    ) -> WriteOutcome:
        """Store documents, each replacing all chunks of a stored document of the same id.

        `terms` holds the index terms of all their chunks in order (the fast form ingest
        uses); without it each chunk's own `terms` list is used."""

    @abstractmethod
    def delete(self, collection: CollectionInfo, doc_id: str) -> int | None:
        """Remove a document and every trace of it; chunks removed, or None if not stored."""

    @abstractmethod
    def set_vectors(
        self, collection: CollectionInfo, rows: Sequence[int], vectors: np.ndarray
    ) -> int:
        """Give pending chunks their vectors (rows that vanished meanwhile are skipped)."""

    @abstractmethod
    def reset_vectors(self, collection: CollectionInfo, config: dict[str, Any]) -> None:
        """Switch the collection to another embedding (config): every chunk becomes pending."""


class Store(ABC):
    """A place documents, chunks, vectors and their indexes live."""

    location: str  # for messages: a file path or a database URL without password
    read_only: bool = False

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[Snapshot]:
        """One committed version to read from (never waits for a writer)."""

    @abstractmethod
    def write(self) -> AbstractContextManager[Write]:
        """One atomic write (waits for other writers)."""

    @abstractmethod
    def collections(self) -> dict[str, CollectionInfo]:
        """Every collection by name (latest committed version)."""

    @abstractmethod
    def pending(self, collection: CollectionInfo, limit: int) -> list[tuple[int, str | None, str]]:
        """Up to `limit` chunks waiting for a vector: (row id, title, text)."""

    @abstractmethod
    def chunk_texts(self, collection: CollectionInfo) -> list[tuple[int, str | None, str]]:
        """Every chunk of a collection: (row id, document title, chunk text)."""

    def reusable_vectors(
        self,
        collection: CollectionInfo,
        model: str,
        doc_ids: Sequence[str],
        hashes: Sequence[bytes],
    ) -> dict[bytes, np.ndarray]:
        """Vectors already computed by `model` for embedding texts with these hashes: the live
        chunks of `doc_ids` (re-indexing an edited document), then the cache of deleted
        ones, read from one snapshot."""
        wanted = set(hashes)
        found: dict[bytes, np.ndarray] = {}
        if not wanted:
            return found
        with self.snapshot() as snap:
            if doc_ids:
                found.update(snap.document_vectors(collection, doc_ids, wanted))
            rest = [h for h in wanted if h not in found]
            if rest:
                found.update(snap.cached_vectors(model, rest))
        return found

    @abstractmethod
    def check(self) -> list[str]:
        """Problems found by a full consistency check (empty: healthy)."""

    def repair(self) -> list[str]:
        """Rebuild derived data that is missing or damaged; returns what was done."""
        return []

    @abstractmethod
    def export(self, collection: str, batch: int = 200) -> Iterator[list[NewDocument]]:
        """Every document of a collection with its chunks (index terms, metadata, vectors),
        in batches read from one snapshot: what `ragloom migrate` copies to another store."""

    def replication(self) -> list[dict[str, Any]] | None:
        """Each server of a replicated store with its role and replay lag; None when the
        store is not replicated."""
        return None

    def shard_status(self) -> list[dict[str, Any]] | None:
        """Each shard of a shard set: reachable or not, its documents, its replicas; None
        when the store is not sharded."""
        return None

    def writer_lease(self, what: str, wait: float = 0.0) -> AbstractContextManager:
        """Hold the index's writer lease while folders are indexed or watched (one such
        writer per index; `ragloom.store.lease`); raises `WriterBusy` naming the holder when
        another process keeps it past `wait` seconds. This default holds nothing."""
        return nullcontext()

    def busy(self) -> AbstractContextManager:
        """Around a bulk write being prepared and written: background work that runs only
        once writes pause waits for its end (a bulk load never looks idle between batches)."""
        return nullcontext()

    def maintain(self, wait: bool = True, on_step: Any = None) -> int:  # noqa: B027
        """Run pending background work (flushes, merges, graphs) now; `on_step(done, what)`
        hears of each step. Returns the steps done (0 where there is no such work)."""
        return 0

    def finish(self, on_step: Any = None) -> int:  # noqa: B027
        """Before close, when this process wrote: the background work its writes made due
        (flushes, merges, search graphs), done now so that the next opener searches at full
        speed from its first query; `on_step(done, what)` hears of each step. Returns the
        steps done (0 where there is no such work)."""
        return 0

    @abstractmethod
    def close(self) -> None:
        """Release connections and background threads."""
