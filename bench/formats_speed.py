"""Throughput of PDF and HTML indexing: `ragloom index` (lexical only, so extraction
dominates) beside markitdown's converters on the same files, both as whole processes.

PDF: the pdf-text collection's PDFs, copied `--copies` times under other names (each copy is
converted: ids differ); HTML: the article-extraction benchmark's 181 pages. Pages/s counts
PDF pages (one per HTML file). markitdown only converts (it writes no index), so the
comparison favours it.

    python bench/formats_speed.py [--data ../shared/data] [--copies 3]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
console = Console(width=140)

MARKITDOWN = """
import sys
from pathlib import Path
from markitdown import MarkItDown
converter = MarkItDown()
chars = 0
for path in sorted(Path(sys.argv[1]).iterdir()):
    chars += len(converter.convert(str(path)).markdown)
print(chars)
"""


def pdf_folder(data: Path, target: Path, copies: int) -> int:
    import pypdfium2 as pdfium

    pages = 0
    for copy in range(copies):
        for pdf in sorted((data / "pdf-text" / "pdf").glob("*.pdf")):
            shutil.copyfile(pdf, target / f"{pdf.stem}-{copy}.pdf")
            pages += len(pdfium.PdfDocument(str(pdf)))
    return pages


def html_folder(data: Path, target: Path) -> int:
    pages = 0
    for page in sorted((data / "article-extraction" / "html").glob("*.html.gz")):
        (target / page.name.removesuffix(".gz")).write_bytes(gzip.decompress(page.read_bytes()))
        pages += 1
    return pages


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{command[:4]} failed:\n{proc.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--copies", type=int, default=3)
    args = parser.parse_args()
    import os

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAGLOOM_EMBEDDER": "none"}
    table = Table(title="Indexing throughput (whole processes, lexical only)")
    for column in ("format", "pages", "ragloom index s", "ragloom pages/s", "markitdown s",
                   "markitdown pages/s", "ratio"):  # fmt: skip
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory() as scratch:
        for fmt, build in (("PDF", pdf_folder), ("HTML", html_folder)):
            folder = Path(scratch) / fmt.lower()
            folder.mkdir()
            pages = (
                build(args.data, folder, args.copies) if fmt == "PDF" else build(args.data, folder)
            )
            index = Path(scratch) / f"{fmt}.db"
            ours = timed(
                [sys.executable, "-m", "ragloom", "--index", str(index), "index", str(folder)], env
            )
            theirs = timed([sys.executable, "-c", MARKITDOWN, str(folder)], env)
            table.add_row(
                fmt, str(pages), f"{ours:.1f}", f"{pages / ours:.1f}", f"{theirs:.1f}",
                f"{pages / theirs:.1f}", f"{theirs / ours:.2f}",
            )  # fmt: skip
    console.print(table)
    console.print("ratio: ragloom's pages/s over markitdown's (above 1: ragloom is faster)")


if __name__ == "__main__":
    main()
