"""`ragloom tune`: choose hybrid search settings on one split of judged queries, report them
on another next to the defaults, and optionally make them a collection's defaults.

The search walks a grid coordinate by coordinate, for each fusion family (adaptive, the
default, then RRF, weighted min-max, weighted z-score): the dense leg's weight first (for
adaptive fusion a fixed weight replaces its own per-query ones), then RRF's k, then candidate depth
and the dense-only floor together, then weight and k again around what was found. Every
trial scores nDCG@10 of a top-10 search on the training queries, from legs fetched once.
Ties go to the trial found first, which starts from the defaults.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragloom.errors import InputError
from ragloom.evaluation.beir import BeirDataset
from ragloom.evaluation.suite import Scorer, Setting, fusion_name
from ragloom.retrieval.search_options import SearchOptions

DENSE_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
RRF_KS = (1.0, 5.0, 10.0, 20.0, 40.0, 60.0, 100.0, 200.0)
CANDIDATES = (10, 20, 40, 80, 160)
FLOORS = (-1.0, 0.2, 0.3, 0.4, 0.45, 0.5, 0.6)  # -1: no floor (every cosine passes)
FAMILIES = (
    ("adaptive", "zscore"),
    ("rrf", "minmax"),
    ("weighted", "minmax"),
    ("weighted", "zscore"),
)


@dataclass(frozen=True)
class Grid:
    """The values each coordinate may take."""

    dense_weights: Sequence[float] = DENSE_WEIGHTS
    rrf_ks: Sequence[float] = RRF_KS
    candidates: Sequence[int] = CANDIDATES
    floors: Sequence[float] = FLOORS


def search_settings(options: SearchOptions) -> dict[str, Any]:
    """The settings of a hybrid search as a collection stores them (`CollectionConfig.search`)."""
    out: dict[str, Any] = {"fusion": options.fusion}
    if options.fusion == "rrf":
        out["rrf_k"] = options.rrf_k
    elif options.fusion == "weighted":
        out["normalization"] = options.normalization
    if options.weights:
        out["weights"] = dict(options.weights)
    out["candidates"] = options.candidates
    if options.min_dense_similarity is not None:  # None: the model's floor, left to the model
        out["min_dense_similarity"] = options.min_dense_similarity
    return out


def _with_weight(options: SearchOptions, dense: float) -> SearchOptions:
    return replace(options, weights={"lexical": round(1.0 - dense, 6), "dense": dense})


@dataclass
class Trial:
    options: SearchOptions
    ndcg: float


@dataclass
class Tuner:
    """Coordinate search over `grid`, scoring with `scorer` (training queries)."""

    scorer: Scorer
    grid: Grid = field(default_factory=Grid)
    on_trial: Callable[[int], None] | None = None
    trials: dict[str, Trial] = field(default_factory=dict)  # by settings, in trial order

    def score(self, options: SearchOptions) -> float:
        """Training nDCG@10 of a top-10 search with `options` (each setting scored once)."""
        key = json.dumps(search_settings(options), sort_keys=True)
        if key not in self.trials:
            scored = self.scorer.score(Setting("trial", options), recall=False)
            self.trials[key] = Trial(options, scored.metrics["ndcg@10"])
            if self.on_trial:
                self.on_trial(len(self.trials))
        return self.trials[key].ndcg

    def best(self, candidates: Sequence[SearchOptions]) -> SearchOptions:
        """The first of the highest-scoring options."""
        scores = [self.score(o) for o in candidates]
        return candidates[scores.index(max(scores))]

    def family(self, fusion: str, normalization: str) -> SearchOptions:
        """The best setting of one fusion family."""
        grid = self.grid
        start = SearchOptions(mode="hybrid", fusion=fusion, normalization=normalization)
        best = self.best([start] + [_with_weight(start, w) for w in grid.dense_weights])
        for _ in range(2):  # a second pass revisits each coordinate around the first's result
            if fusion == "rrf":
                best = self.best([best] + [replace(best, rrf_k=k) for k in grid.rrf_ks])
            best = self.best(
                [best]
                + [
                    replace(best, candidates=c, min_dense_similarity=f)
                    for c in grid.candidates
                    for f in grid.floors
                ]
            )
            best = self.best([best] + [_with_weight(best, w) for w in grid.dense_weights])
        return best

    def run(self) -> SearchOptions:
        """The best setting over every family (the defaults are trial one)."""
        self.score(SearchOptions(mode="hybrid"))
        return self.best([self.family(f, n) for f, n in FAMILIES])


def holdout_split(dataset: BeirDataset, fraction: float) -> tuple[BeirDataset, BeirDataset]:
    """Split one set of judged queries into (train, test), `fraction` of them for testing,
    by a hash of each query id (the same split on every run and machine)."""
    if not 0.0 < fraction < 1.0:
        raise InputError(f"--holdout must lie strictly between 0 and 1, got {fraction}")

    def held_out(qid: str) -> bool:
        digest = hashlib.sha256(qid.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < fraction

    parts = []
    for keep in (False, True):
        ids = [q for q in dataset.qrels if held_out(q) == keep]
        if not ids:
            raise InputError("--holdout leaves one side without queries", "use another fraction")
        parts.append(
            replace(
                dataset,
                queries={q: dataset.queries[q] for q in ids},
                qrels={q: dataset.qrels[q] for q in ids},
            )
        )
    return parts[0], parts[1]


@dataclass
class Comparison:
    """A setting's figures on the training and the test queries."""

    name: str
    settings: dict[str, Any] | None
    train: dict[str, float]
    test: dict[str, float]


@dataclass
class TuneResult:
    """What `ragloom tune` chose and how it compares with the defaults and the legs."""

    dataset: str
    train_queries: int
    test_queries: int
    trials: int
    chosen: dict[str, Any]
    rows: list[Comparison]
    applied_to: str | None = None

    def to_dict(self) -> dict[str, Any]:
        plain = ("dataset", "train_queries", "test_queries", "trials", "chosen", "applied_to")
        return {
            **{name: getattr(self, name) for name in plain},
            "results": [
                {
                    "setting": row.name,
                    "settings": row.settings,
                    "train": {k: round(v, 4) for k, v in row.train.items()},
                    "test": {k: round(v, 4) for k, v in row.test.items()},
                }
                for row in self.rows
            ],
        }


def compare(
    train: Scorer, test: Scorer, chosen: SearchOptions, has_dense: bool = True
) -> list[Comparison]:
    """The legs, the default hybrid search and the chosen one, on both splits."""
    settings = [Setting("lexical", SearchOptions(mode="lexical"))]
    if has_dense:
        default = SearchOptions(mode="hybrid")
        settings += [
            Setting("dense", SearchOptions(mode="dense")),
            Setting(f"hybrid default ({fusion_name(default)})", default, True),
            Setting(f"hybrid tuned ({fusion_name(chosen)})", chosen),
        ]
    rows = []
    for setting in settings:
        stored = search_settings(setting.options) if setting.options.mode == "hybrid" else None
        rows.append(
            Comparison(
                setting.name,
                stored,
                train.score(setting).metrics,
                test.score(setting).metrics,
            )
        )
    return rows
