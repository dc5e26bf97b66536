"""A folder of mixed files indexed, then indexed again with nothing changed: every file
accounted for, the re-index time against the first run's, and the peak memory of the run
(the indexing process and its conversion workers together, sampled every 50 ms).

The folder (tests/format_files.py `mixed_folder`): Markdown, text, PDF, HTML, DOCX, PPTX,
EPUB, notebooks, CSV, PNG pictures (left out by the default rules) and bad files (a
password-protected PDF, a scan, a zip bomb, binary junk), plus, with `--hostile`, a
1,000-page PDF and a PDF of a million objects.

    python bench/formats_mixed.py [--files 1000] [--hostile] [--embedder none|local]

`--embedder local` indexes with the local model, as the README's first command installs it
(vectors computed on the first run; the second finds every file unchanged).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import format_files as make  # noqa: E402

console = Console(width=140)


def run_measured(command: list[str], env: dict[str, str]) -> tuple[float, int, dict]:
    """(seconds, peak RSS of the process tree in bytes, the --json report)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                tree = [parent, *parent.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return seconds, peak, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--hostile", action="store_true")
    parser.add_argument("--embedder", default="none")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RAGLOOM_EMBEDDER": args.embedder}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "mixed"
        expected = make.mixed_folder(folder, args.files)
        if args.hostile:
            (folder / "hostile").mkdir()
            (folder / "hostile" / "thousand-pages.pdf").write_bytes(make.long_pdf(1000))
            many = make.pdf([[(11, "a million objects")]], padding_objects=1_000_000)
            (folder / "hostile" / "million-objects.pdf").write_bytes(many)
            (folder / "hostile" / "page-loop.pdf").write_bytes(
                make.pdf([[(11, "a page tree that holds itself")]] * 3, loop=True)
            )
            (folder / "hostile" / "bad-xref.pdf").write_bytes(
                make.pdf([[(11, "offsets all wrong")]] * 3, broken_xref=True)
            )
            (folder / "hostile" / "entities.docx").write_bytes(make.entity_bomb_docx())
            (folder / "hostile" / "bomb.epub").write_bytes(make.zip_bomb("epub", 64 * 2**20))
        total = sum(1 for p in folder.rglob("*") if p.is_file())
        command = [sys.executable, "-m", "ragloom", "--index", str(Path(scratch) / "m.db"),
                   "index", str(folder), "--json"]  # fmt: skip
        first, first_peak, report = run_measured(command, env)
        again, again_peak, second = run_measured(command, env)
    accounted = report["files"] + report["left_out"]
    table = Table(
        title=f"{total} mixed files, `ragloom index --json` twice, embedder {args.embedder}"
    )
    for column in ("run", "seconds", "peak MB (tree)", "documents", "unchanged", "files read",
                   "left out", "failed"):  # fmt: skip
        table.add_column(column, justify="right")
    for name, seconds, peak, r in (("first", first, first_peak, report),
                                   ("again", again, again_peak, second)):  # fmt: skip
        table.add_row(name, f"{seconds:.2f}", f"{peak / 2**20:.0f}", str(r["documents"]),
                      str(r["documents_unchanged"]), str(r["files"]), str(r["left_out"]),
                      str(len(r["failed"])))  # fmt: skip
    console.print(table)
    console.print(f"re-index / first run: {again / first:.3f} (target < 0.10)")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ragloom", "--help"], capture_output=True, env=env)
    console.print(f"for scale: `ragloom --help` takes {time.perf_counter() - started:.2f} s")
    console.print(f"every file accounted for: {accounted} of {total} (read + left out)")
    wanted = sorted(expected["failed"])
    named = sorted(Path(f["path"]).name for f in report["failed"] if "hostile" not in f["path"])
    console.print(f"named as expected: {named == wanted}")
    for failure in report["failed"]:
        if "hostile" in failure["path"]:
            console.print(f"  {Path(failure['path']).name}: {failure['code']}: {failure['reason']}")
    if args.hostile:
        read = {Path(p).name for p in ("thousand-pages.pdf", "million-objects.pdf",
                                       "page-loop.pdf", "bad-xref.pdf")}  # fmt: skip
        failed = {Path(f["path"]).name for f in report["failed"]}
        for name in sorted(read - failed):
            console.print(f"  {name}: indexed")


if __name__ == "__main__":
    main()
