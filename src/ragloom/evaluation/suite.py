"""Every mode and fusion method scored in one run, from one embedded index.

`run_suite` builds (or reuses) the index once, fetches each query's legs once
(`ragloom.evaluation.leg_cache`), then scores each setting on them. nDCG@10 and MRR@10 are
scored on the ten hits a `top_k=10` search returns (each leg fetching its `candidates`, as
an application's search does), Recall@100 on a `top_k=100` search.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.config import CollectionConfig
from ragloom.embedding import Embedder
from ragloom.errors import InputError
from ragloom.evaluation.beir import BeirDataset, load_beir
from ragloom.evaluation.leg_cache import LegCache
from ragloom.evaluation.metrics import per_query
from ragloom.evaluation.prepare import prepared_index
from ragloom.evaluation.runner import EVAL_COLLECTION, rank_documents, whole_document_config
from ragloom.retrieval.adaptive import ADAPTIVE
from ragloom.retrieval.fusion import effective_weights
from ragloom.retrieval.pipeline import DENSE, LEXICAL
from ragloom.retrieval.search_options import MODES, SearchOptions

METRICS = ("ndcg@10", "recall@100", "mrr@10")
SWEEP_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))  # the dense leg's share


@dataclass(frozen=True)
class Setting:
    """A named search setting to score."""

    name: str
    options: SearchOptions
    default: bool = False  # what a search with no settings does


def fusion_name(options: SearchOptions) -> str:
    """`adaptive`, `rrf k=60 d=1 l=1`, `weighted z-score d=0.7 l=0.3`: method and the weights
    it applies (adaptive sets its own per query unless given some)."""
    if options.fusion == ADAPTIVE:
        given = options.weights or {}
        if given.get("dense") is None and given.get("lexical") is None:
            return "adaptive"
        return f"adaptive d={given.get('dense', 0):g} l={given.get('lexical', 0):g}"
    if options.fusion == "rrf":
        text = f"rrf k={options.rrf_k:g}"
    else:
        text = "weighted " + ("min-max" if options.normalization == "minmax" else "z-score")
    weights = effective_weights(options.fusion, options.weights)
    return f"{text} d={weights['dense']:g} l={weights['lexical']:g}"


def settings_for(modes: Sequence[str], has_vectors: bool) -> list[Setting]:
    """The settings `--modes` asks for: each leg alone, and hybrid with every fusion method."""
    unknown = set(modes) - set(MODES)
    if unknown:
        raise InputError(
            f"unknown mode(s) {', '.join(sorted(unknown))}", "use lexical, dense, hybrid or all"
        )
    if not has_vectors and set(modes) - {"lexical"}:
        raise InputError(
            "dense and hybrid modes need vectors", "give an embedding model (--embedder)"
        )
    out = []
    if "lexical" in modes:
        out.append(Setting("lexical", SearchOptions(mode="lexical")))
    if "dense" in modes:
        out.append(Setting("dense", SearchOptions(mode="dense")))
    if "hybrid" in modes:
        default = SearchOptions(mode="hybrid")
        for options in (
            SearchOptions(mode="hybrid", fusion=ADAPTIVE),
            SearchOptions(mode="hybrid", fusion="rrf"),
            SearchOptions(mode="hybrid", fusion="weighted", normalization="minmax"),
            SearchOptions(mode="hybrid", fusion="weighted", normalization="zscore"),
        ):
            is_default = options == default
            out.append(Setting(f"hybrid {fusion_name(options)}", options, is_default))
        if not any(s.default for s in out):
            out.append(Setting(f"hybrid {fusion_name(default)}", default, True))
    return out


def parse_modes(text: str) -> list[str]:
    """`lexical,dense` -> ["lexical", "dense"]; `all` -> every mode."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if "all" in names:
        return list(MODES)
    if not names:
        raise InputError("--modes is empty", "use lexical, dense, hybrid (comma-separated) or all")
    return list(dict.fromkeys(names))


@dataclass
class Scored:
    """One setting's mean metrics, each query's, and what one search cost."""

    setting: Setting
    metrics: dict[str, float]
    queries: dict[str, dict[str, float]]  # query id -> metric -> value
    ms_per_query: float | None = None


@dataclass
class Scorer:
    """Scores settings on a dataset's queries from cached legs."""

    dataset: BeirDataset
    cache: LegCache
    doc_of_row: dict[int, str]
    keep_self_hits: bool = False

    def run(self, options: SearchOptions, depth: int) -> dict[str, list[str]]:
        """Query id -> ranked document ids of a `top_k=depth` search with `options`."""
        return {
            qid: rank_documents(
                self.cache.rank_rows,
                text,
                depth,
                self.doc_of_row,
                None if self.keep_self_hits else qid,
                options,
            )
            for qid, text in self.dataset.queries.items()
        }

    def score(self, setting: Setting, recall: bool = True) -> Scored:
        """nDCG@10 and MRR@10 of the top-10 search, Recall@100 of the top-100 search."""
        qrels = self.dataset.qrels
        started = time.perf_counter()
        top10 = per_query(self.run(setting.options, 10), qrels, (10, 10, 10))
        ranking_ms = 1000.0 * (time.perf_counter() - started) / max(1, len(self.dataset.queries))
        queries = {q: {"ndcg@10": m["ndcg@10"], "mrr@10": m["mrr@10"]} for q, m in top10.items()}
        if recall:
            top100 = per_query(self.run(setting.options, 100), qrels, (10, 100, 10))
            for qid, m in top100.items():
                queries[qid]["recall@100"] = m["recall@100"]
        names = METRICS if recall else ("ndcg@10", "mrr@10")
        means = {n: sum(q[n] for q in queries.values()) / len(queries) for n in names}
        return Scored(setting, means, queries, self._cost(setting.options, ranking_ms))

    def _cost(self, options: SearchOptions, ranking_ms: float) -> float | None:
        """Milliseconds of one search: its legs (dense with the query embedding) and fusion."""
        legs = {"lexical": (LEXICAL,), "dense": (DENSE,)}.get(options.mode or "", (LEXICAL, DENSE))
        costs = [self.cache.leg_ms_per_query(leg) for leg in legs]
        if any(c is None for c in costs):
            return None
        return sum(costs) + ranking_ms  # type: ignore[arg-type]


