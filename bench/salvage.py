"""Salvage of a damaged SciFact index: random pages of a copy overwritten, then
`check --repair`, trial after trial.

Usage: python bench/salvage.py [--data ../shared/data] [--trials 10] [--levels 0.01 0.05]
                               [--work DIR] [--json]
Builds SciFact once (lexical, the default chunking: about 25k chunks), then per trial copies
it, overwrites a random share of its pages with random bytes, and repairs the copy. Each trial
checks that the repaired index holds exactly the documents none of whose rows (document row,
chunk rows, overflow pages) lay on an overwritten page (computed from the intact file), that
every other document is listed as lost (by id, from its row or from the documents' unique
index; counted when both are gone but chunks remain; "no trace left" when nothing of it
remains on an intact page), that the
damaged copy was not written to, and that the 300 test queries' top 10 (chunk ids and scores)
on the repaired index equal those of a clean build of the recovered documents from the corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ragloom import Index
from ragloom.evaluation.beir import load_beir
from ragloom.operations.salvage import repair_index
from ragloom.operations.salvage.pages import open_pages
from ragloom.operations.salvage.rows import recover


def build(dataset, path: Path) -> None:
    with Index(path, embedder=None) as index:
        index.add(dataset.iter_corpus())
        index.optimize()


def document_pages(path: Path) -> dict[str, set[int]]:
    """Each document's pages: its row's and every chunk row's (overflow pages included)."""
    found = recover(path)
    pages = {row: set(found.cell_pages[("documents", row)]) for row in found.rows["documents"]}
    for chunk, values in found.rows["chunks"].items():
        pages[values[2]] |= set(found.cell_pages[("chunks", chunk)])
    return {found.rows["documents"][row][2]: spans for row, spans in pages.items()}


def damage(original: Path, copy: Path, share: float, rng: random.Random) -> set[int]:
    shutil.copyfile(original, copy)
    segments = original.with_name(original.name + "-segments")
    if segments.exists():
        shutil.copytree(segments, copy.with_name(copy.name + "-segments"))
    pages = open_pages(copy)
    chosen = set(rng.sample(range(1, pages.count + 1), max(1, round(share * pages.count))))
    with open(copy, "r+b") as handle:
        for number in chosen:
            handle.seek((number - 1) * pages.page_size)
            handle.write(rng.randbytes(pages.page_size))
    return chosen


def top10(index: Index, queries: list[str]) -> list:
    return [
        [(h.chunk_id, round(h.score, 6)) for h in index.search(q, top_k=10, mode="lexical")]
        for q in queries
    ]


def trial(args, dataset, original, by_doc, share, number, work) -> dict:
    rng = random.Random(f"{args.seed}-{share}-{number}")
    folder = Path(tempfile.mkdtemp(dir=work))
    copy = folder / "damaged.db"
    chosen = damage(original, copy, share, rng)
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    intact = {doc for doc, pages in by_doc.items() if not pages & chosen}
    started = time.perf_counter()
    report, repaired = repair_index(copy, folder / "repaired.db", embedder=None)
    seconds = time.perf_counter() - started
    with Index(folder / "repaired.db", embedder=None) as index:
        problems = index.check()
        recovered = {d.doc_id for d in index.documents(limit=10**6)}
        queries = list(dataset.queries.values())
        got = top10(index, queries)
    with Index(folder / "clean.db", embedder=None) as clean:
        clean.add(d for d in dataset.iter_corpus() if d.id in recovered)
        want = top10(clean, queries)
    lost_ids = {doc for _, doc in repaired.lost}
    salvage = report.salvage
    unnamed = salvage.unnamed_documents if salvage else 0
    out = {
        "share": share,
        "trial": number,
        "pages": len(chosen),
        "unreadable": len(salvage.recovered.unreadable) if salvage else 0,
        "documents": len(by_doc),
        "intact": len(intact),
        "recovered": len(recovered),
        "recovered_equals_intact": recovered == intact,
        "lost_listed_by_id": len(lost_ids),
        "lost_counted_without_id": unnamed,
        # documents every trace of which (row, index entry, chunk rows) was overwritten
        "vanished": len(by_doc) - len(recovered) - len(lost_ids) - unnamed,
        "lost_ids_all_lost": lost_ids <= set(by_doc) - recovered,
        "original_untouched": hashlib.sha256(copy.read_bytes()).hexdigest() == before,
        "repaired_check_ok": problems == [],
        "queries_equal": sum(a == b for a, b in zip(got, want)),
        "queries": len(queries),
        "repair_seconds": round(seconds, 2),
    }
    shutil.rmtree(folder, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("RAGLOOM_DATA", Path(__file__).resolve().parents[2] / "shared/data")
    parser.add_argument("--data", default=str(default))
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--levels", type=float, nargs="+", default=[0.01, 0.05])
    parser.add_argument("--seed", default="ragloom")
    parser.add_argument("--work", default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON line a trial")
    args = parser.parse_args()
    dataset = load_beir(Path(args.data) / "scifact")
    work = Path(args.work or tempfile.mkdtemp(prefix="ragloom-salvage-"))
    work.mkdir(parents=True, exist_ok=True)
    original = work / "scifact.db"
    if not original.exists():
        build(dataset, original)
    by_doc = document_pages(original)
    rows = []
    for share in args.levels:
        for number in range(args.trials):
            row = trial(args, dataset, original, by_doc, share, number, work)
            rows.append(row)
            if args.json:
                print(json.dumps(row), flush=True)
    if not args.json:
        show(rows, open_pages(original).count)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if all(ok(r) for r in rows) else 1)


def ok(row: dict) -> bool:
    return (
        row["recovered_equals_intact"]
        and row["lost_ids_all_lost"]
        and row["original_untouched"]
        and row["repaired_check_ok"]
        and row["queries_equal"] == row["queries"]
    )


def show(rows: list[dict], pages: int) -> None:
    table = Table(title=f"SciFact ({rows[0]['documents']} documents, {pages} pages): salvage")
    columns = ["damaged", "trial", "pages overwritten", "unreadable", "intact docs"]
    columns += ["recovered", "= intact", "lost by id", "lost, id gone", "no trace left"]
    columns += ["top-10 equal", "repair s"]
    for column in columns:
        table.add_column(column, justify="right")
    for r in rows:
        table.add_row(
            f"{r['share']:.0%}",
            str(r["trial"]),
            str(r["pages"]),
            str(r["unreadable"]),
            str(r["intact"]),
            str(r["recovered"]),
            "yes" if r["recovered_equals_intact"] else "NO",
            str(r["lost_listed_by_id"]),
            str(r["lost_counted_without_id"]),
            str(r["vanished"]),
            f"{r['queries_equal']}/{r['queries']}",
            f"{r['repair_seconds']:.1f}",
        )
    Console(width=200).print(table)


if __name__ == "__main__":
    main()
