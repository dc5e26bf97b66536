"""Roles bench/scale.py runs in child processes, so each one's memory is measured alone:
`build` ingests N chunks, `serve` opens the index and runs the query mix, `writes` times
one-document adds, replaces and deletes. Each prints one JSON object."""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

import numpy as np
from scale_data import (
    FILTERS,
    PASSES,
    BenchEmbedder,
    Corpus,
    hybrid_words,
    merge_passes,
    query_chunks,
    query_words,
)
from scale_peers import build_bm25s, exact_topk
from scale_qdrant import build_qdrant, serve_qdrant

from ragloom import Document, Index
from ragloom.engine.calibration import needs_profile
from ragloom.engine.keywords import search_options

BATCH = 10_000


class PeakSampler:
    """Samples the process's anonymous and file-backed resident memory every 20 ms: the
    kernel's peak RSS counts pages of memory-mapped files too, which it can drop at will."""

    def __init__(self) -> None:
        self.anon_mb = self.file_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            now = _rss()
            self.anon_mb = max(self.anon_mb, now["anon_mb"])
            self.file_mb = max(self.file_mb, now["file_mb"])

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _rss() -> dict[str, float]:
    """Peak and current resident memory (MB); anonymous memory excludes mapped files."""
    status = Path("/proc/self/status").read_text().splitlines()
    fields = {k: v.split()[0] for k, _, v in (line.partition(":") for line in status) if v.split()}
    return {
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "anon_mb": int(fields.get("RssAnon", 0)) / 1024,
        "file_mb": int(fields.get("RssFile", 0)) / 1024,
    }


def _open(path: Path, corpus: Corpus, cache: Path, n: int) -> Index:
    table = corpus.vector_table(n + 100_000, cache)
    return Index(path, embedder=BenchEmbedder(corpus, table=table))


def build(path: Path, n: int, cache: Path, lexical_only: bool = False, finish: bool = True) -> dict:
    corpus = Corpus()
    index = Index(path, embedder=None) if lexical_only else _open(path, corpus, cache, n)
    index.configure(chunking={"max_chars": 4000, "overlap": 0, "min_chars": 0})
    with PeakSampler() as sampler:
        add_seconds = 0.0  # Index.add only: generating the synthetic texts is not counted
        per_100k = []
        mark = 0.0
        for lo in range(0, n, BATCH):
            texts = corpus.texts(lo, min(BATCH, n - lo))
            docs = [
                Document(f"d{lo + i}", t, metadata=corpus.metadata(lo + i))
                for i, t in enumerate(texts)
            ]
            started = time.perf_counter()
            index.add(docs)
            add_seconds += time.perf_counter() - started
            if (lo + BATCH) % 100_000 == 0 or lo + BATCH >= n:
                done = min(lo + BATCH, n)
                rate = (done - (len(per_100k) * 100_000)) / (add_seconds - mark)
                per_100k.append({"chunks": done, "chunks_per_s": rate})
                mark = add_seconds
        # No optimize(): what every script does (Index.add, then close). Close finishes the
        # flushes, merges and graphs the writes made due (`finish=False`, `--hand-on`, leaves
        # them to the next process that keeps the index open, in the background).
        stats = index.stats()["collections"]["default"]
        close_steps: list[str] = []
        close_started = time.perf_counter()
        index.close(finish=finish, on_step=lambda _, what: close_steps.append(what))
        close_seconds = time.perf_counter() - close_started
    with Index(path, embedder=None, read_only=True) as closed:
        after_close = closed.stats()["collections"]["default"]["segments"]
    return {
        "lexical_only": lexical_only,
        "add_s": add_seconds,
        "add_chunks_per_s": n / add_seconds,
        "per_100k": per_100k,
        "close_s": close_seconds,
        "finish": finish,
        "close_steps": close_steps,
        "segments": stats["segments"],
        "segments_after_close": after_close,
        "peak_anon_mb": sampler.anon_mb,
        "peak_file_mb": sampler.file_mb,
        **_rss(),
    }


def _timed(fn, repeats: int) -> list[float]:
    out = []
    for i in range(repeats):
        started = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - started) * 1000)
    return out


def _latency(index: Index, query: str, **kw) -> tuple[float, list]:
    started = time.perf_counter()
    hits = index.search(query, top_k=10, **kw)
    return (time.perf_counter() - started) * 1000, hits


