"""The Index: ragloom's library entry point tying loading, chunking, storage and search."""

from __future__ import annotations

import hashlib
import json
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.chunking import ChunkPolicy, chunk_text
from ragloom.config import CollectionConfig
from ragloom.context import GROUNDING_INSTRUCTION, PackedContext, count_tokens, pack_context
from ragloom.dense import DenseIndex
from ragloom.embedding import Embedder, embedder_from_config, resolve_embedder
from ragloom.enrich import Enricher, enrich_span, enrichers_fingerprint
from ragloom.errors import EmbeddingMismatch, InputError, NotFound
from ragloom.lexical import BM25Params, LexicalIndex
from ragloom.lexical.index import Postings, count_postings
from ragloom.loading import JsonlFields, discover_files, load_file
from ragloom.models import (
    ChunkSpan,
    Document,
    Hit,
    MultiSearchResult,
    SearchGroup,
    SearchResult,
)
from ragloom.retrieval import pipeline
from ragloom.retrieval.filters import filter_key
from ragloom.retrieval.search import Ranking, SearchOptions, rank
from ragloom.store import SQLiteStore, StoredDocument
from ragloom.store.sqlite import NewChunk, NewDocument
from ragloom.text import Tokenizer

DEFAULT_COLLECTION = "default"
WRITE_BATCH = 512
REEMBED_HINT = "run `ragloom reembed --collection {name} --embedder SPEC` to replace its vectors"


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
    """In-memory state of one collection: config, analyzer, lexical and dense indexes."""

    id: int
    name: str
    config: CollectionConfig
    tokenizer: Tokenizer
    lexical: LexicalIndex
    dense: DenseIndex | None = None
    embedder: Embedder | None = None
    metadata: dict[int, dict[str, Any]] | None = None  # loaded on first filter/boost use
    allowed: dict[str, np.ndarray] = field(default_factory=dict)  # filter -> eligible rows

    def forget(self, rows: Sequence[int]) -> None:
        """Drop removed rows from the metadata map and invalidate filter results."""
        self.allowed.clear()
        if self.metadata is not None:
            for row in rows:
                self.metadata.pop(row, None)


@dataclass(frozen=True)
class _Prepared:
    document: Document
    content_hash: str
    chunks: list[tuple[ChunkSpan, list[str]]]  # (span, its index terms incl. title)


@lru_cache(maxsize=64)
def _policy_fingerprint(policy: ChunkPolicy) -> str:
    return json.dumps(policy.to_dict(), sort_keys=True)


