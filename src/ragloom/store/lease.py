"""One writer of folders per index: a lease held for a whole folder run or watch.

A watcher, or `ragloom index`, holds its index's writer lease while it runs, so two of them
never interleave their batches (each would undo the other's mirror of a folder). A second
one waits up to `wait` seconds, then is refused with `WriterBusy` naming the holder (its
process, what it runs and since when). The lease dies with its process, kill -9 included:
an embedded index uses an `flock` on `.<index>-writer.lock` beside it (the kernel drops it;
hidden, so a walk of the folder leaves it out), a PostgreSQL index a session advisory lock
(the server drops it with the connection). Within one process the lease is shared
(re-entrant): a sidecar that watches a folder still indexes what `POST /index` asks for.
Writes of documents and records (`Index.add`) take no lease; several processes may add at
once, as before.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator

from ragloom.errors import WriterBusy

try:
    import fcntl
except ImportError:  # not on this platform: leases are per process only
    fcntl = None  # type: ignore[assignment]

POLL = 0.1  # seconds between attempts while waiting for the lease

_held: dict[str, list] = {}  # key -> [holders in this process, release function]
_held_lock = threading.Lock()


def holder_text(what: str) -> str:
    """Who holds a lease, as its refusal shows it (what it runs last: it may be cut)."""
    since = time.strftime("%H:%M:%S")
    return f"process {os.getpid()} on {socket.gethostname()} since {since}: {what}"


def describe(raw: str | None) -> str:
    """A holder as words (from `holder_text`), or "another process" when it cannot be told."""
    return (raw or "").strip() or "another process"


def refusal(where: str, holder: str | None, waited: float) -> WriterBusy:
    after = f" after waiting {waited:g} s" if waited else ""
    return WriterBusy(
        f"{where} is being indexed by {describe(holder)}{after}: one writer of folders at a time",
        "stop that process first, or leave the folder to it (a watcher indexes every change"
        " itself)",
    )


@contextlib.contextmanager
def shared_lease(
    key: str,
    acquire: Callable[[], Callable[[], None] | None],
    busy: Callable[[float], Exception],
    wait: float,
) -> Iterator[None]:
    """Hold the lease `key`: `acquire()` tries once (a release function, or None when another
    process holds it); retried until `wait` runs out, then `busy(waited)` is raised."""
    with _held_lock:
        if key in _held:
            _held[key][0] += 1
            release = None
        else:
            release = _attempts(acquire, busy, wait)
            _held[key] = [1, release]
    try:
        yield
    finally:
        with _held_lock:
            _held[key][0] -= 1
            if _held[key][0] == 0:
                _held.pop(key)[1]()


def _attempts(
    acquire: Callable[[], Callable[[], None] | None],
    busy: Callable[[float], Exception],
    wait: float,
) -> Callable[[], None]:
    deadline = time.monotonic() + wait
    while True:
        release = acquire()
        if release is not None:
            return release
        if time.monotonic() >= deadline:
            raise busy(wait)
        time.sleep(POLL)


def file_lease(
    path: str, where: str, what: str, wait: float = 0.0
) -> contextlib.AbstractContextManager[None]:
    """The lease of an embedded index: an exclusive `flock` on `path`."""

    def acquire() -> Callable[[], None] | None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder_text(what).encode(), 0)

        def release() -> None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)

        return release

    def busy(waited: float) -> WriterBusy:
        try:
            with open(path, encoding="utf-8") as file:
                return refusal(where, file.read(), waited)
        except OSError:
            return refusal(where, None, waited)

    return shared_lease(f"file:{os.path.realpath(path)}", acquire, busy, wait)


SECRET_FLAGS = ("--token", "--api-key", "--password")
_PASSWORD = re.compile(r"(://[^/@:\s]*):[^@/\s]*@")


def command_line(argv: list[str] | None = None) -> str:
    """What this process runs, for a holder's description: passwords in URLs and the
    values of secret flags left out (it is shown to other processes and database users)."""
    argv = list(sys.argv if argv is None else argv)
    name = os.path.basename(argv[0]) if argv and argv[0] else "python"
    words = [name]
    for i, arg in enumerate(argv[1:], start=1):
        secret = argv[i - 1] in SECRET_FLAGS or arg.startswith(tuple(f + "=" for f in SECRET_FLAGS))
        words.append("***" if secret else _PASSWORD.sub(r"\1@", arg))
    return " ".join(words)[:120]
