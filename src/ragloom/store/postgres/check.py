"""`ragloom check` on a PostgreSQL index: do the postings, document frequencies and counters
agree with the chunk rows they were derived from?"""

from __future__ import annotations

from ragloom.store.postgres.snapshot import PostgresSnapshot
from ragloom.store.sql import one

# What the rows derived from the chunk rows must agree with them on: each statement counts
# the rows of one that disagree (postings, then document frequencies).
DISAGREEMENTS = (
    (
        "SELECT count(*) FROM (SELECT c.id, t.term, t.tf, c.length FROM chunks c,"
        " unnest(c.terms, c.tfs) AS t(term, tf) WHERE c.collection_id = %(c)s) want"
        " FULL JOIN (SELECT chunk_id, term, tf, length FROM postings"
        " WHERE collection_id = %(c)s) have ON have.chunk_id = want.id"
        " AND have.term = want.term AND have.tf = want.tf AND have.length = want.length"
        " WHERE have.chunk_id IS NULL OR want.id IS NULL",
        "postings disagree with the chunks",
    ),
    (
        "SELECT count(*) FROM (SELECT t.term, count(*) AS df FROM chunks c,"
        " unnest(c.terms) AS t(term) WHERE c.collection_id = %(c)s GROUP BY t.term) want"
        " FULL JOIN (SELECT term, df FROM term_stats"
        " WHERE collection_id = %(c)s AND df > 0) have"
        " ON have.term = want.term AND have.df = want.df"
        " WHERE have.term IS NULL OR want.term IS NULL",
        "document frequencies are wrong",
    ),
)


def check_snapshot(snap: PostgresSnapshot) -> list[str]:
    """Problems found in the version `snap` reads (empty: healthy)."""
    problems: list[str] = []
    conn = snap.conn
    for name, row in sorted(snap.rows.items()):
        where = f"collection {name!r}"
        chunks, length, vectors = conn.execute(
            "SELECT count(*), coalesce(sum(length), 0), count(embedding) FROM chunks"
            " WHERE collection_id = %s",
            (row.id,),
        ).fetchone()
        for label, stored, actual in (
            ("live chunks", row.chunks, chunks),
            ("total length", row.total_length, length),
            ("vectors", row.vectors, vectors),
        ):
            if int(stored) != int(actual):
                problems.append(f"{where}: {label} counter {stored}, chunk rows say {actual}")
        for statement, what in DISAGREEMENTS:
            found = one(conn.execute(statement, {"c": row.id}))[0]
            if found:
                problems.append(f"{where}: {found} {what}")
        dimension = (row.config.get("embedding") or {}).get("dimension")
        if dimension:
            wrong = conn.execute(
                "SELECT count(*) FROM chunks WHERE collection_id = %s"
                " AND embedding IS NOT NULL AND vector_dims(embedding) <> %s",
                (row.id, int(dimension)),
            ).fetchone()[0]
            if wrong:
                problems.append(f"{where}: {wrong} vectors have another dimension")
    orphans = conn.execute(
        "SELECT count(*) FROM chunks k LEFT JOIN documents d ON d.id = k.document_id"
        " WHERE d.id IS NULL"
    ).fetchone()[0]
    if orphans:
        problems.append(f"{orphans} chunks belong to no document")
    return problems