def _content_hash(doc: Document, config: CollectionConfig, salt: str = "") -> str:
    """Fingerprint of everything that shapes a document's chunks and postings."""
    settings = json.dumps(
        [
            doc.title,
            doc.source,
            doc.metadata,
            _policy_fingerprint(config.policy_for(doc.source)),
            config.title_weight,
            salt,
        ],
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(settings.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(doc.text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _embedding_text(title: str | None, text: str) -> str:
    """What the dense model reads for a chunk: its document's title, then its text."""
    return f"{title}\n{text}" if title else text


def _storable(value: str, what: str) -> None:
    """Text must encode as UTF-8: JSON allows lone surrogate escapes that SQLite cannot store."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid Unicode (it holds a lone surrogate)") from None


def _check_document(doc: Any) -> Document:
    if not isinstance(doc, Document):
        raise InputError(f"expected a ragloom.Document, got {type(doc).__name__}")
    if not isinstance(doc.id, str) or not doc.id.strip():
        raise InputError("a document id must be a non-empty string")
    _storable(doc.id, "a document id")
    if not isinstance(doc.text, str):
        raise InputError(f"document {doc.id!r}: text must be a string")
    _storable(doc.text, f"document {doc.id!r}: text")
    for field_name in ("title", "source", "collection"):
        value = getattr(doc, field_name)
        if value is not None and not isinstance(value, str):
            raise InputError(f"document {doc.id!r}: {field_name} must be a string")
        if value is not None:
            _storable(value, f"document {doc.id!r}: {field_name}")
    if doc.collection is not None and not doc.collection.strip():
        raise InputError(f"document {doc.id!r}: collection must not be blank")
    if not isinstance(doc.metadata, dict):
        raise InputError(f"document {doc.id!r}: metadata must be a JSON object (dict)")
    try:
        _storable(json.dumps(doc.metadata, allow_nan=False, ensure_ascii=False), "metadata")
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"document {doc.id!r}: metadata is not plain JSON ({exc})",
            "use strings, finite numbers, booleans, null, lists and objects",
        ) from None
    return doc


class Index:
    """An index file: `add`/`index_path` documents, `delete` them, `search` them.

    Safe to share between threads: writes are serialized; searches run while a long
    indexing job is in progress and see each batch once it has committed.
    """

    def __init__(
        self,
        path: str | Path = "ragloom.db",
        create: bool = True,
        embedder: str | Embedder | None = "auto",
    ) -> None:
        """Open or create an index file.

        `embedder`: "auto" uses the model a collection was indexed with, and for a new
        collection the local model when it is installed ($RAGLOOM_EMBEDDER overrides);
        None or "none" means lexical only; an Embedder or a spec such as "local" or
        "ollama:MODEL@URL" is used as given and must match a collection's stored vectors.
        """
        if not (embedder is None or isinstance(embedder, (str, Embedder))):
            raise InputError(f"embedder must be a spec string or an Embedder, got {embedder!r}")
        self._embedder_spec = embedder
        self._explicit_embedder: Embedder | None = (
            None if embedder in (None, "none", "auto") else resolve_embedder(embedder)
        )
        self._embedders: dict[str, Embedder] = {}
        self._query_cache: dict[tuple[str, str], np.ndarray] = {}
        self._pool: ThreadPoolExecutor | None = None
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
        """Close the file (and the worker threads of multi-collection searches)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
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

    def _collection(self, name: str, create: bool = False) -> _Collection:
        """A collection's in-memory state, loaded on first use (and created if `create`)."""
        state = self._collections.get(name)
        if state is not None:
            return state
        # Loading may write (a new collection, a model's config): lock in the writers' order,
        # the store's write lock before the index's, so the two can never deadlock.
        with self.store.write_lock, self._lock:
            state = self._collections.get(name)
            if state is not None:
                return state
            known = self.store.collections()
            if name not in known:
                if not create:
                    raise NotFound(
                        f"no collection {name!r} in {self.path}",
                        f"known collections: {', '.join(sorted(known)) or 'none yet'}",
                    )
                self._create_collection(name, CollectionConfig())
                known = self.store.collections()
            cid, raw = known[name]
            config = CollectionConfig.from_dict(raw)
            lexical = LexicalIndex()
            rows = self.store.postings(cid)
            if rows:
                lexical.add([r for r, _ in rows], [Postings.from_bytes(b) for _, b in rows])
            state = _Collection(cid, name, config, Tokenizer(config.tokenizer), lexical)
            if config.embedding:
                state.dense = DenseIndex(int(config.embedding["dimension"]))
                vector_rows, blobs = self.store.vectors(cid)
                if vector_rows:
                    matrix = np.frombuffer(b"".join(blobs), np.float32)
                    state.dense.add(vector_rows, matrix.reshape(len(vector_rows), -1))
                state.embedder = self._embedder_for(name, config.embedding)
            elif self._explicit_embedder is not None and lexical.n_docs:
                raise EmbeddingMismatch(
                    f"collection {name!r} holds documents without vectors, but this index was "
                    f"opened with embedding model {self._explicit_embedder.name!r}",
                    REEMBED_HINT.format(name=name),
                )
            elif self._explicit_embedder is not None:
                state = self._attach_embedder(state, self._explicit_embedder)
            self._collections[name] = state
            return state

    def _create_collection(self, name: str, config: CollectionConfig) -> None:
        """Store a new collection, with the embedder a new collection gets by default."""
        embedder = self._explicit_embedder
        if embedder is None and self._embedder_spec == "auto":
            embedder = resolve_embedder("auto")
            if embedder is not None:
                self._embedders[json.dumps(embedder.config(), sort_keys=True)] = embedder
        if embedder is not None and config.embedding is None:
            config = CollectionConfig.from_dict(
                {**config.to_dict(), "embedding": embedder.config()}
            )
        self.store.ensure_collection(name, config.to_dict())
        self._seen_version = self.store.data_version()

    def _embedder_for(self, name: str, stored: dict[str, Any]) -> Embedder | None:
        """The embedder for a collection's stored vectors (None: searched lexically only)."""
        explicit = self._explicit_embedder
        if explicit is not None:
            if explicit.name != stored.get("model") or explicit.dimension != stored.get(
                "dimension"
            ):
                raise EmbeddingMismatch(
                    f"collection {name!r} holds vectors of model {stored.get('model')!r} "
                    f"({stored.get('dimension')} dimensions); this index was opened with "
                    f"{explicit.name!r} ({explicit.dimension} dimensions)",
                    f"open it with the same model, or {REEMBED_HINT.format(name=name)}",
                )
            return explicit
        if self._embedder_spec in (None, "none"):
            return None
        key = json.dumps(stored, sort_keys=True)
        if key not in self._embedders:
            self._embedders[key] = embedder_from_config(stored)
        return self._embedders[key]

    def _attach_embedder(self, state: _Collection, embedder: Embedder) -> _Collection:
        """Give an empty lexical-only collection vectors from now on."""
        config = CollectionConfig.from_dict(
            {**state.config.to_dict(), "embedding": embedder.config()}
        )
        self.store.set_collection_config(state.id, config.to_dict())
        state.config = config
        state.dense = DenseIndex(embedder.dimension)
        state.embedder = embedder
        return state

    def warm(self) -> None:
        """Load every collection's postings, vectors and model now (a server's first query
        would otherwise pay for it: about a second on SciFact)."""
        self._refresh_if_changed()
        for name in self.store.collections():
            self._collection(name)

    def collections(self) -> list[str]:
        """Names of the collections in this index."""
        return sorted(self.store.collections())

    def configure(self, collection: str = DEFAULT_COLLECTION, **changes: Any) -> CollectionConfig:
        """Create a collection with settings, or change chunking/BM25 settings of an existing one.

        The tokenizer of a non-empty collection cannot change (its postings would not match).
        """
        self._refresh_if_changed()
        base = CollectionConfig()
        unknown = set(changes) - set(base.to_dict()) - {"embedding"}
        if unknown:
            raise InputError(
                f"unknown collection setting(s): {', '.join(sorted(unknown))}",
                f"known: {', '.join(sorted(base.to_dict()))}",
            )
        known = self.store.collections()
        if collection in known:
            base = CollectionConfig.from_dict(known[collection][1])
        merged = {**base.to_dict(), **{k: v for k, v in changes.items() if v is not None}}
        for key in ("chunking", "tokenizer", "bm25"):
            value = merged[key]
            if not isinstance(value, dict):
                merged[key] = value.to_dict() if hasattr(value, "to_dict") else vars(value)
        config = CollectionConfig.from_dict(merged)
        if collection not in known:
            self._create_collection(collection, config)
        state = self._collection(collection)
        config = CollectionConfig.from_dict(
            {**config.to_dict(), "embedding": state.config.embedding}
        )
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
        enrichers: Sequence[Enricher] = (),
    ) -> IndexReport:
        """Index documents; unchanged ones (same content hash) are skipped.

        Each changed document replaces all of its chunks atomically; batches commit as they go.
        A document whose `collection` is set goes there instead of `collection`. `enrichers`
        add metadata to each chunk (see `ragloom.enrich`).
        """
        self._refresh_if_changed()
        self._writable(collection)  # the named collection exists even if no document lands
        report = IndexReport()
        batches: dict[str, list[Document]] = {}
        for doc in documents:
            target = _check_document(doc).collection or collection
            batch = batches.setdefault(target, [])
            batch.append(doc)
            if len(batch) >= WRITE_BATCH:
                self._write_batch(self._writable(target), batch, report, enrichers)
                if on_batch:
                    on_batch(len(batch))
                batches[target] = []
        for target, batch in batches.items():
            if batch:
                self._write_batch(self._writable(target), batch, report, enrichers)
                if on_batch:
                    on_batch(len(batch))
        return report

    def _writable(self, collection: str) -> _Collection:
        """A collection's state, created if new, refusing writes that would lack vectors."""
        if not isinstance(collection, str) or not collection.strip():
            raise InputError(f"a collection name must be a non-empty string, got {collection!r}")
        _storable(collection, "a collection name")
        state = self._collection(collection, create=True)
        if state.config.embedding and state.embedder is None:
            raise EmbeddingMismatch(
                f"collection {collection!r} holds vectors of {state.config.embedding['model']!r}"
                " but this index was opened without an embedding model",
                "open the index with embedder='auto' (the default) to add documents",
            )
        return state

    def _prepare(
        self,
        state: _Collection,
        doc: Document,
        content_hash: str,
        enrichers: Sequence[Enricher] = (),
    ) -> _Prepared:
        """Chunk, enrich and tokenize one document (outside any transaction)."""
        terms = state.tokenizer.terms
        title_terms = terms(doc.title) * state.config.title_weight if doc.title else []
        spans = chunk_text(doc.text, state.config.policy_for(doc.source), source=doc.source)
        if enrichers:
            spans = [enrich_span(doc, span, enrichers) for span in spans]
        chunks = [(span, terms(span.text) + title_terms) for span in spans]
        return _Prepared(doc, content_hash, chunks)

    def _write_batch(
        self,
        state: _Collection,
        batch: list[Document],
        report: IndexReport,
        enrichers: Sequence[Enricher] = (),
    ) -> None:
        latest: dict[str, Document] = {d.id: d for d in batch}  # last version of an id wins
        salt = enrichers_fingerprint(enrichers)
        hashes = {doc_id: _content_hash(d, state.config, salt) for doc_id, d in latest.items()}
        stored = self.store.content_hashes(state.id, list(latest))
        prepared = []
        for doc_id, doc in latest.items():
            if stored.get(doc_id) == hashes[doc_id]:
                report.unchanged += 1
            else:
                prepared.append(self._prepare(state, doc, hashes[doc_id], enrichers))
        if not prepared:
            return
        term_lists = [terms for prep in prepared for _, terms in prep.chunks]
        vectors = self._embed_chunks(state, prepared)
        removed_rows: list[int] = []
        with self.store.write_lock:  # commit and in-memory update in the same order
            with self.store.write() as conn:
                stale = self.store.data_version() != self._seen_version
                new_terms = self._assign_term_ids(term_lists, conn)
                try:
                    postings = iter(count_postings(term_lists, self._vocab))
                    existing = self.store.existing_ids(
                        conn, state.id, [prep.document.id for prep in prepared]
                    )
                    new_documents = []
                    for prep in prepared:
                        if prep.document.id in existing:  # a new id needs no delete
                            old = self.store.remove_document(conn, state.id, prep.document.id)
                            removed_rows.extend(r for r, _ in old or [])
                        chunks = [
                            NewChunk(
                                n, span.text, span.start, span.end, span.metadata, next(postings)
                            )
                            for n, (span, _) in enumerate(prep.chunks)
                        ]
                        new_documents.append(NewDocument(prep.document, prep.content_hash, chunks))
                    added_rows = self.store.insert_documents(conn, state.id, new_documents)
                    if vectors is not None:
                        hashes, matrix = vectors
                        blobs = [v.tobytes() for v in matrix]
                        model = state.embedder.name  # type: ignore[union-attr]
                        self.store.insert_vectors(conn, model, added_rows, hashes, blobs)
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
                state.forget(removed_rows)
                if state.metadata is not None:
                    merged = (
                        {**d.document.metadata, **c.metadata}
                        for d in new_documents
                        for c in d.chunks
                    )
                    state.metadata.update(zip(added_rows, merged))
                if state.dense is not None:
                    state.dense.remove(removed_rows)
                    if vectors is not None:
                        state.dense.add(added_rows, vectors[1])

    def _embed_chunks(
        self, state: _Collection, prepared: list[_Prepared]
    ) -> tuple[list[bytes], np.ndarray] | None:
        """Vectors for every new chunk (text hashes, matrix); cached ones are not recomputed."""
        embedder = state.embedder
        if embedder is None:
            return None
        texts = [
            _embedding_text(prep.document.title, span.text)
            for prep in prepared
            for span, _ in prep.chunks
        ]
        return self._vectors_for_texts(embedder, texts)

    def _vectors_for_texts(
        self, embedder: Embedder, texts: list[str]
    ) -> tuple[list[bytes], np.ndarray]:
        hashes = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).digest() for t in texts]
        cached = self.store.cached_vectors(embedder.name, hashes)
        first_of: dict[bytes, int] = {}
        for i, h in enumerate(hashes):
            first_of.setdefault(h, i)
        todo = [i for h, i in first_of.items() if h not in cached]
        fresh = embedder.embed([texts[i] for i in todo]) if todo else None
        known = {hashes[i]: fresh[j] for j, i in enumerate(todo)} if fresh is not None else {}
        matrix = np.zeros((len(texts), embedder.dimension), np.float32)
        for i, h in enumerate(hashes):
            matrix[i] = known[h] if h in known else np.frombuffer(cached[h], np.float32)
        return hashes, matrix

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
        enrichers: Sequence[Enricher] = (),
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

        added = self.add(documents(), collection=collection, enrichers=enrichers)
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
        with self.store.write_lock:  # commit and in-memory update in the same order
            with self.store.write() as conn:
                removed = self.store.remove_document(conn, state.id, doc_id)
            if removed is None:
                raise NotFound(
                    f"no document {doc_id!r} in collection {collection!r}",
                    "list documents with `ragloom stats --documents`",
                )
            rows = [r for r, _ in removed]
            with self._lock:
                state.lexical.remove(rows)
                state.forget(rows)
                if state.dense is not None:
                    state.dense.remove(rows)
        return len(removed)

    def reembed(
        self, collection: str = DEFAULT_COLLECTION, embedder: str | Embedder = "local"
    ) -> int:
        """Replace a collection's vectors with `embedder`'s (all chunks, one transaction).

        The way to switch models, or to add vectors to a lexical-only collection. Returns the
        number of chunks embedded. Vectors already in the embedding cache are reused.
        """
        model = resolve_embedder(embedder)
        if model is None:
            raise InputError("reembed needs an embedding model", "pass embedder='local' or a spec")
        self._refresh_if_changed()
        known = self.store.collections()
        if collection not in known:
            raise NotFound(f"no collection {collection!r} in {self.path}")
        cid, raw = known[collection]
        rows = self.store.chunk_texts(cid)
        texts = [_embedding_text(title, text) for _, title, text in rows]
        hashes, matrix = self._vectors_for_texts(model, texts)
        raw = {**raw, "embedding": model.config()}
        with self.store.write() as conn:
            self.store.clear_vectors(conn, cid)
            self.store.insert_vectors(
                conn, model.name, [r for r, _, _ in rows], hashes, [v.tobytes() for v in matrix]
            )
            conn.execute("UPDATE collections SET config=? WHERE id=?", (json.dumps(raw), cid))
        with self._lock:
            self._embedders[json.dumps(model.config(), sort_keys=True)] = model
            self._collections.pop(collection, None)
        return len(rows)

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
        *,
        mode: str | None = None,
        fusion: str = "rrf",
        rrf_k: float = 60.0,
        weights: dict[str, float] | None = None,
        normalization: str = "minmax",
        candidates: int = 40,
        min_dense_similarity: float = 0.45,
        min_score: float | None = None,
        bm25: BM25Params | None = None,
        strict: bool = False,
        filters: dict[str, Any] | None = None,
        boosts: Sequence[dict[str, Any]] = (),
        diversity: dict[str, Any] | None = None,
        prefer: Sequence[dict[str, Any]] = (),
        explain: bool = False,
        with_tokens: bool = False,
    ) -> SearchResult:
        """Hits for `query`, best first (a list of Hit with `.degraded`, `.reason`, `.mode`).

        `mode` is "lexical", "dense" or "hybrid" (default: hybrid when the collection has
        vectors). Hybrid fuses each leg's top `candidates` by `fusion` ("rrf" with `rrf_k`,
        or "weighted" over `normalization`-ed scores) with per-leg `weights`, and drops
        dense-only hits below `min_dense_similarity`. If the query cannot be embedded,
        hybrid answers from BM25 with `degraded=True`, or raises when `strict`.
        `filters` (see `ragloom.retrieval.filters`) apply inside both legs; `boosts`
        multiply matching hits' scores after fusion; `diversity` caps hits per metadata
        value (`{"max_per": {"scholar_id": 2}}`) and/or applies MMR (`{"mmr": {"lambda":
        0.7}}`); `prefer` filters score metadata fit for weighted fusion's "metadata" weight;
        `explain` attaches each stage's contribution to every hit; `with_tokens` reports each
        hit's size in cl100k tokens (for prompt budgeting).
        An empty or punctuation-only query gives no hits.
        """
        options = SearchOptions(
            top_k=top_k,
            mode=mode,
            fusion=fusion,
            rrf_k=rrf_k,
            weights=weights or {},
            normalization=normalization,
            candidates=candidates,
            min_dense_similarity=min_dense_similarity,
            min_score=min_score,
            bm25=bm25,
            strict=strict,
            filters=filters,
            boosts=tuple(boosts),
            diversity=diversity,
            prefer=tuple(prefer),
            explain=explain,
            with_tokens=with_tokens,
        )
        return self.search_with(query, options, collection)

    def search_with(
        self, query: str, options: SearchOptions, collection: str = DEFAULT_COLLECTION
    ) -> SearchResult:
        """`search` with its options given as one `SearchOptions` object."""
        ranking = self.rank(query, options, collection)
        chunks = self.store.chunks_by_row([c.row_id for c in ranking.candidates])
        hits = pipeline.hydrate(ranking.candidates, chunks, options if options.explain else None)
        if options.with_tokens:
            for hit in hits:
                hit.tokens = count_tokens(hit.text)
        return SearchResult(hits, ranking.mode, ranking.degraded, ranking.reason)

    def rank(
        self, query: str, options: SearchOptions, collection: str = DEFAULT_COLLECTION
    ) -> Ranking:
        """The ranked candidates (chunk row ids with provenance) without fetching chunk text."""
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        self._refresh_if_changed()
        if (
            collection == DEFAULT_COLLECTION
            and collection not in self._collections
            and collection not in self.store.collections()
        ):  # a new, empty index answers with no hits
            return Ranking([], options.mode or "lexical")
        state = self._collection(collection)
        bm25 = options.bm25 or state.config.bm25
        term_ids = self.query_term_ids(query, collection)
        allowed = self._allowed_rows(state, options)

        def lexical(_: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
            with self._lock:
                return state.lexical.search(term_ids, depth, bm25, allowed)

        def dense(text: str, depth: int) -> tuple[np.ndarray, np.ndarray]:
            vector = self._query_vector(state.embedder, text)  # type: ignore[arg-type]
            with self._lock:
                return state.dense.search(vector, depth, allowed)  # type: ignore[union-attr]

        def vectors_of(rows: list[int]) -> np.ndarray:
            with self._lock:
                return state.dense.vectors_for(rows)  # type: ignore[union-attr]

        has_dense = state.dense is not None and state.embedder is not None
        needs_metadata = options.boost_rules or options.caps or options.preferences
        metadata = self._metadata(state) if needs_metadata else None
        return rank(
            query,
            options,
            lexical,
            dense if has_dense else None,
            metadata.__getitem__ if metadata is not None else None,
            vectors_of if state.dense is not None else None,
        )

    def _metadata(self, state: _Collection) -> dict[int, dict[str, Any]]:
        """Row -> merged metadata of a collection, loaded once and kept up to date."""
        with self._lock:
            if state.metadata is None:
                state.metadata = self.store.chunk_metadata(state.id)
            return state.metadata

    def _allowed_rows(self, state: _Collection, options: SearchOptions) -> np.ndarray | None:
        """Rows whose metadata passes the filter (cached until the collection changes)."""
        if options.predicate is None:
            return None
        key = filter_key(options.filters)
        with self._lock:
            cached = state.allowed.get(key)
            if cached is not None:
                return cached
            predicate = options.predicate
            rows = [row for row, meta in self._metadata(state).items() if predicate(meta)]
            allowed = np.array(sorted(rows), np.int64)
            if len(state.allowed) > 64:
                state.allowed.clear()
            state.allowed[key] = allowed
            return allowed

    def search_many(
        self, query: str, requests: Sequence[dict[str, Any]], **shared: Any
    ) -> MultiSearchResult:
        """Search several collections at once, in parallel, each with its own settings.

        Each request is `{"collection": name, "top_k"?: n, "label"?: text, ...}` plus any
        `search` keyword (filters, boosts, mode, ...); `shared` keywords apply to every
        request that does not set them. Groups come back in request order; `merged`
        interleaves them by reciprocal rank (scores of different collections do not compare).
        """
        if not isinstance(requests, Sequence) or not requests:
            raise InputError("search_many needs a non-empty list of collection requests")
        jobs = []
        for request in requests:
            if not isinstance(request, dict) or not isinstance(request.get("collection"), str):
                raise InputError(f"each request needs a 'collection' name, got {request!r}")
            params = {**shared, **{k: v for k, v in request.items() if k not in ("label",)}}
            name = params.pop("collection")
            jobs.append((name, request.get("label"), params))
        pool = self._thread_pool()
        futures = [pool.submit(self.search, query, collection=n, **p) for n, _, p in jobs]
        groups = [
            SearchGroup(name, label, future.result())
            for (name, label, _), future in zip(jobs, futures)
        ]
        order = sorted(
            ((hit.rank, g, hit) for g, group in enumerate(groups) for hit in group.hits),
            key=lambda item: (item[0], item[1]),
        )
        return MultiSearchResult(groups, [hit for _, _, hit in order])

    def context(
        self,
        query: str,
        collection: str = DEFAULT_COLLECTION,
        top_k: int = 5,
        *,
        collections: Sequence[dict[str, Any]] | None = None,
        budget: int | None = None,
        instruction: str | None = GROUNDING_INSTRUCTION,
        **search_kwargs: Any,
    ) -> PackedContext:
        """Search, then pack the hits into a numbered, cited block within `budget` tokens.

        With `collections` (requests as for `search_many`, each with an optional `label`),
        every collection becomes a labelled section, in the order given.
        """
        if collections:
            result = self.search_many(query, collections, **search_kwargs)
            sections = [(g.label, list(g.hits)) for g in result.groups]
        else:
            hits = self.search(query, top_k, collection, **search_kwargs)
            sections = [(None, list(hits))]
        return self.pack(sections, budget, instruction)

    def pack(
        self,
        sections: Sequence[tuple[str | None, Sequence[Hit]]],
        budget: int | None = None,
        instruction: str | None = GROUNDING_INSTRUCTION,
    ) -> PackedContext:
        """Pack existing hits (in labelled sections) into a context block."""
        texts: dict[tuple[str, str], str] = {}

        def document_text(collection: str, doc_id: str) -> str:
            key = (collection, doc_id)
            if key not in texts:
                texts[key] = self.document_text(doc_id, collection)
            return texts[key]

        return pack_context(sections, document_text, budget, instruction)

    def _thread_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ragloom")
            return self._pool

    def clear_query_cache(self) -> None:
        """Forget remembered query vectors (benchmarks time the embedding this way)."""
        with self._lock:
            self._query_cache.clear()

    def _query_vector(self, embedder: Embedder, text: str) -> np.ndarray:
        """Embed a query, remembering recent ones (apps repeat queries)."""
        key = (embedder.name, text)
        vector = self._query_cache.get(key)
        if vector is None:
            vector = (
                embedder.embed_query(text)
                if text.strip()
                else np.zeros(embedder.dimension, np.float32)
            )
            with self._lock:
                if len(self._query_cache) >= 1024:
                    self._query_cache.pop(next(iter(self._query_cache)))
                self._query_cache[key] = vector
        return vector

    def document_text(self, doc_id: str, collection: str = DEFAULT_COLLECTION) -> str:
        """The full text of a stored document (chunk offsets index into it)."""
        return self.store.document_text(self._collection(collection).id, doc_id)

    def documents(
        self, collection: str | None = None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        """A page of stored documents."""
        for name, value in (("offset", offset), ("limit", limit)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
                raise InputError(f"{name} must be a non-negative integer below 2**63")
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
                "vectors": len(state.dense) if state.dense is not None else 0,
                "embedding": state.config.embedding,
                "terms": state.lexical.vocabulary_size,
                "avg_chunk_terms": round(state.lexical.avgdl, 2),
                "config": state.config.to_dict(),
            }
        out["documents"] = sum(c["documents"] for c in out["collections"].values())
        out["chunks"] = sum(c["chunks"] for c in out["collections"].values())
        return out
