"""Process-wide notices for monitoring: listeners hear of embedding-service failures.

The HTTP sidecar's /metrics counts them; the library works the same with no listener.
A listener must be quick and must not raise (it runs on the failing call's thread).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ragloom.errors import RagloomError

SERVICE_FAILURES = ("embed_failed", "offline")  # codes of a service failing, not of misuse

Listener = Callable[[RagloomError], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


def on_embedding_failure(listener: Listener) -> Callable[[], None]:
    """Call `listener(error)` on every failed embedding call; returns the unsubscribe call."""
    with _lock:
        _listeners.append(listener)

    def unsubscribe() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return unsubscribe


def embedding_failed(error: RagloomError) -> None:
    """Tell the listeners an embedding call failed (service down or answering badly)."""
    if error.code not in SERVICE_FAILURES:
        return
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(error)
