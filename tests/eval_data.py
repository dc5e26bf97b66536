"""A small BEIR-layout collection with train and test splits, written for evaluation tests."""

from __future__ import annotations

import json
import random
from pathlib import Path

TOPICS = [
    ["copper", "wire", "current", "conductor", "voltage"],
    ["glacier", "ice", "melt", "valley", "moraine"],
    ["violin", "bow", "string", "concerto", "tuning"],
    ["bread", "yeast", "dough", "oven", "crust"],
    ["comet", "orbit", "tail", "nucleus", "perihelion"],
    ["harbor", "ship", "anchor", "dock", "tide"],
    ["orchard", "apple", "blossom", "graft", "harvest"],
    ["falcon", "prey", "dive", "talon", "nest"],
    ["ledger", "debit", "credit", "audit", "balance"],
    ["volcano", "lava", "ash", "crater", "eruption"],
]
FILLER = [
    "the",
    "a",
    "of",
    "and",
    "in",
    "on",
    "with",
    "from",
    "about",
    "very",
    "often",
    "some",
    "many",
    "other",
    "each",
]


def write_collection(folder: Path, seed: int = 7) -> Path:
    """Four documents per topic; two training and two test queries per topic."""
    rng = random.Random(seed)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels = [], [], {"train": [], "test": []}
    for t, words in enumerate(TOPICS):
        for d in range(4):
            picked = rng.sample(words, 3) + rng.sample(FILLER, 5)
            rng.shuffle(picked)
            corpus.append({"_id": f"t{t}d{d}", "title": words[d % 5], "text": " ".join(picked)})
        for split, offset in (("train", 0), ("test", 2)):
            for n in range(2):
                qid = f"{split}-t{t}q{n}"
                text = " ".join(rng.sample(words, 2) + rng.sample(FILLER, 1))
                queries.append({"_id": qid, "text": text})
                for d in range(4):
                    qrels[split].append((qid, f"t{t}d{d}", 2 if d == (n + offset) % 4 else 1))
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus))
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    for split, rows in qrels.items():
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, d, g in rows]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return folder
