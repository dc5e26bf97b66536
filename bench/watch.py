"""The watcher's targets (issue 46), each beside its peer, the re-run of `ragloom index`.

    churn    300 operations in about a minute over 50 notes (edits, atomic saves, renames,
             deletes, new notes, swap files) under `ragloom index DIR --watch`; a separate
             reader process searches for each change's word: write-to-searchable p50/p95/max;
             then the index is compared with the folder. Peer: `ragloom index DIR` run again
             after a change (what a user without a watcher waits for).
    restart  kill -9 of the watcher, 40 changes while it is down, a restart: seconds from
             the restart until the index equals the folder (3 rounds).
    tree     a tree of --files files: the first index by the watcher (peer: `ragloom index`),
             a change of --burst files at once (seconds until the last is searchable, the
             batches it took), then the watcher's idle CPU and resident memory.
    soak     then a change a second for --soak seconds: resident memory along the way and
             the idle CPU after.
    sweep    a sweep that finds nothing changed, against the tree's size (peer: the no-op
             re-index `Index.index_path`): how the sweep scales with the tree.

    python bench/watch.py churn restart
    python bench/watch.py tree sweep --files 20000 --burst 5000
    python bench/watch.py tree soak --soak 3600
    flock /tmp/ragloom-bench.lock python bench/watch.py churn   # as timings are run here

Lexical only by default (RAGLOOM_EMBEDDER=none): `--embedder local` embeds in the
watcher's background as a user's default install does.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import signal
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.folder_churn import FolderChurn  # noqa: E402

console = Console(width=150)
BATCH_LINE = re.compile(r"indexed (\d+) file\(s\), removed (\d+)")


CACHE = {"XDG_CACHE_HOME": tempfile.mkdtemp(prefix="ragloom-watch-cache-")}


def env(embedder: str) -> dict[str, str]:
    """The children's environment: the model asked for, the watcher's marks in a scratch
    cache folder (not the user's)."""
    return {**os.environ, **CACHE, "RAGLOOM_EMBEDDER": embedder}


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


class WatchingCommand:
    """`ragloom index DIR --watch` as a child; its stderr lines are kept with their times."""

    def __init__(self, db: str, folder: Path, embedder: str) -> None:
        command = [sys.executable, "-m", "ragloom.cli", "--index", db, "index", str(folder)]
        started = time.monotonic()
        self.proc = subprocess.Popen(
            [*command, "--watch"],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env=env(embedder),
        )
        self.lines: queue.Queue = queue.Queue()
        self.log: list[tuple[float, str]] = []
        threading.Thread(target=self._read, daemon=True).start()
        while True:
            when, line = self.lines.get(timeout=3600)
            if line.startswith("watching "):
                break
        self.start_seconds = when - started
        self.process = psutil.Process(self.proc.pid)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            item = (time.monotonic(), line.rstrip())
            self.log.append(item)
            self.lines.put(item)

    def batches_since(self, since: float) -> list[tuple[int, int]]:
        return [
            (int(m[1]), int(m[2]))
            for when, line in list(self.log)
            if when >= since and (m := BATCH_LINE.search(line))
        ]

    def cpu(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def rss_mb(self) -> float:
        return self.process.memory_info().rss / 2**20

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=600)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Reader:
    """A separate process that searches for each change's word until it is found."""

    def __init__(self, db: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "reader", "--db", db],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env("none"),
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"  # warmed up: searches are fast

    def expect(self, word: str, doc_id: str, written: float) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps([word, doc_id, written]) + "\n")
        self.proc.stdin.flush()

    def results(self) -> dict:
        out, _ = self.proc.communicate(timeout=600)
        return json.loads(out)


def reader_main(db: str) -> None:
    """Child: poll lexical searches for the words named on stdin, report the delays."""
    from ragloom import Index

    incoming: queue.Queue = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            incoming.put(json.loads(line))
        incoming.put(None)

    waiting: dict[str, tuple[str, float]] = {}
    delays: list[float] = []
    ended, deadline = False, None
    with Index(db, embedder=None, read_only=True) as index:
        index.search("amber brook cinder", mode="lexical")  # compiles the kernels now
        print("ready", flush=True)
        threading.Thread(target=read, daemon=True).start()
        while waiting or not ended:
            while True:
                try:
                    item = incoming.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    ended, deadline = True, time.time() + 60
                else:
                    waiting[item[0]] = (item[1], item[2])
            for word, (doc_id, written) in list(waiting.items()):
                hits = index.search(word, top_k=3, mode="lexical")
                if any(h.document_id == doc_id for h in hits):
                    delays.append(time.time() - written)
                    del waiting[word]
            if deadline and time.time() > deadline:
                break
            time.sleep(0.005)
    print(json.dumps({"delays": delays, "never": len(waiting)}))


