"""The Index: ragloom's library entry point tying loading, chunking, storage and search."""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.chunking import ChunkPolicy, chunk_text
from ragloom.config import CollectionConfig
from ragloom.errors import InputError, NotFound
from ragloom.lexical import BM25Params, LexicalIndex
from ragloom.lexical.index import Postings, count_postings
from ragloom.loading import JsonlFields, discover_files, load_file
from ragloom.models import ChunkSpan, Document, Hit
from ragloom.retrieval import pipeline
from ragloom.store import SQLiteStore, StoredDocument
from ragloom.store.sqlite import NewChunk, NewDocument
from ragloom.text import Tokenizer

DEFAULT_COLLECTION = "default"
WRITE_BATCH = 512
MAX_TOP_K = 10_000


@dataclass
class IndexReport:
    """What an indexing call did."""

    documents: int = 0  # new or changed documents written
    unchanged: int = 0  # documents whose content hash matched: nothing done
    chunks: int = 0  # chunks written
    files: int = 0  # files read
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "unchanged": self.unchanged,
            "chunks": self.chunks,
            "files": self.files,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }


@dataclass
class _Collection:
    """In-memory state of one collection: its config, analyzer and lexical index."""

    id: int
    name: str
    config: CollectionConfig
    tokenizer: Tokenizer
    lexical: LexicalIndex


@dataclass(frozen=True)
class _Prepared:
    document: Document
    content_hash: str
    chunks: list[tuple[ChunkSpan, list[str]]]  # (span, its index terms incl. title)


@lru_cache(maxsize=64)
def _policy_fingerprint(policy: ChunkPolicy) -> str:
    return json.dumps(policy.to_dict(), sort_keys=True)


