"""pgvector's `vector` type to and from numpy float32 arrays on a psycopg connection.

Binary results load straight into arrays (pgvector's binary form: dimension, an unused
word, then big-endian float32s); query parameters use pgvector's own dumpers."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from psycopg.adapt import Loader
from psycopg.types import TypeInfo


class VectorBinaryLoader(Loader):
    format = psycopg.pq.Format.BINARY

    def load(self, data: Any) -> np.ndarray:
        return np.frombuffer(bytes(data), ">f4", offset=4).astype(np.float32)


class VectorTextLoader(Loader):
    format = psycopg.pq.Format.TEXT

    def load(self, data: Any) -> np.ndarray:
        text = bytes(data).decode()
        return np.array(text[1:-1].split(","), np.float32) if len(text) > 2 else np.zeros(0)


def register(conn: psycopg.Connection, info: TypeInfo | None = None) -> TypeInfo | None:
    """Make `conn` load vectors as arrays and accept arrays as vector parameters."""
    from pgvector.psycopg.vector import register_vector_info

    info = info or TypeInfo.fetch(conn, "vector")
    if info is None:
        return None
    register_vector_info(conn, info)
    conn.adapters.register_loader(info.oid, VectorBinaryLoader)
    conn.adapters.register_loader(info.oid, VectorTextLoader)
    return info


def vector_text(vector: np.ndarray) -> str:
    """pgvector's text form; float32 values written with enough digits to round-trip."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, np.float32)) + "]"
