"""The server's one Index, opened lazily so a broken file answers 503 instead of killing it."""

from __future__ import annotations

import threading
from pathlib import Path

from ragloom.errors import StoreError
from ragloom.index import Index


class IndexHolder:
    """Owns the shared, thread-safe Index; retries opening it while it is unavailable."""

    def __init__(
        self,
        path: Path | str,
        embedder: str | None = "auto",
        llm: str | None = None,
        reranker: str | None = None,
    ) -> None:
        self.path = path
        self.embedder = embedder
        self.llm, self.reranker = llm, reranker
        self._index: Index | None = None
        self._lock = threading.Lock()
        self.error: StoreError | None = None

    def get(self) -> Index:
        """The open Index, or `StoreError` (HTTP 503) when the file cannot be used."""
        index = self._index
        if index is not None:
            return index
        with self._lock:
            if self._index is None:
                try:
                    self._index = Index(
                        self.path,
                        create=True,
                        embedder=self.embedder,
                        llm=self.llm,
                        reranker=self.reranker,
                    )
                    self.error = None
                except StoreError as exc:
                    self.error = exc
                    raise
            return self._index

    def close(self) -> None:
        """Close the Index (at shutdown). Its background thread did the pending work while
        the server ran; what is left is handed on to the next opener rather than holding
        the shutdown up (`Index.close(finish=False)`)."""
        with self._lock:
            if self._index is not None:
                self._index.close(finish=False)
                self._index = None
