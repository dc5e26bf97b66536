"""The evidence for the default hybrid fusion: every method and weight on every shared collection.

Usage: python bench/fusion_defaults.py [--data ../shared/data] [--cache /work/cache/fusion]
                                       [--datasets scifact cranfield cosqa] [--embedder local]
Each collection is embedded once into --cache (kept between runs, checked against the model)
and each test query's legs are fetched once; then RRF (k=60), weighted min-max and weighted
z-score fusion are scored at every dense weight from 0.1 to 0.9 (lexical weight 1 - dense),
with the default candidates (40) and dense-only floor (0.45). nDCG@10 scores the ten hits of a
top-10 search. A setting qualifies when it beats both of its legs on every collection; the
default is the qualifying setting with the best mean nDCG@10. Leave-one-out: the choice made
on all collections but one, checked on that one.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.legs import LegCache
from ragloom.evaluation.prepare import prepared_index
from ragloom.evaluation.runner import EVAL_COLLECTION, whole_document_config
from ragloom.evaluation.suite import Scorer, Setting, fusion_name
from ragloom.retrieval.search import SearchOptions

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
FAMILIES = (("rrf", "minmax"), ("weighted", "minmax"), ("weighted", "zscore"))


def candidates() -> dict[str, SearchOptions]:
    """Every fusion setting considered, by name."""
    out = {}
    for fusion, normalization in FAMILIES:
        for w in WEIGHTS:
            options = SearchOptions(
                mode="hybrid",
                fusion=fusion,
                normalization=normalization,
                weights={"lexical": round(1 - w, 6), "dense": w},
            )
            out[fusion_name(options)] = options
    return out


def measure(name: str, args: argparse.Namespace) -> dict[str, float]:
    """nDCG@10 of both legs and every candidate setting on one collection's test queries."""
    dataset = load_beir(Path(args.data) / name, "test")
    config = whole_document_config(tokenizer={"split_identifiers": name == "cosqa"})
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with prepared_index(dataset, config, args.embedder, args.cache / f"{name}.db") as prepared:
        cache = LegCache(prepared.index, EVAL_COLLECTION, dense=True)
        cache.warm(dataset.queries.values())
        scorer = Scorer(dataset, cache, prepared.index.chunk_documents(EVAL_COLLECTION))
        settings = {
            "lexical": SearchOptions(mode="lexical"),
            "dense": SearchOptions(mode="dense"),
            **candidates(),
        }
        figures = {
            key: scorer.score(Setting(key, options), recall=False).metrics["ndcg@10"]
            for key, options in settings.items()
        }
        embedder = prepared.embedder
    print(
        json.dumps(
            {
                "collection": name,
                "embedder": embedder,
                "seconds": round(time.perf_counter() - started, 1),
            }
        ),
        flush=True,
    )
    return figures


def margin(figures: dict[str, float], key: str) -> float:
    """How far a setting is above the better of its two legs."""
    return figures[key] - max(figures["lexical"], figures["dense"])


def choose(results: dict[str, dict[str, float]], names: list[str]) -> str | None:
    """The qualifying setting (above both legs on each collection) with the best mean."""
    qualifying = [k for k in names if all(margin(results[c], k) > 0 for c in results)]
    if not qualifying:
        return None
    return max(qualifying, key=lambda k: sum(results[c][k] for c in results) / len(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--datasets", nargs="+", default=["scifact", "cranfield", "cosqa"])
    parser.add_argument("--cache", type=Path, default=Path("/work/cache/fusion"))
    parser.add_argument("--embedder", default="local")
    args = parser.parse_args()
    results = {name: measure(name, args) for name in args.datasets}
    names = list(candidates())
    chosen = choose(results, names)
    cols = list(results)
    print("\n| setting | " + " | ".join(cols) + " | mean | worst margin over the better leg |")
    print("|---|" + "---|" * (len(cols) + 2))
    for key in ["lexical", "dense", *names]:
        values = [results[c][key] for c in cols]
        mean = sum(values) / len(values)
        worst = (
            ""
            if key in ("lexical", "dense")
            else f"{min(margin(results[c], key) for c in cols):+.4f}"
        )
        mark = " **(chosen)**" if key == chosen else ""
        print(
            f"| {key}{mark} | "
            + " | ".join(f"{v:.4f}" for v in values)
            + f" | {mean:.4f} | {worst} |"
        )
    print(f"\nchosen default: {chosen}")
    qualifying = [k for k in names if all(margin(results[c], k) > 0 for c in cols)]
    print(f"settings above both legs on every collection: {len(qualifying)} of {len(names)}")
    for held in cols:
        rest = {c: results[c] for c in cols if c != held}
        pick = choose(rest, names)
        if pick is None:
            print(f"leave out {held}: nothing qualifies on the others")
            continue
        print(
            f"leave out {held}: the others choose {pick}; on {held} it scores "
            f"{results[held][pick]:.4f}, {margin(results[held], pick):+.4f} over the better leg"
        )


if __name__ == "__main__":
    main()