@dataclass
class SweepPoint:
    """nDCG@10 of one fusion method at one dense weight (lexical gets 1 - weight)."""

    method: str
    dense_weight: float
    ndcg: float


def weight_sweep(scorer: Scorer, weights: Sequence[float] = SWEEP_WEIGHTS) -> list[SweepPoint]:
    """nDCG@10 of every fusion method across the dense leg's weight."""
    points = []
    for base in (
        SearchOptions(mode="hybrid", fusion="rrf"),
        SearchOptions(mode="hybrid", fusion="weighted", normalization="minmax"),
        SearchOptions(mode="hybrid", fusion="weighted", normalization="zscore"),
    ):
        for w in weights:
            options = SearchOptions(
                mode="hybrid",
                fusion=base.fusion,
                normalization=base.normalization,
                weights={"lexical": round(1 - w, 6), "dense": w},
            )
            scored = scorer.score(Setting("sweep", options), recall=False)
            method = fusion_name(base).rsplit(" d=", 1)[0]
            points.append(SweepPoint(method, w, scored.metrics["ndcg@10"]))
    return points


@dataclass
class SuiteResult:
    """Everything one `ragloom eval` run measured."""

    dataset: str
    split: str
    queries: int
    documents: int
    chunks: int
    embedder: str | None
    build_seconds: float
    reused: bool
    legs_seconds: dict[str, float]
    scored: list[Scored]
    sweep: list[SweepPoint] = field(default_factory=list)
    total_seconds: float = 0.0
    expand: str | None = None  # "prf": every setting's lexical leg had RM3 feedback

    def to_dict(self) -> dict[str, Any]:
        plain = ("dataset", "split", "queries", "documents", "chunks", "embedder", "expand")
        return {
            **{name: getattr(self, name) for name in plain},
            "index_seconds": round(self.build_seconds, 3),
            "index_reused": self.reused,
            "legs_seconds": {k: round(v, 3) for k, v in self.legs_seconds.items()},
            "total_seconds": round(self.total_seconds, 3),
            "results": [
                {
                    "setting": s.setting.name,
                    "default": s.setting.default,
                    "mode": s.setting.options.mode,
                    **{k: round(v, 4) for k, v in s.metrics.items()},
                    "ms_per_query": None if s.ms_per_query is None else round(s.ms_per_query, 3),
                }
                for s in self.scored
            ],
            "sweep": [
                {"method": p.method, "dense_weight": p.dense_weight, "ndcg@10": round(p.ndcg, 4)}
                for p in self.sweep
            ],
        }


def run_suite(
    folder: str | Path,
    split: str = "test",
    modes: Sequence[str] = ("lexical",),
    config: CollectionConfig | None = None,
    embedder: str | Embedder | None = None,
    index_path: str | Path | None = None,
    keep_self_hits: bool = False,
    sweep: bool = False,
    on_progress: Callable[[str, int, int], None] | None = None,
    expand: str | None = None,
) -> SuiteResult:
    """Build or reuse the index once, fetch the legs once, score every asked-for setting.
    `expand="prf"` scores them with RM3 feedback on the lexical leg (docs/llm-steps.md)."""
    started = time.perf_counter()
    dataset = load_beir(folder, split)
    needs_vectors = bool(set(modes) - {"lexical"})
    with prepared_index(
        dataset,
        config or whole_document_config(),
        embedder if needs_vectors else None,
        index_path,
        on_progress,
    ) as prepared:
        index = prepared.index
        counts = index.stats()["collections"][EVAL_COLLECTION]
        settings = settings_for(modes, counts["vectors"] > 0)
        cache = LegCache(index, EVAL_COLLECTION, dense=needs_vectors, expand=expand)
        done = 0

        def query_done() -> None:
            nonlocal done
            done += 1
            if on_progress:
                on_progress("legs", done, len(dataset.queries))

        cache.warm(dataset.queries.values(), query_done)
        scorer = Scorer(dataset, cache, index.chunk_documents(EVAL_COLLECTION), keep_self_hits)
        scored = [scorer.score(s) for s in settings]
        points = weight_sweep(scorer) if sweep and "hybrid" in modes else []
    return SuiteResult(
        dataset=dataset.name,
        split=split,
        queries=len(next(iter(scored)).queries) if scored else 0,
        documents=counts["documents"],
        chunks=counts["chunks"],
        embedder=prepared.embedder,
        build_seconds=prepared.build_seconds,
        reused=prepared.reused,
        legs_seconds=dict(cache.seconds),
        scored=scored,
        sweep=points,
        total_seconds=time.perf_counter() - started,
        expand=expand,
    )


__all__ = ["Scored", "Scorer", "Setting", "SuiteResult", "run_suite"]
