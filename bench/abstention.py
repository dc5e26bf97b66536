"""Abstention measured without a model: does the relevance floor tell a covered question
from one the index cannot answer?

Usage: python bench/abstention.py [--data ../shared/data/scifact] [--index FILE]
                                  [--chunk-size 400] [--seed 7] [--top-k 10]
                                  [--foreign ../shared/data/cranfield] [--json]

The collection is indexed (the local model; ragloom's default chunking, 400 characters, or
--chunk-size 0 for whole documents as BEIR scores them; kept in --index and reused), then,
per split, copied and the judged documents of a random half of that split's queries removed
(`random.Random(seed).shuffle` of the sorted query ids, the first half). A query is covered
when every document judged relevant for it is still in the index. Every query of the split
is searched (--top-k hits; hybrid with adaptive fusion, and lexical and dense alone) and each
signal of `ragloom.answer.coverage` computed from its hits. Each signal's floor is chosen on
the train split (the threshold with the best F1 of "covered") and reported on the test
split: precision and recall of "covered" (the floor's decision) against the truth, and the
signal's AUC; the best threshold chosen on test itself is printed too (optimistic: the
starting point's figures were measured that way). For the shipped signal (`relevance`) the
cautious floor is reported too (the highest that keeps 90% of the covered train questions),
and the floor ragloom ships (`coverage.DEFAULT_FLOORS`) on both splits; --foreign searches
another collection's questions (off-topic here) and counts how many the shipped floor stops.

Not a timing: no lock needed. The first run embeds the corpus (about 1.5 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from ragloom.answer import coverage
from ragloom.config import CollectionConfig
from ragloom.evaluation.beir import BeirDataset, load_beir
from ragloom.evaluation.prepare import prepared_index
from ragloom.evaluation.runner import EVAL_COLLECTION
from ragloom.index import Index

DEFAULT_DATA = (
    Path(os.environ.get("RAGLOOM_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
    / "scifact"
)
# The starting point, measured on main before the answer stage (issue 47): AUC of the top
# hit's fused score, its cosine, its BM25; precision = recall at the best test threshold.
STARTING_POINT = {"top fused score": 0.77, "top cosine": 0.56, "top BM25": 0.59}


def removed_half(dataset: BeirDataset, seed: int) -> tuple[list[str], set[str]]:
    """(the split's judged queries, the documents judged for a random half of them)."""
    queries = sorted(q for q in dataset.queries if dataset.qrels.get(q))
    shuffled = list(queries)
    random.Random(seed).shuffle(shuffled)
    half = shuffled[: len(shuffled) // 2]
    gone = {doc for q in half for doc, grade in dataset.qrels[q].items() if grade > 0}
    return queries, gone


def covered(dataset: BeirDataset, query: str, gone: set[str]) -> bool:
    """Every document judged relevant for `query` is still indexed."""
    return all(doc not in gone for doc, grade in dataset.qrels[query].items() if grade > 0)


MODES = ("hybrid", "lexical", "dense")


def signals_of(index: Index, texts: Sequence[str], top_k: int) -> dict[str, np.ndarray]:
    """Each signal of every question (in order) in every mode: `MODE:SIGNAL` (hybrid's
    signals all; lexical's and dense's the shipped one), one search per mode."""
    out: dict[str, list[float]] = {}
    for text in texts:
        for mode in MODES:
            hits = index.search(text, top_k, EVAL_COLLECTION, mode=mode)
            values = coverage.signals(hits)
            names = coverage.SIGNALS if mode == "hybrid" else (coverage.DEFAULT_SIGNAL,)
            for name in names:
                out.setdefault(f"{mode}:{name}", []).append(values[name])
    return {name: np.array(values, np.float64) for name, values in out.items()}


def auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """The probability that a covered query scores above an uncovered one (ties: half)."""
    pos, neg = scores[truth], scores[~truth]
    if not len(pos) or not len(neg):
        return float("nan")
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order), np.float64)
    values = np.concatenate([pos, neg])[order]
    ranks[order] = _average_ranks(values)
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def _average_ranks(sorted_values: np.ndarray) -> np.ndarray:
    ranks = np.arange(1, len(sorted_values) + 1, dtype=np.float64)
    start = 0
    while start < len(sorted_values):
        end = start
        while end + 1 < len(sorted_values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[start : end + 1] = (start + end + 2) / 2
        start = end + 1
    return ranks


def precision_recall(scores: np.ndarray, truth: np.ndarray, floor: float) -> tuple[float, float]:
    """Of the queries at or above the floor ("covered"), the share truly covered; of the
    truly covered, the share at or above the floor."""
    said = scores >= floor
    hit = int((said & truth).sum())
    return hit / max(int(said.sum()), 1), hit / max(int(truth.sum()), 1)


def cautious_floor(scores: np.ndarray, truth: np.ndarray, keep: float = 0.9) -> float:
    """The highest threshold that keeps `keep` of the covered questions."""
    return float(np.quantile(scores[truth], 1.0 - keep, method="lower"))


def best_floor(scores: np.ndarray, truth: np.ndarray) -> float:
    """The threshold with the best F1 of "covered" (ties: the highest min(P, R))."""
    best, chosen = (-1.0, -1.0), float(scores.min())
    for floor in np.unique(scores):
        p, r = precision_recall(scores, truth, float(floor))
        f1 = 2 * p * r / (p + r) if p + r else 0.0
        if (f1, min(p, r)) > best:
            best, chosen = (f1, min(p, r)), float(floor)
    return chosen


def split_run(
    base: Path,
    dataset: BeirDataset,
    split: str,
    seed: int,
    top_k: int,
    work: Path,
    foreign: Sequence[str] = (),
) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray]]:
    """The split's signals and truth, searched in a copy of the index without the removed
    half's documents (and the signals of the `foreign` questions there)."""
    queries, gone = removed_half(dataset, seed)
    copy = work / f"{split}-{seed}.db"
    shutil.copy(base, copy)
    segments = base.with_name(base.name + "-segments")  # the segment files beside the file
    if segments.is_dir():
        shutil.copytree(segments, copy.with_name(copy.name + "-segments"))
    with Index(copy) as index:
        for doc in sorted(gone):
            index.delete(doc, EVAL_COLLECTION)
        index.optimize()
        signals = signals_of(index, [dataset.queries[q] for q in queries], top_k)
        off_topic = signals_of(index, foreign, top_k) if foreign else {}
    truth = np.array([covered(dataset, q, gone) for q in queries])
    return signals, truth, off_topic


