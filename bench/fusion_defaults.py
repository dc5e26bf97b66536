"""The evidence for the default hybrid fusion: each leg, the previous default, RRF and adaptive
fusion (the default) on every collection, with the collections the method was chosen on
marked apart from those held out.

Usage: python bench/fusion_defaults.py [--data ../shared/data] [--extra DIR ...]
           [--cache /tmp/ragloom-fusion-cache] [--embedder local] [--sweep] [--plain-code]
Each collection is embedded once into --cache (kept between runs, checked against the model;
its fusion profile is taken once, from its own chunks) and each query's legs are fetched once.
nDCG@10 scores the ten hits of a top-10 search (40 candidates per leg). The method was chosen
on SciFact's train split, CoSQA's dev split, Cranfield and CISI (`CHOSEN_ON`); every test split
is reported, and the collections named only by --extra (e.g. Medline, CACM, NPL) were held
out. `--sweep` adds the previous families at every dense weight 0.1-0.9. CoSQA is indexed as
code (identifiers split, code vocabulary on; `--plain-code`: vocabulary off). A change of
its tokenizer rebuilds its cached index (the manifest records the config).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ragloom.evaluation.beir import load_beir
from ragloom.evaluation.leg_cache import LegCache
from ragloom.evaluation.prepare import prepared_index
from ragloom.evaluation.runner import EVAL_COLLECTION, whole_document_config
from ragloom.evaluation.suite import Scorer, Setting
from ragloom.retrieval.adaptive import collection_dense_weight
from ragloom.retrieval.search_options import SearchOptions

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("scifact", "cranfield", "cosqa")
CHOSEN_ON = {"scifact": "train", "cosqa": "dev", "cranfield": "test", "cisi": "test"}
# Code is configured as code: identifiers split and the code vocabulary ("string" = `str`,
# chosen on CoSQA dev); `--plain-code` leaves the vocabulary off (the table before it).
TOKENIZERS: dict[str, dict] = {"cosqa": {"split_identifiers": True, "code_vocabulary": True}}
WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
SETTINGS = {
    "lexical": SearchOptions(mode="lexical"),
    "dense": SearchOptions(mode="dense"),
    "previous default (z-score, dense 0.7)": SearchOptions(
        mode="hybrid", fusion="weighted", normalization="zscore", weights={"dense": 0.7}
    ),
    "RRF k=60": SearchOptions(mode="hybrid", fusion="rrf"),
    "adaptive (default)": SearchOptions(mode="hybrid"),
}


def sweep() -> dict[str, SearchOptions]:
    """The previous families at every dense weight (lexical weight 1 - dense)."""
    out = {}
    for fusion, normalization in (
        ("rrf", "minmax"),
        ("weighted", "minmax"),
        ("weighted", "zscore"),
    ):
        for w in WEIGHTS:
            name = f"{fusion} {normalization if fusion == 'weighted' else ''} d={w}".replace(
                "  ", " "
            )
            out[name] = SearchOptions(
                mode="hybrid",
                fusion=fusion,
                normalization=normalization,
                weights={"lexical": round(1 - w, 6), "dense": w},
            )
    return out


def measure(folder: Path, split: str, args: argparse.Namespace, settings: dict) -> dict:
    """nDCG@10 of every setting on one collection's split, and its fusion profile."""
    name = folder.name
    dataset = load_beir(folder, split)
    config = whole_document_config(tokenizer=TOKENIZERS.get(name, {}))
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with prepared_index(dataset, config, args.embedder, args.cache / f"{name}.db") as prepared:
        cache = LegCache(prepared.index, EVAL_COLLECTION, dense=True)
        cache.warm(dataset.queries.values())
        scorer = Scorer(dataset, cache, prepared.index.chunk_documents(EVAL_COLLECTION))
        figures = {
            key: scorer.score(Setting(key, options), recall=False).metrics["ndcg@10"]
            for key, options in settings.items()
        }
        profile = cache.profile or {}
    weight, basis = collection_dense_weight(profile)
    print(
        json.dumps(
            {
                "collection": f"{name}/{split}",
                "queries": len(dataset.queries),
                "profile": profile,
                "collection_dense_weight": round(weight, 4),
                "basis": basis,
                "seconds": round(time.perf_counter() - started, 1),
            }
        ),
        flush=True,
    )
    return figures


def margin(figures: dict[str, float], key: str) -> float:
    """How far a setting is above the better of its two legs."""
    return figures[key] - max(figures["lexical"], figures["dense"])


def table(results: dict[str, dict[str, float]], title: str) -> None:
    cols = list(results)
    keys = list(next(iter(results.values())))
    print(f"\n{title}\n")
    print("| setting | " + " | ".join(cols) + " | mean | worst margin over the better leg |")
    print("|---|" + "---|" * (len(cols) + 2))
    for key in keys:
        values = [results[c][key] for c in cols]
        worst = (
            ""
            if key in ("lexical", "dense")
            else f"{min(margin(results[c], key) for c in cols):+.4f}"
        )
        print(
            f"| {key} | "
            + " | ".join(f"{v:.4f}" for v in values)
            + f" | {sum(values) / len(values):.4f} | {worst} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--extra", nargs="*", default=[], help="more BEIR folders (held out)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/ragloom-fusion-cache"))
    parser.add_argument("--embedder", default="local")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--plain-code", action="store_true", help="code vocabulary off")
    args = parser.parse_args()
    if args.plain_code:
        TOKENIZERS["cosqa"] = {"split_identifiers": True}
    settings = {**SETTINGS, **(sweep() if args.sweep else {})}
    folders = [Path(args.data) / n for n in SHARED] + [Path(p) for p in args.extra]
    chosen, reported = {}, {}
    for folder in folders:
        if folder.name in CHOSEN_ON and CHOSEN_ON[folder.name] != "test":
            chosen[f"{folder.name}/{CHOSEN_ON[folder.name]}"] = measure(
                folder, CHOSEN_ON[folder.name], args, settings
            )
        reported[f"{folder.name}/test"] = measure(folder, "test", args, settings)
    table(
        chosen
        | {
            k: v
            for k, v in reported.items()
            if k.split("/")[0] in CHOSEN_ON and CHOSEN_ON[k.split("/")[0]] == "test"
        },
        "Splits the method was chosen on (nDCG@10)",
    )
    table(
        reported,
        "Every collection's test split (nDCG@10); held out: "
        + ", ".join(k for k in reported if k.split("/")[0] not in CHOSEN_ON)
        + "; SciFact and CoSQA test queries were not used either",
    )


if __name__ == "__main__":
    main()
