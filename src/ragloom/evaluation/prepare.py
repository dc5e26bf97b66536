"""The evaluation index: built once, kept at a path between runs when asked (`--index`).

A manifest beside the file (`PATH.eval.json`) records what the index was built from: the
corpus file (size and modification time), the collection's config and the embedding model,
with a fingerprint of the model's vectors. A later run reuses the file as it is when all
match; it refuses a file whose vectors came from another build of the model (they would be
reused silently from the embedding cache), and otherwise brings it up to date.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.config import CollectionConfig
from ragloom.embedding import Embedder, embedder_from_config, resolve_embedder
from ragloom.errors import InputError
from ragloom.evaluation.beir import BeirDataset
from ragloom.evaluation.runner import EVAL_COLLECTION, build_index
from ragloom.index import Index

FINGERPRINT_TEXT = "ragloom evaluation index fingerprint: a short probe sentence"


@dataclass
class PreparedIndex:
    """An open evaluation index and how it came to be."""

    index: Index
    build_seconds: float  # 0 when reused as it was
    reused: bool
    embedder: str | None  # the model's name, None for lexical only


def embedder_fingerprint(embedder: Embedder | None) -> str | None:
    """A short hash of the model's vector for a fixed text (rounded: stable per machine)."""
    if embedder is None:
        return None
    vector = np.round(embedder.embed_query(FINGERPRINT_TEXT).astype(np.float64), 3)
    return hashlib.sha256(vector.tobytes()).hexdigest()[:16]


def _manifest(dataset: BeirDataset, config: CollectionConfig, embedder: Embedder | None) -> dict:
    stat = dataset.corpus_path.stat()
    return {
        "corpus": {
            "path": str(dataset.corpus_path.resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        },
        "config": {k: v for k, v in config.to_dict().items() if k != "fusion_profile"},
        "embedder": None if embedder is None else embedder.config(),
        "fingerprint": embedder_fingerprint(embedder),
    }


def manifest_path(path: Path) -> Path:
    return path.with_name(path.name + ".eval.json")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(manifest_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@contextmanager
def prepared_index(
    dataset: BeirDataset,
    config: CollectionConfig,
    embedder: str | Embedder | None,
    path: str | Path | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> Iterator[PreparedIndex]:
    """An index of the dataset's corpus: at `path` (kept, reused when it matches) or in a
    temporary folder removed afterwards."""
    model = resolve_embedder(embedder) if isinstance(embedder, str) else embedder
    with tempfile.TemporaryDirectory(prefix="ragloom-eval-") as tmp:
        target = Path(path) if path is not None else Path(tmp) / "eval.db"
        found = _read(target) if target.exists() else None
        if model is None and found is not None and found.get("embedder"):
            model = embedder_from_config(found["embedder"])  # a lexical run of an embedded index
        wanted = _manifest(dataset, config, model)
        if found is not None and found.get("fingerprint") != wanted["fingerprint"]:
            raise InputError(
                f"{target} holds vectors of another build of the embedding model "
                f"({found.get('embedder')}, fingerprint {found.get('fingerprint')}; now "
                f"{wanted['fingerprint']})",
                "remove the file (and its .eval.json) or give another --index path",
            )
        with Index(target, embedder=model) as index:
            if found == wanted and EVAL_COLLECTION in index.collections():
                index.calibrate(EVAL_COLLECTION)  # a file kept from before fusion profiles
                yield PreparedIndex(index, 0.0, True, model.name if model else None)
                return
            started = time.perf_counter()
            build_index(index, dataset, config, on_progress)
            seconds = time.perf_counter() - started
            if path is not None:
                manifest_path(target).write_text(json.dumps(wanted, indent=2), encoding="utf-8")
            yield PreparedIndex(index, seconds, False, model.name if model else None)
