"""The PostgreSQL store's schema, its version table and migrations.

Everything lives in one schema (`ragloom` unless the URL says `?schema=`); the `vector`
extension is enabled when missing. Creation and migration run only on a read-write
connection, under an advisory lock so that processes opening the same database at once do
not race; a reader only checks the version.

Lexical data: `postings` (term, chunk, term frequency, chunk length), `term_stats` (document
frequency per term) and the counters on `collections` (live chunks, total length) are kept in
the same transaction as the chunks, so BM25 is computed in SQL from live chunks only.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from ragloom.errors import StoreError

SCHEMA_VERSION = 1
LOCK_CLASS = 0x52474C4D  # "RGLM": advisory locks of ragloom (schema changes, writes)

TABLES = """
CREATE TABLE schema_version (version integer NOT NULL);
CREATE TABLE meta (key text PRIMARY KEY, value bigint NOT NULL);
INSERT INTO meta VALUES ('generation', 0);
CREATE TABLE collections (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    config text NOT NULL,
    chunks bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0,
    vectors bigint NOT NULL DEFAULT 0,
    changed bigint NOT NULL DEFAULT 0
);
CREATE TABLE documents (
    id bigserial PRIMARY KEY,
    collection_id integer NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    doc_id text NOT NULL,
    source text,
    title text,
    metadata jsonb NOT NULL,
    content_hash text NOT NULL,
    length integer NOT NULL,
    gaps text,
    indexed_at double precision NOT NULL,
    UNIQUE (collection_id, doc_id)
);
CREATE TABLE chunks (
    id bigserial PRIMARY KEY,
    collection_id integer NOT NULL,
    document_id bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    n integer NOT NULL,
    start integer NOT NULL,
    "end" integer NOT NULL,
    text text NOT NULL,
    own jsonb,
    metadata jsonb NOT NULL,
    length integer NOT NULL,
    terms text[] NOT NULL,
    tfs integer[] NOT NULL,
    embedding vector
);
CREATE INDEX chunks_by_document ON chunks (document_id);
CREATE INDEX chunks_by_collection ON chunks (collection_id, id);
CREATE INDEX chunks_metadata ON chunks USING gin (metadata jsonb_path_ops);
CREATE TABLE postings (
    collection_id integer NOT NULL,
    term text NOT NULL,
    chunk_id bigint NOT NULL,
    tf integer NOT NULL,
    length integer NOT NULL,
    PRIMARY KEY (collection_id, term, chunk_id) INCLUDE (tf, length)
);
CREATE TABLE term_stats (
    collection_id integer NOT NULL,
    term text NOT NULL,
    df integer NOT NULL,
    PRIMARY KEY (collection_id, term)
);
CREATE TABLE vector_cache (
    id bigserial,
    model text NOT NULL,
    text_hash bytea NOT NULL,
    vector vector NOT NULL,
    PRIMARY KEY (model, text_hash)
);
CREATE INDEX vector_cache_age ON vector_cache (id);
"""

MIGRATIONS: dict[int, str] = {}  # version -> SQL bringing the previous version to it


def lock_key(schema: str) -> sql.Composed:
    """The advisory lock of one schema's writers (and of its creation)."""
    return sql.SQL("{}, hashtext({})").format(sql.Literal(LOCK_CLASS), sql.Literal(schema))


def vector_schema(conn: psycopg.Connection) -> str | None:
    row = conn.execute(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
        " WHERE e.extname = 'vector'"
    ).fetchone()
    return row[0] if row else None


def stored_version(conn: psycopg.Connection, schema: str) -> int | None:
    """The schema's version, None when ragloom's tables do not exist there yet."""
    found = conn.execute(
        "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'schema_version'",
        (schema,),
    ).fetchone()
    if found is None:
        return None
    row = conn.execute(
        sql.SQL("SELECT max(version) FROM {}.schema_version").format(sql.Identifier(schema))
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def ensure_schema(conn: psycopg.Connection, schema: str, create: bool, where: str) -> None:
    """Create or migrate the schema on a read-write connection (autocommit off)."""
    with conn.transaction():
        conn.execute(sql.SQL("SELECT pg_advisory_xact_lock({})").format(lock_key(schema)))
        if vector_schema(conn) is None:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        version = stored_version(conn, schema)
        if version is None:
            if not create:
                raise StoreError(f"{where} holds no ragloom index (schema {schema!r})")
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
            set_path(conn, schema)
            conn.execute(TABLES)
            conn.execute("INSERT INTO schema_version VALUES (%s)", (SCHEMA_VERSION,))
            return
        check_version(version, where)
        set_path(conn, schema)
        for step in range(version + 1, SCHEMA_VERSION + 1):
            conn.execute(MIGRATIONS[step])
            conn.execute("INSERT INTO schema_version VALUES (%s)", (step,))


def check_version(version: int | None, where: str) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} uses a newer ragloom schema ({version}; this version knows {SCHEMA_VERSION})",
            "upgrade ragloom",
        )


def set_path(conn: psycopg.Connection, schema: str) -> None:
    """Unqualified names resolve to ragloom's schema, then to where `vector` lives."""
    extension = vector_schema(conn) or "public"
    conn.execute(
        sql.SQL("SET search_path TO {}, {}").format(
            sql.Identifier(schema), sql.Identifier(extension)
        )
    )