def new_question_mix(index: Index, n: int, corpus: Corpus) -> dict:
    """The hybrid queries of `query_mix`, each with its vector forgotten first, as for a
    question not asked before (every question at open is): a local model must then embed it,
    so its lexical leg runs in line, where a remembered vector lets the legs run side by side
    (`ragloom.engine.legs.runs_beside`). Keys end in " new question"."""
    texts = [corpus.texts(q, 1)[0] for q in query_chunks(n)]
    out: dict = {}
    for fname, spec in FILTERS.items():
        times = []
        for text in texts:
            index.models.clear_queries()
            times.append(_latency(index, hybrid_words(text), filters=spec)[0])
        out[f"hybrid {fname} new question"] = times
    return out


def _ids_latency(index: Index, query: str, **kw) -> float:
    """`Index.rank`: the top 10 as row ids with scores and provenance, no chunk text read
    (what embedded Qdrant answers when asked for no payload)."""
    started = time.perf_counter()
    index.rank(query, search_options(10, **kw))
    return (time.perf_counter() - started) * 1000


def ids_mix(index: Index, n: int, corpus: Corpus) -> dict:
    """`query_mix`'s latencies with ids and scores only (keys end in " ids")."""
    words = {label: " ".join(terms) for label, terms in query_words(corpus).items()}
    texts = [corpus.texts(q, 1)[0] for q in query_chunks(n)]
    out: dict = {}
    for fname, spec in FILTERS.items():
        for label, query in words.items():
            out[f"lexical {label} {fname} ids"] = [
                _ids_latency(index, query, mode="lexical", filters=spec) for _ in texts
            ]
        out[f"dense {fname} ids"] = [
            _ids_latency(index, text, mode="dense", filters=spec) for text in texts
        ]
        out[f"hybrid {fname} ids"] = [
            _ids_latency(index, hybrid_words(t), filters=spec) for t in texts
        ]
    return out


def query_mix(index: Index, n: int, corpus: Corpus, table: np.ndarray, recall: bool = True) -> dict:
    """Latencies (ms) of every query kind and filter, and (`recall`) dense recall@10 against
    exact."""
    words = {label: " ".join(terms) for label, terms in query_words(corpus).items()}
    rows = np.arange(n)
    masks = {"none": None, "1%": rows % 100 == 7, "0.1%": (rows * 7919) % 1000 == 123}
    results: dict = {}
    queries = query_chunks(n)  # unseen chunks as queries
    texts = [corpus.texts(q, 1)[0] for q in queries]
    found: dict[str, list[set[int]]] = {}
    for fname, spec in FILTERS.items():
        for label, query in words.items():
            results[f"lexical {label} {fname}"] = [
                _latency(index, query, mode="lexical", filters=spec)[0] for _ in queries
            ]
        times, found[fname] = [], []
        for text in texts:
            took, hits = _latency(index, text, mode="dense", filters=spec)
            times.append(took)
            found[fname].append({int(h.document_id[1:]) for h in hits})
        results[f"dense {fname}"] = times
        results[f"hybrid {fname}"] = [
            _latency(index, hybrid_words(t), filters=spec)[0] for t in texts
        ]
    if not recall:
        return results
    for fname, got_all in found.items():  # after every timed loop: exact scans evict caches
        shares = [
            len(got & set(exact_topk(table[:n], table[q], 10, masks[fname]).tolist())) / 10
            for q, got in zip(queries, got_all)
        ]
        results[f"dense recall {fname}"] = float(np.mean(shares))
    return results


def _pending(index: Index) -> list[str]:
    """Background work the opener still has to do: flushes, merges, graphs, and a fusion
    profile the batched build left stale (refreshed 15 s after open without writes)."""
    with index.store.snapshot() as snap:
        readers = {name: snap.collection(name) for name in sorted(snap.collections())}
        stale = [
            f"{name}: fusion profile"
            for name, reader in readers.items()
            if needs_profile(reader.config, reader.size())
        ]
    return index.store.maintenance.outstanding() + stale


