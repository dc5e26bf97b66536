"""watchfiles against watchdog, as the events source of `ragloom.watch`: the choice made by
measurement (docs/watching.md).

Each library runs in a child process that watches a tree of `--files` files and prints every
path it is told of, with the time it heard of it; this process makes the changes and reads
the children's reports. Measured, per library: the cost of starting to watch the tree; the
delay from a file written and closed to its event (p50 and p95 over `--writes` writes, one
every 50 ms); the CPU the child uses while nothing changes (`--idle` seconds); and a burst of
`--burst` new files written at once: how many were reported, how long until the last one,
and whether the library said events were lost. Both children watch the same tree at the same
time, so they meet the same machine.

    python bench/watch_events.py                       # 20,000 files, a 5,000-file burst
    python bench/watch_events.py --files 2000 --burst 500 --idle 10
    flock /tmp/ragloom-bench.lock python bench/watch_events.py   # as timings are run here
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

LIBRARIES = ("watchfiles", "watchdog")


# -- the children ---------------------------------------------------------------------------
def _say(kind: str, path: str = "") -> None:
    sys.stdout.write(json.dumps([kind, time.time(), path]) + "\n")
    sys.stdout.flush()


def child_watchfiles(top: str) -> None:
    from watchfiles._rust_notify import RustNotify

    started = time.time()
    with RustNotify([top], False, False, 300, True, False) as notify:  # what watch() opens
        _say("ready", str(time.time() - started))
        while True:
            changes = notify.watch(1600, 20, 5000, None)  # debounce, step, timeout (ms)
            if changes in ("timeout", "signal", "stop"):
                continue
            for _, path in changes:
                _say("event", path)


def child_watchdog(top: str) -> None:
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    class Report(FileSystemEventHandler):
        def on_any_event(self, event) -> None:
            if event.event_type == "overflow" or "Overflow" in type(event).__name__:
                _say("lost")
                return
            _say("event", os.fsdecode(getattr(event, "dest_path", "") or event.src_path))

    started = time.time()
    observer = Observer()
    observer.schedule(Report(), top, recursive=True)
    observer.start()
    _say("ready", str(time.time() - started))
    while True:
        time.sleep(3600)


# -- the parent -----------------------------------------------------------------------------
class Child:
    """A library's watching child and the reports it sent so far."""

    def __init__(self, library: str, top: Path) -> None:
        self.library = library
        args = [sys.executable, __file__, "--child", library, str(top)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.process = psutil.Process(self.proc.pid)
        self.reports: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        kind, _, seconds = self.reports.get(timeout=600)
        assert kind == "ready", kind
        self.start_seconds = float(seconds)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.reports.put(json.loads(line))

    def drain(self, wait: float = 0.0) -> list[list]:
        out = []
        deadline = time.monotonic() + wait
        while True:
            left = deadline - time.monotonic()
            try:
                out.append(self.reports.get(timeout=max(left, 0.001)))
            except queue.Empty:
                if left <= 0:
                    return out

    def cpu(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def make_tree(top: Path, files: int) -> None:
    for i in range(files):
        folder = top / f"d{i // 500:03d}"
        if i % 500 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note{i:05d}.md").write_text(f"note {i} about the river and the keep\n")


def latency(children: list[Child], top: Path, writes: int) -> dict[str, list[float]]:
    for child in children:
        child.drain(0.5)
    written: dict[str, float] = {}
    for i in range(writes):
        path = top / "d000" / f"note{i % 500:05d}.md"
        with open(path, "a") as handle:
            handle.write(f"edit {i}\n")
        written[str(path)] = time.time()
        time.sleep(0.05)
        for child in children:  # the first report after the write counts
            for kind, when, where in child.drain():
                if kind == "event" and where in written and where not in child.seen:
                    child.seen[where] = when - written[where]
        if (i + 1) % 100 == 0:  # the same files again: a fresh round of first reports
            for child in children:
                child.rounds.extend(child.seen.values())
                child.seen.clear()
            written.clear()
    time.sleep(1.0)
    for child in children:
        for kind, when, where in child.drain():
            if kind == "event" and where in written and where not in child.seen:
                child.seen[where] = when - written[where]
        child.rounds.extend(child.seen.values())
    return {c.library: c.rounds for c in children}


def idle_cpu(children: list[Child], seconds: float) -> dict[str, float]:
    for child in children:
        child.drain(0.5)
    before = {c.library: c.cpu() for c in children}
    time.sleep(seconds)
    return {c.library: (c.cpu() - before[c.library]) / seconds for c in children}


def burst(children: list[Child], top: Path, count: int) -> dict[str, dict]:
    for child in children:
        child.drain(0.5)
    folder = top / "burst"
    folder.mkdir()
    started = time.time()
    names = set()
    for i in range(count):
        path = folder / f"new{i:05d}.md"
        path.write_text(f"burst file {i}\n")
        names.add(str(path))
    wrote = time.time() - started
    out = {}
    for child in children:
        reports = child.drain(10.0)
        heard = {w for k, _, w in reports if k == "event" and w in names}
        last = max((t for k, t, w in reports if w in names), default=started)
        lost = any(k == "lost" for k, _, _ in reports)
        out[child.library] = {
            "reported": len(heard),
            "last_after": last - started,
            "lost": lost,
            "write_seconds": wrote,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--burst", type=int, default=5_000)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--child", nargs=2, metavar=("LIBRARY", "TOP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        {"watchfiles": child_watchfiles, "watchdog": child_watchdog}[args.child[0]](args.child[1])
        return
    top = Path(tempfile.mkdtemp(prefix="ragloom-watch-events-"))
    try:
        make_tree(top, args.files)
        children = [Child(name, top) for name in LIBRARIES]
        for child in children:
            child.seen, child.rounds = {}, []
        delays = latency(children, top, args.writes)
        cpu = idle_cpu(children, args.idle)
        bursts = burst(children, top, args.burst)
        for child in children:
            child.stop()
    finally:
        shutil.rmtree(top, ignore_errors=True)
    table = Table(title=f"events of a {args.files:,}-file tree (Linux inotify)")
    for column in (
        "library",
        "start s",
        "writes heard",
        "p50 ms",
        "p95 ms",
        "idle CPU %",
        f"burst of {args.burst:,}: heard",
        "last after s",
        "said lost",
    ):
        table.add_column(column, justify="right")
    for name in LIBRARIES:
        d = sorted(delays[name])
        p95 = d[min(len(d) - 1, int(0.95 * len(d)))] if d else float("nan")
        b = bursts[name]
        table.add_row(
            name,
            f"{next(c.start_seconds for c in children if c.library == name):.2f}",
            f"{len(d)}/{args.writes}",
            f"{statistics.median(d) * 1000:.0f}" if d else "-",
            f"{p95 * 1000:.0f}",
            f"{cpu[name] * 100:.2f}",
            f"{b['reported']:,}",
            f"{b['last_after']:.2f}",
            "yes" if b["lost"] else "no",
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
