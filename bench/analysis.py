"""Text analysis speed: ragloom's analyzer against bm25s's tokenizer + stemmer, in one run.

Usage: flock /tmp/ragloom-bench.lock python bench/analysis.py [--data ../shared/data]
           [--datasets scifact cranfield] [--repeats 5]
Both sides do the same work on each corpus (title and text of every document): lowercase,
split into words, drop Lucene's English stop words, Snowball English stemming (PyStemmer),
and give each document its list of terms (ragloom: term strings; bm25s: term ids; ragloom's
indexing form: term numbers for a batch of documents at once, as `Index.add` uses it). One
thread each. "cold" starts from a fresh analyzer (every word new, as when a corpus is first
indexed); "warm" tokenizes the same corpus again with the analyzer's word cache filled
(bm25s has no cache: its figure is the cold one). "before" is ragloom's previous analyzer
(tests/reference_tokenize.py), timed in the same run. Best of --repeats, in CPU seconds of this
process (both sides are single-threaded; CPU time does not count other jobs on a shared
machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bm25s
import Stemmer
from rich.console import Console
from rich.table import Table

from ragloom.evaluation.beir import load_beir
from ragloom.text import Tokenizer
from ragloom.text.stopwords import ENGLISH

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reference_tokenize import Tokenizer as Before  # noqa: E402  (the previous analyzer)


def best(seconds: list[float]) -> float:
    return min(seconds)


def time_ragloom(texts: list[str], repeats: int, cls=Tokenizer) -> tuple[float, float, int]:
    cold, warm = [], []
    terms = 0
    for _ in range(repeats):
        tokenizer = cls()
        started = time.process_time()
        out = [tokenizer.terms(t) for t in texts]
        cold.append(time.process_time() - started)
        started = time.process_time()
        for t in texts:
            tokenizer.terms(t)
        warm.append(time.process_time() - started)
        terms = sum(map(len, out))
    return best(cold), best(warm), terms


def time_indexing(texts: list[str], repeats: int, batch: int = 2048) -> tuple[float, float]:
    """The indexing form (`Tokenizer.numbered`: term numbers, flat, a batch at a time)."""
    cold, warm = [], []
    for _ in range(repeats):
        tokenizer = Tokenizer()
        started = time.process_time()
        for lo in range(0, len(texts), batch):
            tokenizer.numbered(texts[lo : lo + batch])
        cold.append(time.process_time() - started)
        started = time.process_time()
        for lo in range(0, len(texts), batch):
            tokenizer.numbered(texts[lo : lo + batch])
        warm.append(time.process_time() - started)
    return best(cold), best(warm)


def time_bm25s(texts: list[str], repeats: int) -> tuple[float, int]:
    runs = []
    terms = 0
    stopwords = sorted(ENGLISH)
    for _ in range(repeats):
        stemmer = Stemmer.Stemmer("english")
        started = time.process_time()
        out = bm25s.tokenize(texts, stopwords=stopwords, stemmer=stemmer, show_progress=False)
        runs.append(time.process_time() - started)
        terms = sum(map(len, out.ids))
    return best(runs), terms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    parser.add_argument("--datasets", nargs="+", default=["scifact", "cranfield"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    table = Table(
        title=f"analysis speed: ragloom vs bm25s {bm25s.__version__} tokenize + PyStemmer "
        "(one thread, best of repeats)"
    )
    for col in (
        "collection",
        "docs",
        "MB",
        "bm25s cpu s",
        "ragloom cold cpu s",
        "ragloom warm cpu s",
        "bm25s / ragloom cold",
        "bm25s / ragloom warm",
        "before cold / warm cpu s",
        "before / now cold, warm",
        "indexing form cold / warm cpu s",
        "bm25s / indexing cold",
        "terms ragloom / bm25s",
    ):
        table.add_column(col, justify="right")
    for name in args.datasets:
        docs = list(load_beir(args.data / name).iter_corpus())
        texts = [f"{d.title or ''} {d.text}" for d in docs]
        megabytes = sum(len(t.encode()) for t in texts) / 1e6
        peer, peer_terms = time_bm25s(texts, args.repeats)
        cold, warm, terms = time_ragloom(texts, args.repeats)
        old_cold, old_warm, old_terms = time_ragloom(texts, args.repeats, Before)
        assert old_terms == terms
        bulk_cold, bulk_warm = time_indexing(texts, args.repeats)
        table.add_row(
            name,
            str(len(texts)),
            f"{megabytes:.1f}",
            f"{peer:.3f}",
            f"{cold:.3f}",
            f"{warm:.3f}",
            f"{peer / cold:.2f}",
            f"{peer / warm:.2f}",
            f"{old_cold:.3f} / {old_warm:.3f}",
            f"{old_cold / cold:.2f} / {old_warm / warm:.2f}",
            f"{bulk_cold:.3f} / {bulk_warm:.3f}",
            f"{peer / bulk_cold:.2f}",
            f"{terms / peer_terms:.3f}",
        )
    console = Console(width=200)
    console.print(table)
    console_note = (
        "terms differ slightly: bm25s drops one-character words (its pattern is \\w\\w+) and "
        "keeps underscores inside words; ragloom keeps both as Lucene's analyzer does."
    )
    console.print(console_note)


if __name__ == "__main__":
    main()
