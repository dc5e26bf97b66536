"""LangChain's standard retriever tests (`langchain-tests`' RetrieversIntegrationTests) on
ragloom's retriever, in process (over an `Index`) and over HTTP (over a `Client`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

import ragloom
from ragloom.integrations.langchain import RagloomRetriever
from tests.server_launch import ServerProcess

TEXTS = [
    "The silver key opens the north gate.",
    "A silver bell rings at dawn in the tower.",
    "Silver fish swim in the cold lake.",
    "The smith forged a silver ring for the queen.",
    "Nobody returns from the drowned city.",
]


@pytest.fixture(scope="module")
def index_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("langchain-standard") / "index.db"
    with ragloom.Index(path, embedder=None) as index:
        index.add([ragloom.Document(f"d{i}", text) for i, text in enumerate(TEXTS)])
    return path


@pytest.fixture(scope="module")
def library_source(index_file: Path):
    with ragloom.Index(index_file, embedder=None) as index:
        yield index


@pytest.fixture(scope="module")
def http_source(index_file: Path):
    with (
        ServerProcess(index_file, env={"RAGLOOM_EMBEDDER": "none"}) as server,
        ragloom.Client(server.url) as client,
    ):
        yield client


class _Standard(RetrieversIntegrationTests):
    source: Any = None

    @property
    def retriever_constructor(self) -> type[RagloomRetriever]:
        return RagloomRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"source": self.source}

    @property
    def retriever_query_example(self) -> str:
        return "silver"


class TestInProcess(_Standard):
    @pytest.fixture(autouse=True)
    def _source(self, library_source: ragloom.Index) -> None:
        self.source = library_source


class TestOverHTTP(_Standard):
    @pytest.fixture(autouse=True)
    def _source(self, http_source: ragloom.Client) -> None:
        self.source = http_source
