"""A collection sharded across three real PostgreSQL servers (started here): one URL names
the set, documents sit on the shard their id hashes to, BM25 uses the whole set's statistics
(rankings and scores equal the embedded store's), dense merges each shard's candidates,
filters run on every shard, and a write across shards is seen whole or not at all."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ragloom import Document, Index
from ragloom.errors import InputError
from ragloom.filters import parse_filter
from ragloom.lexical import BM25Params
from ragloom.retrieval.search_options import SearchOptions
from ragloom.store.base import DenseQuery, LexicalQuery
from ragloom.store.open import open_store
from ragloom.store.records import NewChunk, NewDocument
from ragloom.store.shards import commit
from ragloom.store.shards.placement import MAX_SHARDS, jump, shard_of, split_row
from ragloom.store.shards.url import parse_shard_set

from .shard_set import start_shards
from .test_postgres import _vector_documents

WORDS = [
    "basalt",
    "cliff",
    "harbour",
    "river",
    "stone",
    "meadow",
    "granite",
    "lantern",
    "willow",
    "copper",
]


def corpus(n: int, seed: int = 0) -> list[Document]:
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        words = rng.choice(WORDS, size=int(rng.integers(3, 12))).tolist()
        docs.append(Document(f"doc{i}", " ".join(words), metadata={"group": i % 4}))
    return docs


def ranked(
    index: Index, query: str, where: dict | None, k: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """The lexical top k (document numbers, scores) of a query under a filter: documents
    are one chunk each here, and row ids differ between stores."""
    options = SearchOptions(top_k=k, mode="lexical", filters=where)
    candidates = index.rank(query, options, "default").candidates
    owner = index.chunk_documents("default")
    rows = np.array([int(owner[c.row_id][3:]) for c in candidates], np.int64)
    return rows, np.array([c.score for c in candidates], np.float64)


def same_ranking(one: Index, other: Index, query: str, where: dict | None) -> None:
    """The same scores rank by rank (to 1e-9), the same documents at every score above the
    last one, and those at the last one tie with it in the reference too."""
    (docs_a, scores_a), (docs_b, scores_b) = ranked(one, query, where), ranked(other, query, where)
    assert np.allclose(scores_a, scores_b, rtol=1e-9, atol=0)
    if not len(scores_a):
        return
    for score in np.unique(scores_a)[1:]:
        assert set(docs_a[np.isclose(scores_a, score, rtol=1e-9)]) == set(
            docs_b[np.isclose(scores_b, score, rtol=1e-9)]
        )
    wide = dict(zip(*ranked(one, query, where, 200)))
    assert all(np.isclose(wide[d], s, rtol=1e-9) for d, s in zip(docs_b, scores_b))


@pytest.fixture(scope="module")
def servers():
    started = start_shards(3)
    yield started
    started.stop()


def test_placement_is_stable_and_moves_little_when_the_set_grows() -> None:
    ids = [f"doc{i}" for i in range(3000)]
    three = [shard_of(d, 3) for d in ids]
    assert three == [shard_of(d, 3) for d in ids]  # the same in every call and process
    counts = np.bincount(three, minlength=3)
    assert counts.min() > 850  # about a third each
    four = [shard_of(d, 4) for d in ids]
    moved = [(a, b) for a, b in zip(three, four) if a != b]
    assert all(b == 3 for _, b in moved)  # only onto the new shard
    assert 600 < len(moved) < 900  # about a quarter
    assert jump(12345, 1) == 0
    assert split_row(17 * MAX_SHARDS + 2) == (2, 17)


def test_the_url_names_each_shard_with_its_own_hosts_and_options() -> None:
    parsed = parse_shard_set("postgresql+shards://u:pw@a:1/db?schema=x;u@b:2,c:3/db?schema=x")
    assert parsed.shards == (
        "postgresql://u:pw@a:1/db?schema=x",
        "postgresql://u@b:2,c:3/db?schema=x",
    )
    assert "pw" not in parsed.shown and "b:2,c:3" in parsed.shown
    with pytest.raises(InputError):
        parse_shard_set("postgresql+shards://u@a/db;;u@b/db")


def test_rankings_scores_and_filters_equal_the_embedded_store(tmp_path, servers) -> None:
    docs = corpus(600)
    url = servers.url()
    with Index(tmp_path / "one.db", embedder=None) as one, Index(url, embedder=None) as sharded:
        for index in (one, sharded):
            index.add(docs)
            for doc in docs[:60:3]:
                index.delete(doc.id)
            index.add(
                [Document(d.id, d.text + " granite", metadata=d.metadata) for d in docs[1:90:3]]
            )
        store = sharded.store
        assert store.check() == []
        for i in range(3):  # every shard holds part of it, each document on its own shard
            with store.shard(i).snapshot() as snap:
                held = {d for (d,) in snap.conn.execute("SELECT doc_id FROM documents")}
            assert held and all(shard_of(d, 3) == i for d in held)
        assert one.stats()["chunks"] == sharded.stats()["chunks"]
        assert (
            one.stats()["collections"]["default"]["terms"]
            == sharded.stats()["collections"]["default"]["terms"]
        )
        queries = [" ".join(WORDS[i : i + n]) for i in range(8) for n in (1, 2, 3)]
        for query in queries:
            for where, groups in (
                (None, {0, 1, 2, 3}),
                ({"group": 1}, {1}),
                ({"group": {"$in": [0, 3]}}, {0, 3}),
            ):
                same_ranking(one, sharded, query, where)
                hits_a = one.search(query, top_k=10, mode="lexical", filters=where)
                hits_b = sharded.search(query, top_k=10, mode="lexical", filters=where)
                assert [round(h.score, 9) for h in hits_a] == [round(h.score, 9) for h in hits_b]
                assert not hits_b.degraded
                assert {h.metadata["group"] for h in hits_b} <= groups
        assert sharded.document_text("doc70") == one.document_text("doc70")
        assert {d.doc_id for d in sharded.documents(limit=1000)} == {
            d.doc_id for d in one.documents(limit=1000)
        }


def new_doc(doc_id: str, text: str) -> NewDocument:
    chunk = NewChunk(0, text, 0, len(text), {}, text.split())
    return NewDocument(Document(doc_id, text), f"h-{doc_id}-{text}", [chunk])


def ids_on(home: int, count: int, n: int, prefix: str = "x") -> list[str]:
    """`n` document ids that live on shard `home` of `count`."""
    found, i = [], 0
    while len(found) < n:
        if shard_of(f"{prefix}{i}", count) == home:
            found.append(f"{prefix}{i}")
        i += 1
    return found


def test_dense_merges_every_shards_candidates_and_filters_run_on_each(servers) -> None:
    store = open_store(servers.url())
    try:
        docs, vectors = _vector_documents(900, 16)
        with store.write() as write:
            info = write.ensure_collection("v", {"embedding": {"model": "test", "dimension": 16}})
            rows = write.put(info, docs).rows
        assert sorted({split_row(r)[0] for r in rows}) == [0, 1, 2]
        rng = np.random.default_rng(3)
        bucket = np.array([i % 1000 for i in range(900)])
        with store.snapshot() as snap:
            reader = snap.collection("v")
            owner = reader.chunk_documents()
            for _ in range(20):
                query = vectors[rng.integers(900)] + 0.2 * rng.normal(size=16).astype(np.float32)
                got, scores = reader.dense(DenseQuery(query), 10)
                want = np.argsort(-(vectors @ query), kind="stable")[:10]
                assert [owner[r] for r in got] == [f"d{i}" for i in want]
                assert np.allclose(scores, (vectors @ query)[want], atol=1e-5)
                node = parse_filter({"bucket": {"$lt": 50}})
                got, _ = reader.dense(DenseQuery(query, node), 5)
                allowed = np.flatnonzero(bucket < 50)
                want = allowed[np.argsort(-(vectors[allowed] @ query), kind="stable")[:5]]
                assert [owner[r] for r in got] == [f"d{i}" for i in want]
            assert reader.vectors(got).shape == (5, 16)
            assert np.allclose(reader.vectors(got), vectors[want])
    finally:
        store.close()


def test_a_write_across_shards_is_seen_whole_or_not_at_all(servers) -> None:
    url = servers.url()
    ids = [f"tide{i}" for i in range(30)]
    assert len({shard_of(d, 3) for d in ids}) == 3
    with Index(url, embedder=None) as index:
        index.add([Document(d, "tide version0") for d in ids])
        stop, seen, bad = threading.Event(), [], []

        def search() -> None:
            with Index(url, embedder=None) as reader:
                while not stop.is_set():
                    hits = reader.search("tide", top_k=50, mode="lexical")
                    versions = {h.text.split()[1] for h in hits}
                    seen.append(len(versions))
                    if len(hits) != 30 or len(versions) != 1:
                        bad.append((len(hits), sorted(versions)))

        threads = [threading.Thread(target=search) for _ in range(3)]
        for t in threads:
            t.start()
        for n in range(1, 41):
            index.add([Document(d, f"tide version{n}") for d in ids])
        stop.set()
        for t in threads:
            t.join()
        assert len(seen) > 20 and bad == []
        assert {h.text for h in index.search("tide", top_k=50)} == {"tide version40"}


def test_a_search_waits_for_a_commit_in_progress_and_keeps_no_lock_after(servers) -> None:
    """Searches take the commit locks on every shard at once when they are free; one busy
    (a writer between PREPARE and COMMIT PREPARED) makes the search wait for it, in shard
    order. No search leaves a lock held behind it."""
    with Index(servers.url(), embedder=None) as index:
        index.add([Document(f"lock{i}", "lock words") for i in range(12)], "locks")
        store = index.store
        writer = store.shard(1).control_connection()
        assert commit.exclusive_lock(writer, store.schema, wait=False)
        answers: list = []

        def search() -> None:
            answers.append(index.search("lock", top_k=20, collection="locks", mode="lexical"))

        thread = threading.Thread(target=search)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and not answers  # waits for the commit to end
        commit.exclusive_unlock(writer, store.schema)
        thread.join(10)
        assert len(answers[0]) == 12

        def free() -> bool:  # a writer could take every shard's lock at once
            taken = []
            for i in range(3):
                conn = store.shard(i).control_connection()
                taken.append(commit.exclusive_lock(conn, store.schema, wait=False))
                commit.exclusive_unlock(conn, store.schema)
                conn.close()
            return all(taken)

        with index.reading() as reading:  # let go with the first query on each shard
            assert not free()
            assert len(reading.search("lock", top_k=20, collection="locks", mode="lexical")) == 12
            assert free()
        search()
        assert free()


def test_a_failed_write_leaves_every_shard_as_it_was(servers) -> None:
    store = open_store(servers.url())
    try:
        with store.write() as write:
            info = write.ensure_collection("c", {})
        with pytest.raises(RuntimeError), store.write() as write:
            write.put(info, [new_doc(d, "lost words") for d in ids_on(0, 3, 2)])
            write.put(info, [new_doc(d, "lost words") for d in ids_on(2, 3, 2)])
            raise RuntimeError("the caller failed midway")
        with store.snapshot() as snap:
            assert snap.document_counts()["c"]["documents"] == 0
            assert (
                snap.collection("c").lexical(LexicalQuery(["lost"], BM25Params()), 10)[0].size == 0
            )
        assert store.check() == []
    finally:
        store.close()


def test_writes_to_different_shards_do_not_wait_for_each_other(servers) -> None:
    store = open_store(servers.url())
    try:
        with store.write() as write:
            info = write.ensure_collection("c", {})
        holding, release = threading.Event(), threading.Event()

        def slow_writer() -> None:
            with store.write() as write:
                write.put(info, [new_doc(ids_on(0, 3, 1)[0], "slow words")])
                holding.set()
                release.wait(10)

        thread = threading.Thread(target=slow_writer)
        thread.start()
        assert holding.wait(10)
        started = time.monotonic()
        with store.write() as write:  # shard 1 only: does not wait for shard 0's writer
            write.put(info, [new_doc(ids_on(1, 3, 1)[0], "quick words")])
        took = time.monotonic() - started
        release.set()
        thread.join()
        assert took < 2.0
        with store.snapshot() as snap:
            assert snap.document_counts()["c"]["documents"] == 2
    finally:
        store.close()


def test_growing_opens_shards_in_order_so_it_never_deadlocks_with_a_writer(servers) -> None:
    """A writer holding shard 1 while the move begins, then needing shard 2 (a document whose
    home moves from 1 to 2): the move waits for it in shard order instead of holding shard 2
    (which deadlocked both until a lock timeout)."""
    from ragloom.store.shards.grow import add_shard

    schema = "o_" + str(time.time_ns())[-9:]
    two, three = servers.url(schema, count=2), servers.url(schema, count=3)
    moves = [d for d in (f"m{i}" for i in range(200)) if (shard_of(d, 2), shard_of(d, 3)) == (1, 2)]
    with Index(two, embedder=None) as index:
        index.add([Document(d, "moor words") for d in moves])
    store = open_store(three)
    grown: list = []
    mover = threading.Thread(
        target=lambda: grown.append(add_shard(two, "postgresql://" + three.split(";")[-1])),
        daemon=True,
    )
    try:
        info = store.collections()["default"]
        started = time.monotonic()
        with store.write() as write:
            write.part(1)  # a writer holds shard 1 ...
            mover.start()
            time.sleep(1.5)  # ... while the move begins, then needs shard 2
            write.put(info, [new_doc(moves[0], "moor again")])
        mover.join(60)
        assert grown and time.monotonic() - started < 20  # not a lock timeout's 30 s
    finally:
        store.close()
    with Index(three, embedder=None) as index:
        assert index.document_text(moves[0]) == "moor again"
        assert len(index.search("moor", top_k=100, mode="lexical")) == len(moves)
        assert index.check() == []


@pytest.mark.slow  # threads racing a move on three servers
def test_adding_a_shard_moves_documents_online_and_searches_stay_whole(servers) -> None:
    from ragloom.store.shards.grow import add_shard

    schema = "g_" + str(time.time_ns())[-9:]
    two, three = servers.url(schema, count=2), servers.url(schema, count=3)
    docs = [Document(f"doc{i}", f"meadow tide {WORDS[i % 10]}") for i in range(900)]
    with Index(two, embedder=None) as index:
        index.add(docs)
    stop, moving, bad = threading.Event(), threading.Event(), []
    searched, during, last = [0], [0], {}  # last: each replaced document's last version

    def search() -> None:
        try:
            with Index(three, embedder=None) as reader:
                while not stop.is_set():
                    was_moving = moving.is_set()
                    hits = reader.search("meadow", top_k=1000, mode="lexical")
                    ids = [h.document_id for h in hits]
                    searched[0] += 1
                    during[0] += was_moving and moving.is_set()
                    if len(ids) != 900 or len(set(ids)) != 900 or hits.degraded:
                        bad.append((len(ids), len(set(ids))))
        except Exception as exc:  # a search that fails is a wrong search
            bad.append(repr(exc))

    def write() -> None:  # replacements during the move: never undone by it
        try:
            with Index(three, embedder=None) as writer:
                n = 0
                while not stop.is_set():
                    doc_id = f"doc{(7 * n) % 900}"
                    writer.add([Document(doc_id, f"meadow tide version{n}")])
                    last[doc_id] = n
                    n += 1
        except Exception as exc:  # e.g. a lock timeout: writers and the move deadlocked
            bad.append(repr(exc))

    threads = [threading.Thread(target=search) for _ in range(2)] + [threading.Thread(target=write)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.3)
        moving.set()
        report = add_shard(two, three.split(";")[-1].join(["postgresql://", ""]), batch=50)
        moving.clear()
        time.sleep(0.3)
    finally:  # the threads end however the move ends
        stop.set()
        for t in threads:
            t.join()
    print(
        f"moved {report.moved['default']}, searches {searched[0]} ({during[0]} during the move),"
        f" replacements {len(last)} documents, wrong {len(bad)}"
    )
    assert bad == [] and during[0] > 2 and last
    bound = {f"doc{i}" for i in range(900) if shard_of(f"doc{i}", 3) == 2}  # about a third
    assert 0 < report.moved["default"] <= len(bound)  # each one moved or placed there by
    assert report.moved["default"] + len(bound & set(last)) >= len(bound)  # the writer
    with Index(three, embedder=None) as index:
        assert index.check() == []
        with index.store.shard(2).snapshot() as snap:
            held = snap.document_counts()["default"]["documents"]
        assert held == len(bound)
        assert len({doc.doc_id for doc in index.documents(limit=2000)}) == 900
        for doc_id, n in last.items():  # no replacement undone by the move
            assert index.document_text(doc_id) == f"meadow tide version{n}"
    with pytest.raises(InputError, match="3 shards"):
        Index(two, embedder=None)


def answer(index: Index, query: str) -> tuple[list[float], set[tuple[str, float]]]:
    """A search's scores in order and its hits above the last score (ties at the cut-off
    may be any of the tied documents; row ids differ between stores)."""
    hits = index.search(query, top_k=10)
    scores = [round(h.score, 9) for h in hits]
    return scores, {(h.document_id, s) for h, s in zip(hits, scores) if s > scores[-1]}


def test_migrate_into_and_out_of_a_shard_set_and_add_shard_on_the_command_line(
    tmp_path, servers
) -> None:
    from click.testing import CliRunner

    from ragloom.cli import cli
    from ragloom.store.migrate import migrate

    docs = corpus(120, seed=5)
    source = tmp_path / "source.db"
    with Index(source, embedder=None) as index:
        index.add(docs)
        before = {q: answer(index, q) for q in WORDS}
    schema = "m_" + str(time.time_ns())[-9:]
    two, three = servers.url(schema, count=2), servers.url(schema, count=3)
    report = migrate(source, two)
    assert report.documents == 120
    result = CliRunner().invoke(cli, ["add-shard", two, "postgresql://" + three.split(";")[-1]])
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1].count(";") == 2
    back = tmp_path / "back.db"
    migrate(three, back)
    for location in (three, back):
        with Index(location, embedder=None) as index:
            got = {q: answer(index, q) for q in WORDS}
            assert got == before
            assert index.check() == []
