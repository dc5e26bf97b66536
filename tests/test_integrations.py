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
from tests.server_launch import ServerProcess

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


def test_langchain_k_per_call_and_unknown_fields(sources: dict) -> None:
    """`k` in the constructor and per call (`top_k` too); unknown fields are refused, in
    the constructor (pydantic) and per call (ragloom's bad_request), never dropped."""
    import pydantic

    from ragloom.errors import InvalidRequest

    index = sources["library"]
    assert len(lc.RagloomRetriever(source=index, collection="lore", k=1).invoke("silver")) == 1
    assert len(lc.RagloomRetriever(source=index, collection="lore", top_k=1).invoke("silver")) == 1
    retriever = lc.RagloomRetriever(source=index, collection="lore", k=3)
    assert len(retriever.invoke("silver", k=1)) == 1
    assert len(retriever.invoke("silver", top_k=1)) == 1
    only = retriever.invoke("silver", filters={"book": 1})
    assert [d.metadata["document_id"] for d in only] == ["other"]
    with pytest.raises(pydantic.ValidationError):
        lc.RagloomRetriever(source=index, colour="red")
    with pytest.raises(InvalidRequest) as raised:
        retriever.invoke("silver", colour="red")
    assert raised.value.code == "bad_request"
    with pytest.raises(InvalidRequest):
        retriever.invoke("silver", k=0)


@pytest.mark.parametrize("kind", ["library", "http"])
def test_llamaindex_keeps_bookkeeping_out_of_the_llm_text(sources: dict, kind: str) -> None:
    from llama_index.core.schema import MetadataMode

    retriever = li.RagloomRetriever(sources[kind], collection="lore", similarity_top_k=1)
    (found,) = retriever.retrieve("silver spoon")
    llm_text = found.node.get_content(metadata_mode=MetadataMode.LLM)
    embed_text = found.node.get_content(metadata_mode=MetadataMode.EMBED)
    for text in (llm_text, embed_text):
        assert "book: 1" in text and "a silver spoon" in text
        for hidden in ("score", "rank", "match", "chunk_id", "start", "end", "source: None"):
            assert f"{hidden}:" not in text.replace("source: None", "source:"), (hidden, text)
    assert found.node.metadata["score"] == found.score and found.node.metadata["rank"] == 1


def test_async_retrieval_never_blocks_the_event_loop(sources: dict) -> None:
    """`ainvoke` / `aretrieve` over HTTP go through the client's async connection, and over
    an Index through a worker thread: no blocking search ever runs on the loop's thread."""
    client, index = sources["http"], sources["library"]
    blocking: list[str] = []

    def guard(name: str, call):
        def checked(*args, **kwargs):
            try:
                asyncio.get_running_loop()
                blocking.append(name)
            except RuntimeError:
                pass
            return call(*args, **kwargs)

        return checked

    async def run() -> tuple[int, int, int, int]:
        lc_http = lc.RagloomRetriever(source=client, collection="lore", k=2)
        lc_lib = lc.RagloomRetriever(source=index, collection="lore", k=2)
        li_http = li.RagloomRetriever(client, collection="lore", top_k=2)
        li_lib = li.RagloomRetriever(index, collection="lore", top_k=2)
        found = await asyncio.gather(
            lc_http.ainvoke("silver"),
            lc_lib.ainvoke("silver", k=1),
            li_http.aretrieve("silver"),
            li_lib.aretrieve("silver"),
        )
        return tuple(len(f) for f in found)

    sync_call, sync_search = client._call, index.search
    client._call, index.search = guard("http", sync_call), guard("index", sync_search)
    try:
        counts = asyncio.run(run())
    finally:
        client._call, index.search = sync_call, sync_search
    assert counts == (2, 1, 2, 2)
    assert blocking == []
