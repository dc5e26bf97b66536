"""LangChain and LlamaIndex retrievers, against the real packages, over the library and HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever as LCRetriever
from llama_index.core.retrievers import BaseRetriever as LIRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, TextNode

import ragloom
from ragloom.errors import InputError
from ragloom.integrations import langchain as lc
from ragloom.integrations import llamaindex as li
from ragloom.server.launch import ServerProcess

TEXT = (
    "The lighthouse keeper counted the lamps every night.\n\n"
    "Mira forged the silver key in the harbour smithy, far from the Warden's eyes."
)


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("frameworks") / "index.db"
    with ragloom.Index(path, embedder=None) as index:
        index.configure("lore", chunking={"max_chars": 80, "overlap": 0, "min_chars": 0})
        index.add([ragloom.Document("keys", TEXT, title="Keys", metadata={"book": 2})], "lore")
        index.add([ragloom.Document("other", "a silver spoon", metadata={"book": 1})], "lore")
    return path


@pytest.fixture(scope="module")
def sources(index_path: Path):
    index = ragloom.Index(index_path, embedder=None)
    with ServerProcess(index_path, env={"RAGLOOM_EMBEDDER": "none"}) as server:
        client = ragloom.Client(server.url)
        yield {"library": index, "http": client}
        client.close()
    index.close()


@pytest.mark.parametrize("kind", ["library", "http"])
def test_langchain_retriever(sources: dict, kind: str) -> None:
    retriever = lc.RagloomRetriever(source=sources[kind], collection="lore", top_k=2)
    assert isinstance(retriever, LCRetriever)
    docs = retriever.invoke("who forged the silver key")
    assert docs and all(isinstance(d, LCDocument) for d in docs)
    best = docs[0]
    assert best.id == "keys-1" and best.metadata["chunk_id"] == "keys-1"
    assert "Mira forged the silver key" in best.page_content
    assert TEXT[best.metadata["start"] : best.metadata["end"]] == best.page_content
    assert best.metadata["document_id"] == "keys" and best.metadata["book"] == 2
    assert best.metadata["title"] == "Keys" and best.metadata["collection"] == "lore"
    assert best.metadata["match"] == "lexical" and best.metadata["rank"] == 1
    assert best.metadata["score"] > docs[1].metadata["score"] > 0
    filtered = lc.RagloomRetriever(
        source=sources[kind], collection="lore", search_options={"filters": {"book": 1}}
    ).invoke("silver")
    assert [d.metadata["document_id"] for d in filtered] == ["other"]
    again = asyncio.run(retriever.ainvoke("who forged the silver key"))
    assert [d.id for d in again] == [d.id for d in docs]


@pytest.mark.parametrize("kind", ["library", "http"])
def test_llamaindex_retriever(sources: dict, kind: str) -> None:
    retriever = li.RagloomRetriever(sources[kind], collection="lore", top_k=2)
    assert isinstance(retriever, LIRetriever)
    results = retriever.retrieve("who forged the silver key")
    assert results and all(isinstance(r, NodeWithScore) for r in results)
    best = results[0]
    assert isinstance(best.node, TextNode)
    assert best.node.node_id == "keys-1" and best.score == best.node.metadata["score"]
    assert TEXT[best.node.start_char_idx : best.node.end_char_idx] == best.node.get_content()
    assert best.node.relationships[NodeRelationship.SOURCE].node_id == "keys"
    assert best.node.metadata["book"] == 2 and best.node.metadata["chunk_id"] == "keys-1"
    assert results[0].score > results[1].score
    filtered = li.RagloomRetriever(
        sources[kind], collection="lore", search_options={"filters": {"book": 1}}
    ).retrieve("silver")
    assert [r.node.metadata["document_id"] for r in filtered] == ["other"]


def test_a_source_that_cannot_search_is_refused() -> None:
    with pytest.raises(InputError):
        li.RagloomRetriever(object())
    with pytest.raises(Exception, match="ragloom.Index or ragloom.Client"):
        lc.RagloomRetriever(source="not an index")
