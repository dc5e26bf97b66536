"""A LlamaIndex retriever over ragloom: `RagloomRetriever(index_or_client)`.

Returns `NodeWithScore`s: a `TextNode` with the chunk's id (`node_id`), text, character
offsets (`start_char_idx`/`end_char_idx`), its document as the SOURCE relationship, and
metadata (the chunk's own plus ragloom's fields), scored with ragloom's score.
Needs `ragloom[llamaindex]`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragloom.integrations import check_source, hit_metadata, missing, retrieve

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
        top_k: int = 4,
        search_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.source = check_source(source)
        self.collection = collection
        self.top_k = top_k
        self.search_options = dict(search_options or {})
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = retrieve(
            self.source, query_bundle.query_str, self.top_k, self.collection, self.search_options
        )
        out = []
        for hit in hits:
            node = TextNode(
                id_=hit.chunk_id,
                text=hit.text,
                metadata=hit_metadata(hit),
                start_char_idx=hit.start,
                end_char_idx=hit.end,
                relationships={
                    NodeRelationship.SOURCE: RelatedNodeInfo(
                        node_id=hit.document_id, metadata={"source": hit.source}
                    )
                },
            )
            out.append(NodeWithScore(node=node, score=hit.score))
        return out