def _content_hash(doc: Document, config: CollectionConfig) -> str:
    """Fingerprint of everything that shapes a document's chunks and postings."""
    settings = json.dumps(
        [
            doc.title,
            doc.source,
            doc.metadata,
            _policy_fingerprint(config.policy_for(doc.source)),
            config.title_weight,
        ],
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(settings.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(doc.text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _check_document(doc: Any) -> Document:
    if not isinstance(doc, Document):
        raise InputError(f"expected a ragloom.Document, got {type(doc).__name__}")
    if not isinstance(doc.id, str) or not doc.id.strip():
        raise InputError("a document id must be a non-empty string")
    if not isinstance(doc.text, str):
        raise InputError(f"document {doc.id!r}: text must be a string")
    if doc.title is not None and not isinstance(doc.title, str):
        raise InputError(f"document {doc.id!r}: title must be a string")
    if not isinstance(doc.metadata, dict):
        raise InputError(f"document {doc.id!r}: metadata must be a JSON object (dict)")
    try:
        json.dumps(doc.metadata)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"document {doc.id!r}: metadata is not JSON-serialisable ({exc})"
        ) from None
    return doc


class Index:
    """An index file: `add`/`index_path` documents, `delete` them, `search` them.

    Safe to share between threads: writes are serialized; searches run while a long
    indexing job is in progress and see each batch once it has committed.
    """

    def __init__(self, path: str | Path = "ragloom.db", create: bool = True) -> None:
        self.store = SQLiteStore(path, create=create)
        self.path = self.store.path
        self._lock = threading.RLock()
        self._vocab: dict[str, int] = {}
        self._max_term_id = 0
        self._collections: dict[str, _Collection] = {}
        self._seen_version = self.store.data_version()
        self._catch_up_vocabulary()

    # -- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections ------------------------------------------------------------------
    def _catch_up_vocabulary(self, conn: Any = None) -> None:
        rows = self.store.terms_since(self._max_term_id, conn)
        if rows:
            self._vocab.update((term, tid) for tid, term in rows)
            self._max_term_id = rows[-1][0]

    def _refresh_if_changed(self) -> None:
        """Reload in-memory state when another process committed to the file."""
        version = self.store.data_version()
        if version != self._seen_version:
            with self._lock:
                self._seen_version = version
                self._catch_up_vocabulary()
                self._collections.clear()

    def _collection(self, name: str, create_with: CollectionConfig | None = None) -> _Collection:
        with self._lock:
            state = self._collections.get(name)
            if state is not None:
                return state
            known = self.store.collections()
            if name not in known:
                if create_with is None:
                    raise NotFound(
                        f"no collection {name!r} in {self.path}",
                        f"known collections: {', '.join(sorted(known)) or 'none yet'}",
                    )
                self.store.ensure_collection(name, create_with.to_dict())
                self._seen_version = self.store.data_version()
                known = self.store.collections()
            cid, raw = known[name]
            config = CollectionConfig.from_dict(raw)
            lexical = LexicalIndex()
            rows = self.store.postings(cid)
            if rows:
                lexical.add([r for r, _ in rows], [Postings.from_bytes(b) for _, b in rows])
            state = _Collection(cid, name, config, Tokenizer(config.tokenizer), lexical)
            self._collections[name] = state
            return state

    def collections(self) -> list[str]:
        """Names of the collections in this index."""
        return sorted(self.store.collections())

    def configure(self, collection: str = DEFAULT_COLLECTION, **changes: Any) -> CollectionConfig:
        """Create a collection with settings, or change chunking/BM25 settings of an existing one.

        The tokenizer of a non-empty collection cannot change (its postings would not match).
        """
        self._refresh_if_changed()
        base = CollectionConfig()
        known = self.store.collections()
        if collection in known:
            base = CollectionConfig.from_dict(known[collection][1])
        merged = {**base.to_dict(), **{k: v for k, v in changes.items() if v is not None}}
        for key in ("chunking", "tokenizer", "bm25"):
            value = merged[key]
            if not isinstance(value, dict):
                merged[key] = value.to_dict() if hasattr(value, "to_dict") else vars(value)
        config = CollectionConfig.from_dict(merged)
        state = self._collection(collection, create_with=config)
        if config != state.config:
            if config.tokenizer != state.config.tokenizer and state.lexical.n_docs:
                raise InputError(
                    f"collection {collection!r} already holds documents analysed with "
                    f"{state.config.tokenizer}; the tokenizer cannot change",
                    "index into a new collection or a new index file",
                )
            self.store.set_collection_config(state.id, config.to_dict())
            with self._lock:
                self._collections.pop(collection, None)
        return self._collection(collection).config

    # -- writing ----------------------------------------------------------------------
    def add(
        self,
        documents: Iterable[Document],
        collection: str = DEFAULT_COLLECTION,
        on_batch: Callable[[int], None] | None = None,
    ) -> IndexReport:
        """Index documents; unchanged ones (same content hash) are skipped.

        Each changed document replaces all of its chunks atomically; batches commit as they go.
        """
        self._refresh_if_changed()
        state = self._collection(collection, create_with=CollectionConfig())
        report = IndexReport()
        batch: list[Document] = []
        for doc in documents:
            batch.append(_check_document(doc))
            if len(batch) >= WRITE_BATCH:
                self._write_batch(state, batch, report)
                if on_batch:
                    on_batch(len(batch))
                batch = []
        if batch:
            self._write_batch(state, batch, report)
            if on_batch:
                on_batch(len(batch))
        return report

    def _prepare(self, state: _Collection, doc: Document, content_hash: str) -> _Prepared:
        """Chunk and tokenize one document (outside any transaction)."""
        terms = state.tokenizer.terms
        title_terms = terms(doc.title) * state.config.title_weight if doc.title else []
        chunks = [
            (span, terms(span.text) + title_terms)
            for span in chunk_text(doc.text, state.config.policy_for(doc.source))
        ]
        return _Prepared(doc, content_hash, chunks)

    def _write_batch(self, state: _Collection, batch: list[Document], report: IndexReport) -> None:
        latest: dict[str, Document] = {d.id: d for d in batch}  # last version of an id wins
        hashes = {doc_id: _content_hash(d, state.config) for doc_id, d in latest.items()}
        stored = self.store.content_hashes(state.id, list(latest))
        prepared = []
        for doc_id, doc in latest.items():
            if stored.get(doc_id) == hashes[doc_id]:
                report.unchanged += 1
            else:
                prepared.append(self._prepare(state, doc, hashes[doc_id]))
        if not prepared:
            return
        term_lists = [terms for prep in prepared for _, terms in prep.chunks]
        removed_rows: list[int] = []
        with self.store.write() as conn:
            stale = self.store.data_version() != self._seen_version
            new_terms = self._assign_term_ids(term_lists, conn)
            try:
                postings = iter(count_postings(term_lists, self._vocab))
                new_documents = []
                for prep in prepared:
                    old = self.store.remove_document(conn, state.id, prep.document.id)
                    removed_rows.extend(r for r, _ in old or [])
                    chunks = [
                        NewChunk(n, span.text, span.start, span.end, span.metadata, next(postings))
                        for n, (span, _) in enumerate(prep.chunks)
                    ]
                    new_documents.append(NewDocument(prep.document, prep.content_hash, chunks))
                added_rows = self.store.insert_documents(conn, state.id, new_documents)
            except BaseException:
                self._forget_terms(new_terms)
                raise
        report.documents += len(prepared)
        report.chunks += len(added_rows)
        with self._lock:
            if stale:
                self._seen_version = self.store.data_version()
                self._collections.clear()
                return
            state.lexical.remove(removed_rows)
            state.lexical.add(added_rows, [c.postings for d in new_documents for c in d.chunks])

    def _assign_term_ids(self, term_lists: list[list[str]], conn: Any) -> list[str]:
        """Give ids to terms never seen before and record them (inside the write)."""
        self._catch_up_vocabulary(conn)
        vocab = self._vocab
        new_terms = sorted(set(chain.from_iterable(term_lists)).difference(vocab))
        if new_terms:
            first = self._max_term_id + 1
            rows = list(zip(range(first, first + len(new_terms)), new_terms))
            conn.executemany("INSERT INTO terms (id, term) VALUES (?, ?)", rows)
            with self._lock:
                vocab.update((term, tid) for tid, term in rows)
                self._max_term_id = first + len(new_terms) - 1
        return new_terms

    def _forget_terms(self, terms: list[str]) -> None:
        """Undo `_assign_term_ids` after a rolled-back write."""
        with self._lock:
            for term in terms:
                self._vocab.pop(term, None)
            self._max_term_id = max(self._vocab.values(), default=0)

    def index_path(
        self,
        paths: str | Path | Sequence[str | Path],
        collection: str = DEFAULT_COLLECTION,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        lenient: bool = False,
        jsonl: JsonlFields | None = None,
        on_file: Callable[[int, int], None] | None = None,
    ) -> IndexReport:
        """Index a file, a list of files or directory trees (include/exclude globs).

        Binary files are skipped with a warning; invalid UTF-8 raises `DecodeError` unless
        `lenient` (then bad bytes become U+FFFD and bad JSONL lines are skipped).
        `on_file(done, total)` reports progress.
        """
        if isinstance(paths, (str, Path)):
            paths = [paths]
        files = discover_files(paths, include, exclude)
        report = IndexReport()

        def documents() -> Iterable[Document]:
            for done, found in enumerate(files, start=1):
                loaded = load_file(found, lenient=lenient, fields=jsonl)
                report.files += 1
                if loaded.skipped:
                    report.skipped.append((str(found.path), loaded.skipped))
                    warnings.warn(f"skipped {found.path}: {loaded.skipped}", stacklevel=3)
                yield from loaded.documents
                if on_file:
                    on_file(done, len(files))

        added = self.add(documents(), collection=collection)
        report.documents, report.unchanged, report.chunks = (
            added.documents,
            added.unchanged,
            added.chunks,
        )
        return report

    def delete(self, doc_id: str, collection: str = DEFAULT_COLLECTION) -> int:
        """Remove a document and every trace of it; returns the number of chunks removed."""
        self._refresh_if_changed()
        state = self._collection(collection)
        with self.store.write() as conn:
            removed = self.store.remove_document(conn, state.id, doc_id)
        if removed is None:
            raise NotFound(
                f"no document {doc_id!r} in collection {collection!r}",
                "list documents with `ragloom stats --documents`",
            )
        with self._lock:
            state.lexical.remove([r for r, _ in removed])
        return len(removed)

    # -- reading ----------------------------------------------------------------------
    def query_term_ids(self, query: str, collection: str = DEFAULT_COLLECTION) -> list[int]:
        """The query's terms that exist in the vocabulary, as ids (duplicates kept)."""
        state = self._collection(collection)
        vocab = self._vocab
        return [vocab[t] for t in state.tokenizer.terms(query) if t in vocab]

    def search_rows(
        self,
        query: str,
        top_n: int = 10,
        collection: str = DEFAULT_COLLECTION,
        bm25: BM25Params | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lexical leg only: top chunk row ids and BM25 scores (no chunk text fetched)."""
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        self._refresh_if_changed()
        state = self._collection(collection)
        term_ids = self.query_term_ids(query, collection)
        with self._lock:
            return state.lexical.search(term_ids, top_n, bm25 or state.config.bm25)

    def search(
        self,
        query: str,
        top_k: int = 5,
        collection: str = DEFAULT_COLLECTION,
        bm25: BM25Params | None = None,
        min_score: float | None = None,
    ) -> list[Hit]:
        """Hits for `query`, best first. An empty or punctuation-only query gives no hits."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InputError(f"top_k must be a positive integer, got {top_k!r}")
        if top_k > MAX_TOP_K:
            raise InputError(f"top_k must be at most {MAX_TOP_K}, got {top_k}")
        rows, scores = self.search_rows(query, top_k, collection, bm25)
        candidates = pipeline.fuse([pipeline.lexical_candidates(rows, scores)])
        candidates = pipeline.top_k(pipeline.apply_min_score(candidates, min_score), top_k)
        chunks = self.store.chunks_by_row([c.row_id for c in candidates])
        return pipeline.hydrate(candidates, chunks)

    def document_text(self, doc_id: str, collection: str = DEFAULT_COLLECTION) -> str:
        """The full text of a stored document (chunk offsets index into it)."""
        return self.store.document_text(self._collection(collection).id, doc_id)

    def documents(
        self, collection: str | None = None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        """A page of stored documents."""
        cid = None if collection is None else self._collection(collection).id
        return self.store.documents(cid, offset, limit)

    def chunk_documents(self, collection: str = DEFAULT_COLLECTION) -> dict[int, str]:
        """Chunk row id -> document id for a collection (to fold `search_rows` to documents)."""
        return self.store.chunk_documents(self._collection(collection).id)

    def stats(self) -> dict[str, Any]:
        """Counts per collection plus lexical statistics."""
        self._refresh_if_changed()
        out: dict[str, Any] = {"path": str(self.path), "collections": {}}
        for name, counts in self.store.counts().items():
            state = self._collection(name)
            out["collections"][name] = {
                **counts,
                "terms": state.lexical.vocabulary_size,
                "avg_chunk_terms": round(state.lexical.avgdl, 2),
                "config": state.config.to_dict(),
            }
        out["documents"] = sum(c["documents"] for c in out["collections"].values())
        out["chunks"] = sum(c["chunks"] for c in out["collections"].values())
        return out
