"""A LlamaIndex retriever over ragloom: `RagloomRetriever(index_or_client, top_k=4)`.

Returns `NodeWithScore`s: a `TextNode` with the chunk's id (`node_id`), text, character
offsets (`start_char_idx`/`end_char_idx`), its document as the SOURCE relationship, and
metadata (the chunk's own plus ragloom's fields), scored with ragloom's score. ragloom's
bookkeeping (score, rank, match, chunk and document ids, offsets, collection, and a source
or title that is None) stays in the metadata for the application but out of the text the
LLM reads and the embedder embeds (`excluded_llm_metadata_keys`,
`excluded_embed_metadata_keys`). `aretrieve` over the HTTP client is natively async.
`similarity_top_k`, LlamaIndex's name for the number of hits, is accepted for `top_k`.
Needs `ragloom[llamaindex]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragloom.contract.options import DEFAULT_TOP_K
from ragloom.errors import InputError
from ragloom.integrations import (
    BOOKKEEPING,
    aretrieve,
    check_size,
    check_source,
    hit_metadata,
    missing,
    retrieve,
    search_options,
)
from ragloom.types import Hit

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import (
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing("llama-index-core", "llamaindex", exc) from None


class RagloomRetriever(BaseRetriever):
    """Search a ragloom `Index` (in process) or `Client` (HTTP sidecar) from LlamaIndex."""

    def __init__(
        self,
        source: Any,
        collection: str | None = None,
        top_k: int | None = None,
        search_options: Mapping[str, Any] | None = None,
        similarity_top_k: int | None = None,
        **kwargs: Any,
    ) -> None:
        if top_k is not None and similarity_top_k is not None:
            raise InputError("give top_k or similarity_top_k, not both")
        size = top_k if top_k is not None else similarity_top_k
        self.source = check_source(source)
        self.collection = collection
        self.top_k = check_size(DEFAULT_TOP_K if size is None else size)
        self.search_options = _known(search_options or {})
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = retrieve(
            self.source, query_bundle.query_str, self.top_k, self.collection, self.search_options
        )
        return [_node(hit) for hit in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await aretrieve(
            self.source, query_bundle.query_str, self.top_k, self.collection, self.search_options
        )
        return [_node(hit) for hit in hits]


def _known(options: Mapping[str, Any]) -> dict[str, Any]:
    return search_options({}, options, ())[1]


def _node(hit: Hit) -> NodeWithScore:
    metadata = hit_metadata(hit)
    hidden = [*BOOKKEEPING, *(k for k in ("source", "title") if metadata.get(k) is None)]
    node = TextNode(
        id_=hit.chunk_id,
        text=hit.text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
        start_char_idx=hit.start,
        end_char_idx=hit.end,
        relationships={
            NodeRelationship.SOURCE: RelatedNodeInfo(
                node_id=hit.document_id, metadata={"source": hit.source}
            )
        },
    )
    return NodeWithScore(node=node, score=hit.score)