def report(
    data: Path,
    index_path: Path | None,
    chunk_size: int,
    seed: int,
    top_k: int,
    foreign: Path | None = None,
) -> dict:
    """Every signal's floor (chosen on train) and its figures on test."""
    train, test = load_beir(data, "train"), load_beir(data, "test")
    base_config = CollectionConfig()
    config = replace(base_config, chunking=replace(base_config.chunking, max_chars=chunk_size))
    others = list(load_beir(foreign, "test").queries.values()) if foreign else []
    with tempfile.TemporaryDirectory(prefix="ragloom-abstention-") as tmp:
        base = index_path or Path(tmp) / "base.db"
        with prepared_index(test, config, "local", base) as prepared:
            prepared.index.optimize()
        on_train, truth_train, _ = split_run(base, train, "train", seed, top_k, Path(tmp))
        on_test, truth_test, off = split_run(base, test, "test", seed, top_k, Path(tmp), others)
    rows = {}
    for name in on_test:
        floor = best_floor(on_train[name], truth_train)
        precision, recall = precision_recall(on_test[name], truth_test, floor)
        optimistic = best_floor(on_test[name], truth_test)
        rows[name] = {
            "auc_test": auc(on_test[name], truth_test),
            "auc_train": auc(on_train[name], truth_train),
            "floor": floor,
            "precision": precision,
            "recall": recall,
            "test_best": precision_recall(on_test[name], truth_test, optimistic),
        }
    return {
        "seed": seed,
        "chunk_size": chunk_size,
        "covered": {
            "train": [int(truth_train.sum()), len(truth_train)],
            "test": [int(truth_test.sum()), len(truth_test)],
        },
        "signals": rows,
        "floors": _floors(on_train, truth_train, on_test, truth_test, off),
        "curve": _curve(on_test[f"hybrid:{coverage.DEFAULT_SIGNAL}"], truth_test),
    }


