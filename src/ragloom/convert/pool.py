"""Conversion in worker processes: a crash (even a segfault in a C library) or a hang in a
converter costs one file, never the run.

A small pool of persistent processes (two at most on two cores) takes conversions from a
queue; each is watched by a thread of this process that waits for the answer within the
file's time limit. A worker that dies or overruns is killed and replaced, and that file
alone is named (`DocumentError`, `ConvertTimeout`). Each worker limits its own memory.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import ragloom.errors as errors
from ragloom.convert.builder import Converted

DEFAULT_TIMEOUT = 120.0  # seconds one file may take to convert
DEFAULT_MEMORY = 768 * 1024 * 1024  # address space of one worker process
_WARM = ""  # the format of a task that only starts a worker
_START_TIMEOUT = 60.0  # a worker's first answer includes starting it and its imports
_ERRORS = {
    name: getattr(errors, name)
    for name in (
        "DocumentError",
        "PasswordProtected",
        "NoTextLayer",
        "ArchiveTooLarge",
        "ConvertTimeout",
        "UnsupportedFormat",
    )
}


@dataclass
class _Task:
    fmt: str
    data: bytes
    name: str
    timeout: float
    future: Future


def _rebuilt(answer: tuple[Any, ...]) -> Converted:
    if answer[0] == "ok":
        return answer[1]
    _, kind, message, hint = answer
    raise _ERRORS.get(kind, errors.DocumentError)(message, hint)


def _boot(memory: int) -> str:
    """The worker's program: this process's import path, and the `ragloom` package without
    its root module (which loads the whole engine), so a worker starts in a fraction of the
    time and memory; then `ragloom.convert.worker.serve_stdio`."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return (
        "import sys, types\n"
        f"sys.path[:] = {sys.path!r}\n"
        "package = types.ModuleType('ragloom')\n"
        f"package.__path__ = [{package!r}]\n"
        "sys.modules['ragloom'] = package\n"
        "from ragloom.convert.worker import serve_stdio\n"
        f"serve_stdio({memory})\n"
    )


class _Pipes:
    """Pickled messages over a worker's standard input and output."""

    def __init__(self, process: subprocess.Popen) -> None:
        self._out = Connection(os.dup(process.stdin.fileno()), readable=False)  # type: ignore[union-attr]
        self._in = Connection(os.dup(process.stdout.fileno()), writable=False)  # type: ignore[union-attr]
        process.stdin.close()  # type: ignore[union-attr]
        process.stdout.close()  # type: ignore[union-attr]

    def send(self, message: Any) -> None:
        self._out.send(message)

    def poll(self, timeout: float) -> bool:
        return self._in.poll(timeout)

    def recv(self) -> Any:
        return self._in.recv()

    def close(self) -> None:
        for conn in (self._out, self._in):
            with contextlib.suppress(OSError):
                conn.close()


class _Slot:
    """One worker process and the thread that feeds and watches it."""

    def __init__(self, pool: ConversionPool) -> None:
        self.pool = pool
        self.process: Any = None
        self.conn: Any = None
        self.fresh = True
        self.thread = threading.Thread(target=self._run, name="ragloom-convert", daemon=True)
        self.thread.start()

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _boot(self.pool.memory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self.conn, self.fresh = _Pipes(self.process), True

    def stop(self) -> None:
        if self.process is None:
            return
        self.conn.close()
        if self.process.poll() is None:
            self.process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        self.process = None

    def _run(self) -> None:
        while True:
            task = self.pool.tasks.get()
            if task is None:
                self.stop()
                return
            if task.fmt == _WARM:
                if self.process is None or self.process.poll() is not None:
                    self._start()
                task.future.set_result(None)  # type: ignore[arg-type]
            elif task.future.set_running_or_notify_cancel():
                self._convert(task)

    def _convert(self, task: _Task) -> None:
        try:
            if self.process is None or self.process.poll() is not None:
                self._start()
            self.conn.send((task.fmt, task.data, task.name))
            wait = task.timeout + (_START_TIMEOUT if self.fresh else 0.0)
            if not self.conn.poll(wait):
                self.stop()
                raise errors.ConvertTimeout(
                    f"{task.name} took longer than {task.timeout:g} s to convert; stopped",
                    "raise the time limit (--convert-timeout) if the file is sound",
                )
            self.fresh = False
            answer = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            task.future.set_exception(self._crashed(task.name))
            return
        except errors.RagloomError as exc:
            task.future.set_exception(exc)
            return
        try:
            task.future.set_result(_rebuilt(answer))
        except errors.RagloomError as exc:
            task.future.set_exception(exc)

    def _crashed(self, name: str) -> errors.DocumentError:
        code = None
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5)
            code = self.process.returncode
        self.stop()
        how = f"exit code {code}"
        if code is not None and code < 0:
            try:
                how = signal.Signals(-code).name
            except ValueError:
                how = f"signal {-code}"
        return errors.DocumentError(
            f"the converter crashed on {name} ({how}); not read",
            "the file is probably damaged: open and save it again to index it",
        )


class ConversionPool:
    """Worker processes converting files; `submit` returns a Future of `Converted`."""

    def __init__(self, workers: int | None = None, memory: int = DEFAULT_MEMORY) -> None:
        self.memory = memory
        self.submitted = 0  # conversions asked for so far (re-indexing unchanged files adds none)
        self._warmed = False
        self.tasks: queue.Queue[_Task | None] = queue.Queue()
        count = workers or max(1, min(2, os.cpu_count() or 1))
        self.slots = [_Slot(self) for _ in range(count)]

    def submit(
        self, fmt: str, data: bytes, name: str, timeout: float = DEFAULT_TIMEOUT
    ) -> Future[Converted]:
        future: Future[Converted] = Future()
        self.submitted += 1
        self.tasks.put(_Task(fmt, data, name, timeout, future))
        return future

    def warm(self) -> None:
        """Start the workers now (they import their libraries while the caller reads files),
        so the first conversion does not wait for them."""
        if not self._warmed:
            self._warmed = True
            for _ in self.slots:
                self.tasks.put(_Task(_WARM, b"", "", 0.0, Future()))

    def close(self) -> None:
        for _ in self.slots:
            self.tasks.put(None)
        for slot in self.slots:
            slot.thread.join(10)

    @property
    def pids(self) -> list[int]:
        """The worker processes running now (for tests and measurements)."""
        return [s.process.pid for s in self.slots if s.process is not None]


_shared: ConversionPool | None = None
_lock = threading.Lock()


def shared_pool() -> ConversionPool:
    """The process's pool, started on first use and closed at exit."""
    global _shared
    with _lock:
        if _shared is None:
            _shared = ConversionPool()
            atexit.register(_shared.close)
        return _shared
