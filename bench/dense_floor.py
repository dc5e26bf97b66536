"""Choose a model's dense-only floor by measurement on the shared BEIR collections.

Usage: python bench/dense_floor.py [--data ../shared/data]
                                   [--datasets scifact scifact:train cranfield cosqa]
                                   [--embedder local] [--cache /tmp/ragloom-cache/ragloom-bench]
                                   [--floors 0 0.05 ... 0.6] [--top-k 20]

Hybrid search drops hits that only the dense leg found when their cosine is below a floor.
For every candidate floor this prints, per collection (and split: `scifact:train`), how many
of the dense-only hits in the unfloored top k are relevant (judged in the qrels) and how
many are not, how many of each the floor keeps, and hybrid (RRF, default settings: 40
candidates a leg, 10 hits) nDCG@10 with that floor. The recommended floor is the
highest one that keeps at least --keep (default 95%) of the relevant dense-only hits on every
collection: above it, the floor starts costing real matches. Put the figure in
`ragloom.embedding.floors.KNOWN_FLOORS` under the model's name.

The corpus is embedded once per model and kept in --cache (not a timing: no lock needed).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from hybrid import cached_index
from rich.console import Console
from rich.table import Table

from ragloom.embedding import resolve_embedder
from ragloom.evaluation.beir import BeirDataset, load_beir
from ragloom.evaluation.runner import EVAL_COLLECTION, evaluate_index
from ragloom.index import Index
from ragloom.retrieval.search_options import SearchOptions

FLOORS = [round(0.05 * i, 2) for i in range(13)]  # 0.00 .. 0.60


@dataclass
class DenseOnly:
    """The dense-only hits of the unfloored top k: (cosine, relevant?) each."""

    hits: list[tuple[float, bool]] = field(default_factory=list)

    def kept(self, floor: float) -> tuple[int, int]:
        """(relevant, irrelevant) hits whose cosine reaches the floor."""
        relevant = sum(1 for cos, rel in self.hits if cos >= floor and rel)
        return relevant, sum(1 for cos, rel in self.hits if cos >= floor and not rel)

    @property
    def totals(self) -> tuple[int, int]:
        return self.kept(-2.0)


def dense_only_hits(index: Index, dataset: BeirDataset, top_k: int) -> DenseOnly:
    """Every dense-only hit of the unfloored hybrid top k, judged against the qrels."""
    doc_of_row = index.chunk_documents(EVAL_COLLECTION)
    options = SearchOptions(mode="hybrid", top_k=top_k, min_dense_similarity=-1.0)
    found = DenseOnly()
    for qid, text in dataset.queries.items():
        judged = dataset.qrels.get(qid, {})
        for cand in index.rank(text, options, EVAL_COLLECTION).candidates:
            if cand.match != "dense" or cand.dense_score is None:
                continue
            doc = doc_of_row[cand.row_id]
            if doc == qid:  # BEIR convention: a query's own document does not count
                continue
            found.hits.append((cand.dense_score, judged.get(doc, 0) > 0))
    return found


def recommend(kept_share: dict[str, dict[float, float]], keep: float) -> float:
    """The highest floor keeping at least `keep` of the relevant hits on every collection."""
    floors = sorted(next(iter(kept_share.values())))
    good = [f for f in floors if all(shares[f] >= keep for shares in kept_share.values())]
    return max(good) if good else floors[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument(
        "--datasets", nargs="+", default=["scifact", "scifact:train", "cranfield", "cosqa"]
    )
    parser.add_argument("--embedder", default="local", help="model spec (as --embedder)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-cache/ragloom-bench"))
    parser.add_argument("--floors", nargs="+", type=float, default=FLOORS)
    parser.add_argument("--top-k", type=int, default=20, help="hits whose legs are judged")
    parser.add_argument("--keep", type=float, default=0.95, help="share of relevant to keep")
    args = parser.parse_args()

    console = Console(width=140)
    embedder = resolve_embedder(args.embedder)
    if embedder is None:
        parser.error("--embedder must name a model")
    table = Table(
        title=f"dense-only hits in the hybrid top {args.top_k} ({embedder.name}), per floor"
    )
    for column in (
        "dataset",
        "floor",
        "relevant kept",
        "irrelevant kept",
        "precision of kept",
        "hybrid RRF nDCG@10",
    ):
        table.add_column(column, justify="right")
    kept_share: dict[str, dict[float, float]] = {}
    for spec in args.datasets:
        name, _, split = spec.partition(":")
        dataset = load_beir(args.data / name, split or "test")
        index, _ = cached_index(args.data / name, args.cache, embedder)
        with index:
            dense_only = dense_only_hits(index, dataset, args.top_k)
            relevant, irrelevant = dense_only.totals
            kept_share[spec] = {}
            for floor in sorted(args.floors):
                rel, irr = dense_only.kept(floor)
                kept_share[spec][floor] = rel / relevant if relevant else 1.0
                options = SearchOptions(mode="hybrid", min_dense_similarity=floor)
                metrics, _ = evaluate_index(index, dataset, options, depth=10)
                table.add_row(
                    spec,
                    f"{floor:.2f}",
                    f"{rel}/{relevant} ({kept_share[spec][floor]:.0%})",
                    f"{irr}/{irrelevant} ({irr / irrelevant if irrelevant else 0:.0%})",
                    f"{rel / (rel + irr) if rel + irr else 0:.3f}",
                    f"{metrics['ndcg@10']:.4f}",
                )
        table.add_section()
    console.print(table)
    floor = recommend(kept_share, args.keep)
    console.print(
        f"recommended floor for {embedder.name}: {floor:.2f} (the highest that keeps at least "
        f"{args.keep:.0%} of the relevant dense-only hits on {', '.join(args.datasets)})"
    )


if __name__ == "__main__":
    main()
