"""What adaptive fusion (the default) costs a search, beside the previous default (weighted
z-score) in the same run: whole-search latency (query embedding included) and the fusion
stage alone, on SciFact's 300 test queries.

Usage: flock /tmp/ragloom-bench.lock python bench/fusion_cost.py [--data ../shared/data]
           [--cache /tmp/ragloom-fusion-cache] [--repeats 3]
The index is built into --cache once (the same file bench/fusion_defaults.py uses). The two
settings alternate query by query, so that the machine's load falls on both alike; the
engine's memory of query vectors is cleared before each search, so that both embed the query
(the first round, which loads the model and warms the caches, is not counted).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.prepare import prepared_index
from ragloom.evaluation.runner import EVAL_COLLECTION, whole_document_config

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"previous default (weighted z-score)": {"fusion": "weighted"}, "adaptive (default)": {}}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-fusion-cache"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dataset = load_beir(Path(args.data) / "scifact", "test")
    args.cache.mkdir(parents=True, exist_ok=True)
    with prepared_index(
        dataset, whole_document_config(), "local", args.cache / "scifact.db"
    ) as prepared:
        index = prepared.index
        queries = list(dataset.queries.values())
        total = {name: [] for name in SETTINGS}
        fusion = {name: [] for name in SETTINGS}
        for repeat in range(args.repeats + 1):
            for query in queries:
                for name, options in SETTINGS.items():
                    index.models.clear_queries()
                    started = time.perf_counter()
                    result = index.search(query, top_k=10, collection=EVAL_COLLECTION, **options)
                    elapsed = 1000.0 * (time.perf_counter() - started)
                    if repeat:  # the first round loads the model and warms the caches
                        total[name].append(elapsed)
                        fusion[name].append(result.timings.get("fusion", 0.0))
    print(f"SciFact test, {len(queries)} queries x {args.repeats} repeats, top_k=10, local model")
    print("| setting | search p50 ms | p95 ms | fusion stage p50 ms |")
    print("|---|---|---|---|")
    for name in SETTINGS:
        print(
            f"| {name} | {statistics.median(total[name]):.3f} | "
            f"{percentile(total[name], 0.95):.3f} | {statistics.median(fusion[name]):.3f} |"
        )
    base, new = (statistics.median(total[n]) for n in SETTINGS)
    print(f"\nadaptive adds {new - base:+.3f} ms to the search p50 ({new / base:.2f}x)")


if __name__ == "__main__":
    main()
