"""`ragloom index FOLDER... --watch`: index, then keep the index equal to the folders until
SIGINT or SIGTERM, which write what is queued and exit 0."""

from __future__ import annotations

import logging
import signal
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from ragloom.console import err, out, print_json, report_line
from ragloom.index import Index
from ragloom.watch import Watcher

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _log_to_stderr() -> None:
    """The watcher's log lines (each batch, each file that failed) on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("ragloom.watch")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def watch_folders(
    index: Index, paths: Sequence[str], collection: str, as_json: bool, **options: Any
) -> None:
    """Run a watcher over `paths` (folders) until a stop signal; print its first sweep."""
    watcher = Watcher(index, paths, collection, **options)
    stopped = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in STOP_SIGNALS}
    _log_to_stderr()
    warnings.filterwarnings("ignore", message="(skipped|failed) ")  # logged by the watcher
    try:
        report = watcher.start()
        if as_json:
            print_json({"ok": not report.failed, **report.to_dict("cli"), "watch": True})
        else:
            out.print(report_line(report))
            for held in report.held:
                err.print(f"warning: {held}", highlight=False, markup=False, soft_wrap=True)
        status = watcher.describe()
        how = "native events" if status["mode"] == "native" else f"polling ({status['note']})"
        err.print(
            f"watching {', '.join(status['folders'])} ({how}); Ctrl-C to stop",
            highlight=False,
            markup=False,
        )
        while not stopped.wait(0.5):
            pass
        err.print("stopping: writing what is queued", highlight=False, markup=False)
    finally:
        watcher.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
