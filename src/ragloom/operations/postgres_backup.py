"""Backup and restore of a PostgreSQL index: a logical copy of ragloom's schema.

Backup reads every table of the schema with `COPY ... TO STDOUT (FORMAT binary)` inside the
store's REPEATABLE READ snapshot (one committed version; writers go on, searches never
wait), one file a table. Restore creates the tables in a scratch schema of the target
database, loads them, sets the sequences, renames the scratch schema to the target's name and
commits, all in one transaction: a failure or a kill leaves the target as it was. HNSW
indexes the source had are built again afterwards.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from ragloom.errors import InputError
from ragloom.operations.manifest import CHUNK, HashingWriter, Manifest
from ragloom.store.base import Store
from ragloom.store.postgres import schema as schemas
from ragloom.store.postgres.store import PostgresStore
from ragloom.store.postgres.url import parse_location

# Load order: a table comes after those its rows point at.
TABLES = (
    "schema_version",
    "meta",
    "collections",
    "documents",
    "chunks",
    "postings",
    "term_stats",
    "vector_cache",
)
SEQUENCES = {"collections": "id", "documents": "id", "chunks": "id", "vector_cache": "id"}
HNSW = re.compile(r"^chunks_hnsw_(\d+)_(\d+)$")
Progress = Callable[[str, int, int], None]


def backup_postgres(store: Store, folder: Path, on_progress: Progress | None = None) -> Manifest:
    """Copy the schema `store` serves into `folder`, one binary COPY file a table."""
    if not isinstance(store, PostgresStore):
        raise InputError(
            f"{store.location} is a shard set; its backup is one backup of each shard",
            "back up each shard's postgresql:// URL",
        )
    schema = store.schema
    (folder / "tables").mkdir()
    with store.snapshot() as snap:
        conn = snap.conn
        present = {
            t
            for (t,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
            )
        }
        unknown = present - set(TABLES)
        if unknown:
            raise InputError(
                f"{store.location}: schema {schema!r} holds tables this ragloom does not know "
                f"({', '.join(sorted(unknown))})",
                "back it up with the ragloom version that wrote it",
            )
        version = conn.execute(
            sql.SQL("SELECT max(version) FROM {}").format(sql.Identifier(schema, "schema_version"))
        ).fetchone()[0]
        manifest = Manifest("postgresql", snap.generation, store.location)
        manifest.details = {"schema_version": version, "hnsw": _hnsw_indexes(conn, schema)}
        manifest.collections = _counts(conn, schema)
        for done, table in enumerate(TABLES, start=1):
            name = f"tables/{table}.copy"
            statement = sql.SQL("COPY {} TO STDOUT (FORMAT binary)").format(
                sql.Identifier(schema, table)
            )
            with open(folder / name, "wb") as handle, conn.cursor().copy(statement) as copy:
                writer = HashingWriter(handle)
                for data in copy:
                    writer.write(data)
            manifest.files[name] = writer.entry()
            if on_progress:
                on_progress("tables", done, len(TABLES))
    manifest.write(folder)
    return manifest


def _hnsw_indexes(conn: Any, schema: str) -> list[list[int]]:
    """(collection id, dimension) of every valid HNSW index of the schema."""
    names = conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND i.indisvalid",
        (schema,),
    ).fetchall()
    return [[int(m[1]), int(m[2])] for (name,) in names if (m := HNSW.match(name))]


def _counts(conn: Any, schema: str) -> dict[str, dict[str, int]]:
    from psycopg import sql

    rows = conn.execute(
        sql.SQL(
            "SELECT c.name, (SELECT count(*) FROM {d} d WHERE d.collection_id = c.id),"
            " c.chunks FROM {c} c"
        ).format(d=sql.Identifier(schema, "documents"), c=sql.Identifier(schema, "collections"))
    ).fetchall()
    return {name: {"documents": int(d), "chunks": int(k)} for name, d, k in rows}


def restore_postgres(backup: Path, manifest: Manifest, url: str) -> None:
    """Load the backup into the schema `url` names, which must hold no ragloom index."""
    where = parse_location(url)
    target = where.schema
    if manifest.details.get("schema_version") != schemas.SCHEMA_VERSION:
        raise InputError(
            f"{backup} holds ragloom schema {manifest.details.get('schema_version')}, this "
            f"ragloom writes schema {schemas.SCHEMA_VERSION}",
            "restore it with the ragloom version that wrote it, or move it with export/import",
        )
    scratch = f"{target}_restore_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(where.write) as conn:
        conn.execute(sql.SQL("SELECT pg_advisory_xact_lock({})").format(schemas.lock_key(target)))
        if schemas.vector_schema(conn) is None:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        _refuse_existing(conn, target, where.shown)
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(scratch)))
        schemas.set_path(conn, scratch)
        conn.execute(schemas.TABLES)
        conn.execute("DELETE FROM meta")  # the DDL seeds it; the backup's rows replace it
        for table in TABLES:
            statement = sql.SQL("COPY {} FROM STDIN (FORMAT binary)").format(
                sql.Identifier(scratch, table)
            )
            path = backup / "tables" / f"{table}.copy"
            with open(path, "rb") as handle, conn.cursor().copy(statement) as copy:
                while data := handle.read(CHUNK):
                    copy.write(data)
        for table, column in SEQUENCES.items():
            conn.execute(
                sql.SQL(
                    "SELECT setval(pg_get_serial_sequence({t}, {c}), coalesce(max({col}), 0) + 1,"
                    " false) FROM {table}"
                ).format(
                    t=sql.Literal(f"{scratch}.{table}"),
                    c=sql.Literal(column),
                    col=sql.Identifier(column),
                    table=sql.Identifier(scratch, table),
                )
            )
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {}").format(sql.Identifier(target)))
        conn.execute(
            sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(
                sql.Identifier(scratch), sql.Identifier(target)
            )
        )
    _build_hnsw(url, manifest.details.get("hnsw", []))


def _refuse_existing(conn: Any, schema: str, shown: str) -> None:
    """The target schema may exist only empty (DROP SCHEMA without CASCADE keeps it so)."""
    found = conn.execute(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s",
        (schema,),
    ).fetchone()[0]
    if found:
        raise InputError(
            f"schema {schema!r} of {shown} is not empty; restore never writes over an index",
            "restore into a new schema (?schema=NAME in the URL) or another database",
        )


def _build_hnsw(url: str, indexes: list[list[int]]) -> None:
    if not indexes:
        return
    store = PostgresStore(url, create=False)
    try:
        for collection_id, dimension in indexes:
            store.indexer.build(collection_id, dimension)
    finally:
        store.close()
