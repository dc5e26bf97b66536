"""`ragloom.Index`: the library's one entry point, a thin facade over the engine.

Writing goes through `ragloom.engine.ingest`, reading through `ragloom.engine.searching`,
storage through `ragloom.store` (whose snapshot and commit rules make every search see one
version and every failed write change nothing)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.context import GROUNDING_INSTRUCTION as GROUNDING
from ragloom.context import PackedContext
from ragloom.contract.schema import check_query
from ragloom.embedding import Embedder
from ragloom.engine.calibration import calibrate
from ragloom.engine.collections import configure, documents_page, index_stats, pending_vectors, warm
from ragloom.engine.embedders import Embedders
from ragloom.engine.ingest import Ingest
from ragloom.engine.keywords import collection_requests, search_options
from ragloom.engine.legs import DEFAULT_COLLECTION
from ragloom.engine.reading import IndexReading
from ragloom.engine.refresh import FusionProfiles
from ragloom.engine.report import IndexReport
from ragloom.engine.searching import Searcher, Sections
from ragloom.engine.services import SearchServices
from ragloom.engine.vectors import VectorPlan, embedding_text
from ragloom.engine.writes import Writes
from ragloom.enrich import Enricher
from ragloom.lexical import BM25Params
from ragloom.retrieval.ranking import Ranking
from ragloom.retrieval.search_options import SearchOptions
from ragloom.store import StoredDocument
from ragloom.store.base import Snapshot
from ragloom.store.open import open_store
from ragloom.types import Document, MultiSearchResult, SearchResult

if TYPE_CHECKING:  # (imported by the calls that use them: a search never loads them)
    from ragloom.answer import AskResult
    from ragloom.loading import FileRun, JsonlFields, ReadPolicy, StopSignal

__all__ = ["DEFAULT_COLLECTION", "Index", "IndexReading", "IndexReport", "embedding_text"]
T = TypeVar("T")


class Index:
    """An index: `add`/`index_path` documents, `delete` them, `search` them. Safe to share
    between threads: each search reads one committed version of the index; writes are
    serialized and visible to searches once committed."""

    def __init__(
        self,
        path: str | Path = "ragloom.db",  # or a database URL (postgresql://...)
        create: bool = True,
        embedder: str | Embedder | None = "auto",
        read_only: bool = False,
        llm: Any = None,
        reranker: Any = None,
    ) -> None:
        """Open or create an index file.

        `embedder`: "auto" uses the model a collection was indexed with, and for a new
        collection the local model when it is installed ($RAGLOOM_EMBEDDER overrides);
        None or "none" means lexical only; an Embedder or a spec such as "local" or
        "ollama:MODEL@URL" is used as given and must match a collection's stored vectors.
        Opening never contacts an embedding service (a writable opener that finds a stale
        fusion profile refreshes it once it has been open 15 s without writes). `read_only`
        opens for search only (a read-only file or folder is opened that way by itself).
        `llm` (a spec such as "openai:MODEL@URL", default $RAGLOOM_LLM) and `reranker` (a
        spec such as "onnx:FOLDER", default $RAGLOOM_RERANKER) serve the search steps that
        need them (`expand`, `hops`, `rerank`); nothing is called unless a step is on.
        """
        self.models = Embedders(embedder)
        self.store = open_store(path, create=create, read_only=read_only)
        self.path = getattr(self.store, "path", self.store.location)
        self._ingest = Ingest(self.store, self.models)
        self._profiles = FusionProfiles(self.store, self.models)  # adaptive fusion's weights
        self._writes = Writes(self._ingest, self._profiles)
        self.services = SearchServices(llm, reranker)  # built on first use
        self._searcher = Searcher(self.store, self.models, self.services)
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------
    def close(self, finish: bool = True, on_step: Callable[[int, str], None] | None = None) -> None:
        """Close (once). If this process wrote, `finish` first does what `optimize` does, with
        progress to `on_step`: the next opener is at full speed from its first query. False
        hands that on to the next writable opener (background, searches slower meanwhile)."""
        if self._closed:
            return
        self._closed = True
        try:
            if finish:
                self._upkeep(on_step, own=True)
        finally:
            self._profiles.close()
            self.services.close()
            self.store.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(finish=kind is None)  # an error on the way out: hand the work on

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    # -- collections ------------------------------------------------------------------
    def collections(self) -> list[str]:
        """Names of the collections in this index."""
        return sorted(self.store.collections())

    def configure(self, collection: str = DEFAULT_COLLECTION, **changes: Any) -> CollectionConfig:
        """Create a collection with settings, or change chunking/BM25 settings of an existing
        one; a non-empty collection's tokenizer cannot change (its postings would not match)."""
        return configure(self._ingest, collection, changes)

    # -- writing ----------------------------------------------------------------------
    def add(
        self,
        documents: Iterable[Document],
        collection: str = DEFAULT_COLLECTION,
        on_batch: Callable[[int], None] | None = None,
        enrichers: Sequence[Enricher] = (),
        on_embed_error: str = "pending",
    ) -> IndexReport:
        """Index documents; unchanged ones (same content hash) are skipped.

        Each changed document replaces all of its chunks atomically; batches commit as they go.
        A document whose `collection` is set goes there instead of `collection`. `enrichers`
        add metadata to each chunk (see `ragloom.enrich`). When the embedding service fails,
        documents are still stored and searchable lexically, their vectors pending (filled
        by a later call); `on_embed_error="raise"` raises the service's error instead.
        """
        return self._writes.add(documents, collection, on_batch, enrichers, on_embed_error)

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
        on_embed_error: str = "pending",
        *,
        fail_fast: bool = False,
        policy: ReadPolicy | None = None,
        stop: StopSignal | None = None,
        keep_missing: bool = False,
        include_ignored: bool = False,
    ) -> IndexReport:
        """Index files, and folders walked by the include/exclude globs (scratch files and
        what a `.gitignore` ignores left out unless `include_ignored`; every file left out is
        counted in `report.left_out`). A file that cannot be indexed (bad text or JSONL, no
        supported format, over `policy.max_file_size`) is in `report.failed`, with a warning,
        or raised with `fail_fast`; `lenient` replaces invalid bytes and skips bad JSONL lines.
        A folder's documents of files gone are removed (`report.removed`; why not:
        `report.held`) unless `keep_missing`. `on_file(done, total)` hears of progress; `stop`
        ends the run. One file is one document however it is reached (`ragloom.loading.run`).
        """
        from ragloom.loading import index_files

        paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
        run = index_files(
            paths, include, exclude, lenient, jsonl, policy, fail_fast, stop, include_ignored
        )
        run.on_file = on_file
        plan = VectorPlan(on_embed_error)
        return self._writes.folders(run, paths, collection, enrichers, plan, keep_missing)

    def index_run(
        self,
        run: FileRun,
        collection: str = DEFAULT_COLLECTION,
        enrichers: Sequence[Enricher] = (),
        plan: VectorPlan | None = None,
    ) -> IndexReport:
        """Index a prepared `FileRun` (as `index_path` and the watcher make); `plan` says
        how vectors are made (`later`: lexically searchable first, vectors filled after)."""
        return self._writes.files(run, collection, enrichers, plan or VectorPlan())

    def delete(self, doc_id: str, collection: str = DEFAULT_COLLECTION) -> int:
        """Remove a document and every trace of it; returns the number of chunks removed."""
        return self._writes.delete_document(doc_id, collection)

    def delete_many(self, doc_ids: Sequence[str], collection: str = DEFAULT_COLLECTION) -> int:
        """Remove documents (ids not stored are passed over); returns how many were removed."""
        return self._writes.delete(doc_ids, collection)

    def reembed(
        self, collection: str = DEFAULT_COLLECTION, embedder: str | Embedder = "local"
    ) -> int:
        """Replace a collection's vectors with `embedder`'s (all chunks, one transaction).

        The way to switch models, or to add vectors to a lexical-only collection. Returns the
        number of chunks embedded. Vectors already in the embedding cache are reused.
        """
        return self._ingest.reembed(collection, embedder)

    def calibrate(self, collection: str | None = None, force: bool = False) -> dict[str, Any]:
        """Profile collections whose fusion profile is missing or stale (all with `force`),
        returning the new profiles; writes do it themselves (docs/hybrid.md, "Fusion")."""
        return calibrate(self.store, self.models, collection, force)

    def fill_pending(self, collection: str | None = None, limit: int | None = None) -> int:
        """Embed chunks that wait for vectors (the service was down when they were indexed);
        returns how many got one. Raises the service's typed error if it still fails."""
        names = [collection] if collection is not None else self.collections()
        return sum(self._ingest.fill_pending(name, limit) for name in names)

    # -- reading ----------------------------------------------------------------------
    def search(
        self,
        query: str,
        top_k: int = 5,
        collection: str = DEFAULT_COLLECTION,
        **options: Any,
    ) -> SearchResult:
        """Hits for `query`, best first (a list of Hit with `.degraded`, `.reason`, `.mode`).

        Options (see `SearchOptions`): `mode` ("lexical", "dense", "hybrid"; default hybrid when the
        collection has vectors), `fusion` ("rrf" with `rrf_k`, or "weighted" over `normalization`-ed
        scores) with per-leg `weights`, `candidates` per leg, `min_dense_similarity` for dense-only
        hits (None: the floor measured for the collection's model, see `ragloom.embedding.floors`;
        -1 keeps them all), `min_score`, `bm25`, `strict` (raise instead of answering from BM25 when
        the query cannot be embedded), `filters` (applied inside both legs), `boosts`, `diversity`
        (`{"max_per": {...}}`, which caps only hits that have the key unless `"missing": "group"`;
        `{"mmr": {...}}`), `prefer`, `explain`, `tokens` (`with_tokens`, its older name, works too);
        an unknown option is an InputError naming the known ones. Fusion settings left out take the
        collection's own defaults (`configure(search=...)`, as `ragloom tune --apply` writes them),
        then the global ones. The result's `timings` hold each stage's milliseconds. An empty or
        punctuation-only query gives no hits.

        Steps that need a service (docs/llm-steps.md): `expand` "llm" (LLM rephrasings, searched
        together and merged by chunk; `max_variants`, `merge`) or "prf" (RM3 feedback on the lexical
        leg; `prf`); `rerank` True (the index's reranker) or a reranker spec/object re-scores the
        best `rerank_depth` candidates; `hops` > 1 runs the multi-hop loop; `llm` gives this search
        its own LLM.
        """
        return self.search_with(query, search_options(top_k, **options), collection)

    def search_with(
        self, query: str, options: SearchOptions, collection: str = DEFAULT_COLLECTION
    ) -> SearchResult:
        """`search` with its options given as one `SearchOptions` object."""
        searcher: Searcher = self._searcher
        check_query(query)
        return searcher.search(query, options, collection)

    def rank(
        self, query: str, options: SearchOptions, collection: str = DEFAULT_COLLECTION
    ) -> Ranking:
        """The ranked candidates (chunk row ids with provenance) without fetching chunk text."""
        return self._searcher.rank(check_query(query), options, collection)

    def search_rows(
        self,
        query: str,
        top_n: int = 10,
        collection: str = DEFAULT_COLLECTION,
        bm25: BM25Params | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Lexical leg only: top chunk row ids and BM25 scores (no chunk text fetched)."""
        options = SearchOptions(top_k=top_n, mode="lexical", bm25=bm25)
        return self._searcher.rows(check_query(query), options, collection)

    def search_many(
        self, query: str, requests: Sequence[dict[str, Any]], **shared: Any
    ) -> MultiSearchResult:
        """Search several collections at once, from one version of the index.

        Each request is `{"collection": name, "top_k"?: n, "label"?: text, ...}` plus any `search`
        keyword; `shared` keywords apply to every request that does not set them. The query is
        embedded once per model. Groups come back in request order; `merged` interleaves them by
        reciprocal rank (scores of different collections do not compare).
        """
        wanted = collection_requests(requests, shared)
        return self._searcher.search_many(check_query(query), wanted)

    def context(
        self,
        query: str,
        collection: str = DEFAULT_COLLECTION,
        top_k: int = 5,
        *,
        collections: Sequence[dict[str, Any]] | None = None,
        budget: int | None = None,
        instruction: str | None = GROUNDING,
        **search_kwargs: Any,
    ) -> PackedContext:
        """Search, then pack the hits into a numbered, cited block within `budget` tokens.

        With `collections` (requests as for `search_many`, each with an optional `label`), every
        collection becomes a labelled section, in the order given.
        """
        if collections:
            requests = collection_requests(collections, search_kwargs)
        else:
            requests = [(collection, None, search_options(top_k, **search_kwargs))]
        check_query(query)
        return self._searcher.context(query, requests, budget, instruction, bool(collections))

    def ask(self, question: str, **options: Any) -> AskResult:
        """The model's answer from this index's passages, citations checked (`collection`,
        `top_k`, `llm`, `budget`, `history`, `template`, `max_rounds`, `min_relevance`,
        `max_tokens`, `show_prompt`, `strict` and every `search` option: see docs/answers.md)."""
        from ragloom import answer

        return answer.ask(self, question, **options)

    def ask_stream(self, question: str, **options: Any) -> Iterator[str | AskResult]:
        """`ask` as it happens: the answer's text pieces, then the `AskResult`."""
        from ragloom import answer

        return answer.ask_stream(self, question, **options)

    @contextmanager
    def reading(self) -> Iterator[IndexReading]:
        """Several reads from one version of the index (hits and their context block):
        `search`, `search_many`, `pack` and `document_text` as on the Index."""
        with self.store.snapshot() as snap:
            yield self._reading(snap)

    def _reading(self, snap: Snapshot) -> IndexReading:
        return IndexReading(self._searcher, self.models, snap)

    def read(self, work: Callable[[IndexReading], T]) -> T:
        """`work(reading)` in one version of the index, as `reading` gives; run once more in
        a fresh version if the store lost its connection midway (a replica went away)."""
        return self._searcher.read(lambda snap: work(self._reading(snap)))

    def pack(
        self, sections: Sections, budget: int | None = None, instruction: str | None = GROUNDING
    ) -> PackedContext:
        """Pack existing hits (in labelled sections) into a context block."""
        with self.reading() as reader:
            return reader.pack(sections, budget, instruction)

    def clear_query_cache(self) -> None:
        """Forget remembered query vectors (benchmarks time the embedding this way)."""
        self.models.clear_queries()

    def document_text(self, doc_id: str, collection: str = DEFAULT_COLLECTION) -> str:
        """The full text of a stored document (chunk offsets index into it)."""
        with self.store.snapshot() as snap:
            return snap.document_text(collection, doc_id)

    def documents(
        self, collection: str | None = None, offset: int = 0, limit: int = 100
    ) -> list[StoredDocument]:
        """A page of stored documents."""
        return documents_page(self.store, collection, offset, limit)

    def chunk_documents(self, collection: str = DEFAULT_COLLECTION) -> dict[int, str]:
        """Chunk row id -> document id for a collection (to fold `search_rows` to documents)."""
        with self.store.snapshot() as snap:
            return snap.collection(collection).chunk_documents()

    def stats(self) -> dict[str, Any]:
        """Counts per collection (documents, chunks, vectors, pending) plus lexical statistics."""
        return index_stats(self.store, self.path)

    def pending(self) -> int:
        """Chunks waiting for vectors, over every collection."""
        return pending_vectors(self.store)

    def warm(self, wait: bool = False) -> None:
        """Load the compiled kernels, and every collection's segments and model, now; build
        the most common terms' BM25 weights on a thread of their own (`wait`: done first)."""
        warm(self.store, self.models, wait)

    def check(self) -> list[str]:
        """Verify the index (file integrity; documents, chunks, postings, statistics and
        vectors agree); returns the problems found, empty when healthy."""
        return self.store.check()

    def repair(self) -> list[str]:
        """Rebuild segment files and search graphs that are missing or damaged (from the
        rows, which are the truth); returns what was done. Run `check` afterwards."""
        return self.store.repair()

    def optimize(self, on_step: Callable[[int, str], None] | None = None) -> int:
        """Flush, merge, build search graphs and refresh stale fusion profiles now (else done
        in the background); `on_step(done, what)` hears of each step. Returns the steps."""
        return self._upkeep(on_step, own=False)

    def _upkeep(self, on_step: Callable[[int, str], None] | None, own: bool) -> int:
        """The store's pending work, then stale fusion profiles (`own`: if this process wrote)."""
        done = self.store.finish(on_step) if own else self.store.maintain(True, on_step)
        step = on_step and (lambda n, what: on_step(done + n, what))
        return done + (self._profiles.finish(step) if own else self._profiles.refresh(step))