def open_warm_first(
    path: Path, n: int, cache: Path, corpus: Corpus
) -> tuple[Index, tuple[float, float, float]]:
    """The index opened, warmed and searched once (a hybrid query not in the query mix): the
    index and the seconds of each of the three steps."""
    first = hybrid_words(corpus.texts(n + 500, 1)[0])
    marks = [time.perf_counter()]
    index = _open(path, corpus, cache, n)
    marks.append(time.perf_counter())
    index.warm()
    marks.append(time.perf_counter())
    index.search(first, top_k=10)
    marks.append(time.perf_counter())
    opened, warmed, searched = (b - a for a, b in zip(marks, marks[1:]))
    return index, (opened, warmed, searched)


def serve(path: Path, n: int, cache: Path, passes: int = PASSES) -> dict:
    """Open the index as built (closed without optimize), search at once, then again once
    the background work the opener resumed has finished (after one untimed pass, as
    embedded Qdrant gets: the merged files and new graphs are first read by it): the state
    a user gets. Settled, `passes` timed passes, each with its hits' text then ids only."""
    corpus = Corpus()
    started = time.perf_counter()
    index, (opened, warmed, searched) = open_warm_first(path, n, cache, corpus)
    open_s, first_s = opened + warmed, opened + warmed + searched
    table = corpus.vector_table(n + 100_000, cache)
    at_open = {
        "segments": index.stats()["collections"]["default"]["segments"],
        "pending work": _pending(index),
        **query_mix(index, n, corpus, table),
    }
    while _pending(index) and time.perf_counter() - started < 3600:
        time.sleep(0.2)
    settled_s = time.perf_counter() - started
    query_mix(index, n, corpus, table)  # one untimed pass over the settled files, as for Qdrant
    timed = [
        {**query_mix(index, n, corpus, table, recall=i == 0), **ids_mix(index, n, corpus)}
        for i in range(passes)
    ]
    timed += [new_question_mix(index, n, corpus) for _ in range(passes)]
    results: dict = {
        "open_s": open_s,
        "first_s": first_s,
        "settled_s": settled_s,
        "at_open": at_open,
        "segments": index.stats()["collections"]["default"]["segments"],
        **merge_passes(timed),
    }
    results.update(_rss())
    index.close()
    return results


def writes(path: Path, n: int, cache: Path) -> dict:
    corpus = Corpus()
    index = _open(path, corpus, cache, n)
    index.warm()
    rng = np.random.default_rng(5)
    out: dict = {}
    fresh = iter(range(n + 50_000, n + 60_000))

    def add(_: int) -> None:
        number = next(fresh)
        index.add(
            [Document(f"d{number}", corpus.texts(number, 1)[0], metadata=corpus.metadata(number))]
        )
        assert index.search(f"n{number}", top_k=1, mode="lexical")[0].document_id == f"d{number}"

    def replace(_: int) -> None:
        target = int(rng.integers(0, n))
        number = next(fresh)
        index.add(
            [Document(f"d{target}", corpus.texts(number, 1)[0], metadata=corpus.metadata(target))]
        )
        assert index.search(f"n{number}", top_k=1, mode="lexical")[0].document_id == f"d{target}"

    def delete(_: int) -> None:
        target = int(rng.integers(0, n))
        try:
            index.delete(f"d{target}")
        except Exception:
            return
        assert not [
            h
            for h in index.search(f"n{target}", top_k=3, mode="lexical")
            if h.document_id == f"d{target}"
        ]

    for name, fn in (("add", add), ("replace", replace), ("delete", delete)):
        out[name] = _timed(fn, 100)
    index.close()
    return out


if __name__ == "__main__":
    role, path, n, cache = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    passes = int(sys.argv[5]) if len(sys.argv) > 5 else PASSES  # timed passes of the query mix
    finish = (sys.argv[6] if len(sys.argv) > 6 else "finish") == "finish"  # or "hand-on"
    os.environ.setdefault("RAGLOOM_EMBEDDER", "none")
    roles = {
        "build": lambda *a: build(*a, finish=finish),
        "build-lexical": lambda *a: build(*a, lexical_only=True, finish=finish),
        "build-bm25s": lambda _path, n, _cache: build_bm25s(Corpus(), n, 40 * passes),
        "serve": lambda *a: serve(*a, passes),
        "build-qdrant": build_qdrant,
        "serve-qdrant": lambda *a: serve_qdrant(*a, passes),
        "writes": writes,
    }
    print(json.dumps(roles[role](path, n, cache)))