def _floors(
    on_train: dict[str, np.ndarray],
    truth_train: np.ndarray,
    on_test: dict[str, np.ndarray],
    truth_test: np.ndarray,
    off: dict[str, np.ndarray],
) -> list[dict]:
    """The shipped signal per mode: balanced, cautious and shipped floors, on test (and on
    the foreign questions: the share the floor stops)."""
    rows = []
    for mode in MODES:
        name = f"{mode}:{coverage.DEFAULT_SIGNAL}"
        train, test = on_train[name], on_test[name]
        floors = {
            "balanced (train F1)": best_floor(train, truth_train),
            "cautious (train recall 0.9)": cautious_floor(train, truth_train),
            "shipped": coverage.DEFAULT_FLOORS[mode],
        }
        for kind, floor in floors.items():
            p, r = precision_recall(test, truth_test, floor)
            p_train, r_train = precision_recall(train, truth_train, floor)
            stopped = float((off[name] < floor).mean()) if name in off else None
            rows.append(
                {
                    "mode": mode,
                    "floor": kind,
                    "value": floor,
                    "train": [p_train, r_train],
                    "test": [p, r],
                    "foreign_stopped": stopped,
                }
            )
    return rows


def _curve(scores: np.ndarray, truth: np.ndarray) -> list[dict[str, float]]:
    """Precision and recall of the shipped signal at floors across its range (test)."""
    points = []
    for floor in np.quantile(scores, np.linspace(0.05, 0.95, 19)):
        p, r = precision_recall(scores, truth, float(floor))
        points.append({"floor": float(floor), "precision": p, "recall": r})
    return points


def print_report(result: dict, console: Console) -> None:
    c_train, c_test = result["covered"]["train"], result["covered"]["test"]
    console.print(
        f"SciFact, seed {result['seed']}: covered train {c_train[0]}/{c_train[1]}, "
        f"test {c_test[0]}/{c_test[1]}"
    )
    table = Table(
        "signal",
        "AUC train",
        "AUC test",
        "floor (train)",
        "precision",
        "recall",
        "P/R at test's best",
        "starting point AUC",
    )
    for name, row in result["signals"].items():
        p, r = row["test_best"]
        table.add_row(
            name + (" (shipped)" if name == coverage.DEFAULT_SIGNAL else ""),
            f"{row['auc_train']:.3f}",
            f"{row['auc_test']:.3f}",
            f"{row['floor']:.4f}",
            f"{row['precision']:.3f}",
            f"{row['recall']:.3f}",
            f"{p:.3f} / {r:.3f}",
            str(STARTING_POINT.get(name.removeprefix("hybrid:"), "-")),
        )
    console.print(table)
    floors = Table(
        "mode",
        "floor",
        "value",
        "train P / R",
        "test P / R",
        "off-topic stopped",
        title=f"the shipped signal ({coverage.DEFAULT_SIGNAL})",
    )
    for row in result["floors"]:
        stopped = row["foreign_stopped"]
        floors.add_row(
            row["mode"],
            row["floor"],
            f"{row['value']:.4f}",
            "{:.3f} / {:.3f}".format(*row["train"]),
            "{:.3f} / {:.3f}".format(*row["test"]),
            "-" if stopped is None else f"{stopped:.1%}",
        )
    console.print(floors)
    curve = Table("floor", "precision", "recall", title=f"hybrid {coverage.DEFAULT_SIGNAL}, test")
    for point in result["curve"]:
        curve.add_row(
            f"{point['floor']:.4f}", f"{point['precision']:.3f}", f"{point['recall']:.3f}"
        )
    console.print(curve)


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--index", type=Path, default=None, help="keep the embedded index here")
    parser.add_argument("--chunk-size", type=int, default=400, help="0: whole documents")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--foreign", type=Path, default=DEFAULT_DATA.parent / "cranfield")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    foreign = args.foreign if args.foreign and args.foreign.exists() else None
    result = report(args.data, args.index, args.chunk_size, args.seed, args.top_k, foreign)
    if args.json:
        out(json.dumps(result, indent=2))
    else:
        print_report(result, Console(width=150))


if __name__ == "__main__":
    main(sys.argv[1:])
