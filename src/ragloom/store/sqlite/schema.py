"""The embedded store's SQLite schema; `APPLICATION_ID` marks a file as a ragloom index.

Schema 2 (this one): chunks carry their forward postings (`terms`); segment files beside the
database (`<index>-segments/`) hold postings, vectors and metadata columns of older chunks,
listed in `segments`; `vectors` holds the vectors not yet in a segment file; `removed`
records deleted chunks still present in segment files (and recent deletions, so other
processes can catch up); `meta.generation` counts committed writes.
"""

APPLICATION_ID = 0x52474C4D  # "RGLM"
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE collections (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    config TEXT NOT NULL,
    changed INTEGER NOT NULL DEFAULT 0,
    layout INTEGER NOT NULL DEFAULT 0,
    flushed_upto INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    doc_id TEXT NOT NULL,
    source TEXT,
    title TEXT,
    metadata TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    length INTEGER NOT NULL,
    gaps TEXT,
    indexed_at REAL NOT NULL,
    UNIQUE (collection_id, doc_id)
);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    collection_id INTEGER NOT NULL,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    n INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT,
    terms BLOB NOT NULL
);
CREATE INDEX chunks_by_document ON chunks(document_id);
CREATE INDEX chunks_by_collection ON chunks(collection_id, id);
CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE vectors (
    chunk_id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX vectors_by_collection ON vectors(collection_id, generation);
CREATE TABLE removed (
    chunk_id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL,
    generation INTEGER NOT NULL
);
CREATE INDEX removed_by_collection ON removed(collection_id, generation);
CREATE TABLE segments (
    name TEXT PRIMARY KEY,
    collection_id INTEGER NOT NULL,
    first_row INTEGER NOT NULL,
    last_row INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    created INTEGER NOT NULL,
    retired INTEGER,
    retired_at REAL
);
CREATE TABLE vector_cache (
    id INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (model, text_hash)
);
"""