def reindex_seconds(db: str, folder: Path, embedder: str, runs: int = 5) -> float:
    """The peer: `ragloom index DIR` run again after a change, median wall time."""
    command = [sys.executable, "-m", "ragloom.cli", "--index", db, "index", str(folder)]
    times = []
    for i in range(runs):
        (folder / "peer.md").write_text(f"peer run {i} word{i}x\n")
        started = time.perf_counter()
        subprocess.run(command, env=env(embedder), capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    (folder / "peer.md").unlink()
    return statistics.median(times)


def differences_after(churn: FolderChurn, db: str) -> list[str]:
    from ragloom import Index

    with Index(db, embedder=None, read_only=True) as index:
        return churn.differences(index)


def churn_case(scratch: Path, args: argparse.Namespace, table: Table) -> None:
    folder, db = scratch / "churn", str(scratch / "churn.db")
    churn = FolderChurn(folder, notes=50, seed=46)
    churn.setup()
    peer = reindex_seconds(str(scratch / "peer.db"), folder, args.embedder)
    watcher = WatchingCommand(db, folder, args.embedder)
    reader = Reader(db)
    started = time.monotonic()
    pause = args.seconds / args.operations
    for _ in range(args.operations):
        change = churn.step()
        if change.mark is not None:
            reader.expect(change.mark, change.path, time.time())
        time.sleep(pause)
    took = time.monotonic() - started
    found = reader.results()
    deadline = time.monotonic() + 30
    while (problems := differences_after(churn, db)) and time.monotonic() < deadline:
        time.sleep(0.2)
    code = watcher.stop()
    delays = found["delays"]
    table.add_row(
        f"churn: {args.operations} operations in {took:.0f} s over 50 notes",
        f"write-to-searchable p50 {1000 * pct(delays, 0.5):.0f} ms, "
        f"p95 {1000 * pct(delays, 0.95):.0f} ms, max {1000 * max(delays):.0f} ms "
        f"({len(delays)} changes seen, {found['never']} never); "
        f"index equals folder: {'yes' if not problems else problems[:3]}; exit {code}",
        f"`ragloom index` re-run: {peer:.2f} s",
        f"{peer / pct(delays, 0.95):.1f}x faster (p95)",
    )


def restart_case(scratch: Path, args: argparse.Namespace, table: Table) -> None:
    folder, db = scratch / "restart", str(scratch / "restart.db")
    churn = FolderChurn(folder, notes=50, seed=9)
    churn.setup()
    rounds = []
    watcher = WatchingCommand(db, folder, args.embedder)
    for _ in range(3):
        watcher.proc.send_signal(signal.SIGKILL)
        watcher.proc.wait()
        for _ in range(40):
            churn.step()
        started = time.monotonic()
        watcher = WatchingCommand(db, folder, args.embedder)
        while differences_after(churn, db):
            time.sleep(0.05)
        rounds.append(time.monotonic() - started)
    watcher.stop()
    peer = reindex_seconds(str(scratch / "peer-restart.db"), folder, args.embedder, runs=3)
    table.add_row(
        "kill -9, 40 changes, restart",
        "equal to the folder "
        + ", ".join(f"{r:.2f}" for r in rounds)
        + " s after the restart (3 rounds)",
        f"`ragloom index` re-run: {peer:.2f} s",
        f"{peer / max(rounds):.1f}x",
    )


def make_tree(folder: Path, files: int) -> None:
    for i in range(files):
        sub = folder / f"d{i // 500:03d}"
        if i % 500 == 0:
            sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note{i:05d}.md").write_text(f"# Note {i}\n\nnote{i}word rests by the river.\n")


def tree_case(scratch: Path, args: argparse.Namespace, table: Table) -> WatchingCommand:
    folder, db = scratch / "tree", str(scratch / "tree.db")
    make_tree(folder, args.files)
    command = [sys.executable, "-m", "ragloom.cli", "--index", str(scratch / "peer-tree.db")]
    started = time.perf_counter()
    subprocess.run(
        [*command, "index", str(folder)], env=env(args.embedder), check=True, capture_output=True
    )
    peer = time.perf_counter() - started
    watcher = WatchingCommand(db, folder, args.embedder)
    table.add_row(
        f"tree of {args.files:,} files: first index",
        f"{watcher.start_seconds:.1f} s to watching",
        f"`ragloom index`: {peer:.1f} s",
        f"{peer / watcher.start_seconds:.2f}x",
    )
    time.sleep(2)
    since = time.monotonic()
    words = {}
    for i in range(args.burst):  # a checkout: thousands of files rewritten at once
        path = folder / f"d{i // 500:03d}" / f"note{i:05d}.md"
        path.write_text(f"# Note {i}\n\nburst{i}word after the checkout.\n")
        words[f"burst{i}word"] = f"d{i // 500:03d}/note{i:05d}.md"
    wrote = time.monotonic() - since
    from ragloom import Index

    last = max(words)  # the last file written is a fair probe of the whole change
    sample = [f"burst{i}word" for i in range(0, args.burst, max(1, args.burst // 50))]
    with Index(db, embedder=None, read_only=True) as index:
        for word in [*sample, last]:
            while not index.search(word, top_k=1, mode="lexical"):
                time.sleep(0.02)
    landed = time.monotonic() - since
    time.sleep(1.0)
    batches = watcher.batches_since(since)
    table.add_row(
        f"a change of {args.burst:,} files at once",
        f"all searchable {landed:.1f} s after the first write ({wrote:.1f} s of writing), "
        f"in {len(batches)} batch(es) of {', '.join(str(b[0]) for b in batches)} file(s)",
        "",
        "",
    )
    for label in ("the minute after it (its segments merged)", "a later idle minute"):
        before = watcher.cpu()
        time.sleep(args.idle)
        idle = (watcher.cpu() - before) / args.idle
        table.add_row(
            f"{label}, {args.files:,} files watched",
            f"CPU {100 * idle:.2f}% of a core, resident memory {watcher.rss_mb():.0f} MB",
            "",
            "",
        )
    watcher.stop()
    watcher = WatchingCommand(db, folder, args.embedder)  # its marks kept: nothing to read
    table.add_row(
        f"a watcher started again on the {args.files:,} files",
        f"{watcher.start_seconds:.1f} s to watching (only changed files are read)",
        f"`ragloom index`: {peer:.1f} s",
        f"{peer / watcher.start_seconds:.1f}x",
    )
    return watcher


def soak_case(
    watcher: WatchingCommand, folder: Path, args: argparse.Namespace, table: Table
) -> None:
    samples = [watcher.rss_mb()]
    started = time.monotonic()
    i = 0
    while time.monotonic() - started < args.soak:
        n = (i * 7919) % args.files
        path = folder / f"d{n // 500:03d}" / f"note{n:05d}.md"
        path.write_text(f"# Note\n\nsoak{i}word at second {i}.\n")
        i += 1
        time.sleep(max(0.0, started + i - time.monotonic()))
        if i % 60 == 0:
            samples.append(watcher.rss_mb())
    samples.append(watcher.rss_mb())
    time.sleep(5)
    before = watcher.cpu()
    time.sleep(args.idle)
    idle = (watcher.cpu() - before) / args.idle
    first = samples[1] if len(samples) > 2 else samples[0]  # after the first minute's warm-up
    table.add_row(
        f"soak: a change a second for {args.soak:.0f} s ({i} changes)",
        f"resident memory {first:.0f} MB after a minute, {samples[-1]:.0f} MB at the end "
        f"(max {max(samples):.0f}, {100 * (samples[-1] - first) / first:+.1f}%); "
        f"idle CPU after {100 * idle:.2f}% of a core",
        "",
        "",
    )


def sweep_case(scratch: Path, args: argparse.Namespace, table: Table) -> None:
    from ragloom import Index
    from ragloom.watch import Watcher

    for files in sorted({1000, 5000, args.files}):
        folder = scratch / f"sweep{files}"
        make_tree(folder, files)
        with Index(scratch / f"sweep{files}.db", embedder=None) as index:
            watcher = Watcher(index, [folder], polling=True, sweep_every=3600, backfill=False)
            watcher.start()
            times = []
            for _ in range(3):
                started = time.perf_counter()
                watcher._sweep_all()  # a sweep that finds nothing changed
                times.append(time.perf_counter() - started)
            watcher.stop()
            peers = []
            for _ in range(3):
                started = time.perf_counter()
                index.index_path(folder)
                peers.append(time.perf_counter() - started)
        sweep, peer = statistics.median(times), statistics.median(peers)
        table.add_row(
            f"sweep of {files:,} unchanged files",
            f"{1000 * sweep:.0f} ms ({1e6 * sweep / files:.1f} us a file)",
            f"no-op `Index.index_path`: {1000 * peer:.0f} ms",
            f"{peer / sweep:.1f}x",
        )
        shutil.rmtree(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "cases", nargs="+", choices=["churn", "restart", "tree", "soak", "sweep", "reader"]
    )
    parser.add_argument("--operations", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--burst", type=int, default=5_000)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--soak", type=float, default=3600.0)
    parser.add_argument("--embedder", default="none")
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cases == ["reader"]:
        reader_main(args.db)
        return
    table = Table(title=f"watching a folder (embedder: {args.embedder})", show_lines=True)
    for column in ("case", "ragloom --watch", "peer", "ratio"):
        table.add_column(column)
    scratch = Path(tempfile.mkdtemp(prefix="ragloom-watch-bench-"))
    try:
        if "churn" in args.cases:
            churn_case(scratch, args, table)
        if "restart" in args.cases:
            restart_case(scratch, args, table)
        if "tree" in args.cases or "soak" in args.cases:
            watcher = tree_case(scratch, args, table)
            if "soak" in args.cases:
                soak_case(watcher, scratch / "tree", args, table)
            watcher.stop()
        if "sweep" in args.cases:
            sweep_case(scratch, args, table)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(CACHE["XDG_CACHE_HOME"], ignore_errors=True)
    console.print(table)


if __name__ == "__main__":
    main()
