"""Hostile files through `ragloom index`: outcome, peak RSS and time of each, in a table.

Each case builds its input in a scratch folder and runs the CLI as a child process (lexical
only: the input is what is measured, not a model); peak RSS is the child's own (`wait4`).

    python bench/hostile.py                   # all cases, the big ones at 200 MB
    python bench/hostile.py --size-mb 20 --only prose-single-line
    flock /tmp/ragloom-bench.lock python bench/hostile.py    # as the project's timings run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

console = Console(width=140)
MB = 1_000_000


@dataclass
class Case:
    name: str
    build: Callable[[Path, int], list[str]]  # (scratch folder, size in bytes) -> CLI args
    during: Callable[[Path], Callable[[], None]] | None = None  # start something; returns stop


def _prose(path: Path, size: int, seed: int = 1) -> None:
    """One line of sentences of random words from a 50,000-word vocabulary."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(50_000)]
    with path.open("w") as handle:
        written = 0
        while written < size:
            block = "".join(" ".join(rng.choices(words, k=12)) + ". " for _ in range(2000))
            handle.write(block)
            written += len(block)


def _repeat(path: Path, size: int, unit: str) -> None:
    with path.open("w") as handle:
        chunk = unit * (MB // len(unit))
        for _ in range(max(1, size // len(chunk))):
            handle.write(chunk)


def prose(folder: Path, size: int) -> list[str]:
    _prose(folder / "one.txt", size)
    return [str(folder)]


def phrase(folder: Path, size: int) -> list[str]:
    _repeat(folder / "one.txt", size, "lorem ipsum dolor sit amet ")
    return [str(folder)]


def no_spaces(folder: Path, size: int) -> list[str]:
    _repeat(folder / "one.txt", size, "x")
    return [str(folder)]


def over_limit(folder: Path, size: int) -> list[str]:
    _repeat(folder / "one.txt", size, "word ")
    return [str(folder), "--max-file-size", str(size // 2)]


def jsonl_huge_record(folder: Path, size: int) -> list[str]:
    with (folder / "r.jsonl").open("w") as handle:
        handle.write('{"id": "small", "text": "a small record"}\n{"id": "huge", "text": "')
        _write_repeat(handle, size, "word ")
        handle.write('"}\n{"id": "after", "text": "the record after"}\n')
    return [str(folder), "--lenient"]


def _write_repeat(handle, size: int, unit: str) -> None:
    chunk = unit * (MB // len(unit))
    for _ in range(max(1, size // len(chunk))):
        handle.write(chunk)


def jsonl_deep(folder: Path, size: int) -> list[str]:
    depth = 100_000
    lines = [
        '{"id": "a", "text": "first"}',
        '{"id": "deep", "text": "t", "m": ' + "[" * depth + "]" * depth + "}",
        '{"id": "b", "text": "last"}',
    ]
    (folder / "deep.jsonl").write_text("\n".join(lines) + "\n")
    return [str(folder)]


def jsonl_deep_lenient(folder: Path, size: int) -> list[str]:
    return [*jsonl_deep(folder, size), "--lenient"]


def bad_utf8_among_good(folder: Path, size: int) -> list[str]:
    for i in range(51):
        (folder / f"good{i:02d}.txt").write_text(f"good file {i}\n")
    (folder / "bad.txt").write_bytes(b"fine\nthen \xff\n")
    (folder / os.fsdecode(b"name\xff.txt")).write_text("odd name\n")
    return [str(folder)]


def encodings(folder: Path, size: int) -> list[str]:
    (folder / "u16.txt").write_bytes("\ufeffutf-16 text\n".encode("utf-16-le"))
    (folder / "u32.txt").write_bytes("\ufeffutf-32 text\n".encode("utf-32-be"))
    (folder / "nul.txt").write_bytes(b"\x00\x01binary")
    return [str(folder)]


def specials(folder: Path, size: int) -> list[str]:
    os.mkfifo(folder / "fifo.txt")
    (folder / "loop.txt").symlink_to("loop.txt")
    (folder / "dangling.txt").symlink_to("nowhere.txt")
    (folder / "zero.txt").symlink_to("/dev/zero")
    (folder / "ok.txt").write_text("the one good file\n")
    return [str(folder)]


def growing(folder: Path, size: int) -> list[str]:
    (folder / "log.txt").write_text("start\n" * 100_000)
    return [str(folder)]  # the default maximum file size applies


def append_forever(folder: Path) -> Callable[[], None]:
    """Append about 10 MB/s to log.txt until stopped (it grows while it is read)."""
    stop = threading.Event()

    def run() -> None:
        line = "appended while the index reads it\n"
        block = line * (MB // len(line))
        with (folder / "log.txt").open("a") as handle:
            while not stop.is_set():
                handle.write(block)
                handle.flush()
                time.sleep(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def end() -> None:
        stop.set()
        thread.join()

    return end


CASES = [
    Case("prose-single-line", prose),
    Case("phrase-single-line", phrase),
    Case("no-whitespace-single-line", no_spaces),
    Case("over-max-file-size", over_limit),
    Case("jsonl-huge-record", jsonl_huge_record),
    Case("jsonl-100k-deep", jsonl_deep),
    Case("jsonl-100k-deep-lenient", jsonl_deep_lenient),
    Case("bad-utf8-and-bad-name-among-51", bad_utf8_among_good),
    Case("utf16-utf32-nul", encodings),
    Case("fifo-loop-dangling-device", specials),
    Case("file-growing-while-read", growing, append_forever),
]


def _report(out: str, err: str) -> str:
    try:
        data = json.loads(out)
    except ValueError:
        last = [line for line in err.splitlines() if line.startswith("error:")]
        return last[-1] if last else (err.strip().splitlines() or ["?"])[-1]
    parts = [f"{data['documents']} doc(s), {data['chunks']} chunk(s)"]
    for failure in data["failed"]:
        where = ", ".join(
            f"{k} {failure[k]}" for k in ("offset", "line") if failure.get(k) is not None
        )
        parts.append(f"failed {failure['code']}" + (f" ({where})" if where else ""))
    for skipped in data["skipped"]:
        parts.append(f"skipped: {skipped['reason']}")
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200, help="size of the big inputs")
    parser.add_argument("--only", action="append", help="run only these cases")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args()
    size = args.size_mb * MB
    table = Table(title=f"hostile inputs through `ragloom index` (big inputs {args.size_mb} MB)")
    for column in ("input", "MB", "exit", "outcome", "peak RSS MB", "s"):
        numeric = column in ("MB", "peak RSS MB", "s")
        table.add_column(column, justify="right" if numeric else "left")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ragloom-hostile-") as tmp:
        for case in CASES:
            if args.only and case.name not in args.only:
                continue
            row = measure(case, Path(tmp), size)
            rows.append(row)
            table.add_row(
                row["case"],
                f"{row['input_mb']:.1f}",
                str(row["exit"]),
                row["report"],
                f"{row['peak_rss_mb']:.0f}",
                f"{row['seconds']:.1f}",
            )
            console.print(f"{row['case']}: done in {row['seconds']:.1f} s", style="dim")
    console.print(table)
    if args.json:
        print(json.dumps(rows, indent=2))


def measure(case: Case, scratch: Path, size: int) -> dict:
    """Run one case, with the child's own peak RSS from wait4."""
    folder = scratch / case.name
    folder.mkdir()
    args = case.build(folder, size)
    index = scratch / f"{case.name}.db"
    cmd = [sys.executable, "-m", "ragloom.cli", "--index", str(index), "index", *args, "--json"]
    env = {**os.environ, "RAGLOOM_EMBEDDER": "none"}
    input_mb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / MB
    stop = case.during(folder) if case.during else None
    out_path, err_path = scratch / f"{case.name}.out", scratch / f"{case.name}.err"
    start = time.perf_counter()
    with out_path.open("wb") as out, err_path.open("wb") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    report = _report(out_path.read_text(errors="replace"), err_path.read_text(errors="replace"))
    if stop:
        stop()
        grown = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / MB
        report += f" (the file grew to {grown:.0f} MB)"
    return {
        "case": case.name,
        "input_mb": input_mb,
        "exit": os.waitstatus_to_exitcode(status),
        "report": report,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "seconds": elapsed,
    }


if __name__ == "__main__":
    main()
