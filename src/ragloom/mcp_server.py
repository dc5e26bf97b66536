"""`ragloom mcp`: the retrieval tools over the Model Context Protocol (stdio), with the
official `mcp` package's `MCPServer` (its 2.x API). The tools are `ragloom.tools.Toolbox`'s:
`search`, `get_document` and `context`, with filters, collections and top_k.

A tool's failure (an unknown document, a bad filter) comes back as an MCP tool error whose
text carries ragloom's error code and message.
"""

from __future__ import annotations

from typing import Any

from ragloom.errors import ModelUnavailable
from ragloom.tools import MAX_TOP_K, SCHEMAS, Toolbox

INSTALL_HINT = "install the MCP server with `pip install 'ragloom[mcp]'`"


def _description(name: str) -> str:
    return next(s["function"]["description"] for s in SCHEMAS if s["function"]["name"] == name)


def build_server(toolbox: Toolbox) -> Any:
    """An `MCPServer` exposing the toolbox's three tools."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        raise ModelUnavailable(f"the mcp package is not installed ({exc})", INSTALL_HINT) from None
    from ragloom.version import __version__

    server = MCPServer(
        "ragloom",
        version=__version__,
        instructions="Search the user's indexed material; cite passages by their ids.",
    )

    def run(name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = toolbox.call(name, {k: v for k, v in args.items() if v is not None})
        if not result.pop("ok"):
            error = result["error"]
            raise ToolError(f"{error['code']}: {error['message']}")
        return result

    @server.tool(description=_description("search"))
    def search(
        query: str,
        top_k: int = 5,
        collections: list[str] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return run(
            "search",
            {
                "query": query,
                "top_k": min(top_k, MAX_TOP_K),
                "collections": collections,
                "filters": filters,
            },
        )

    @server.tool(description=_description("get_document"))
    def get_document(
        document_id: str,
        collection: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> dict[str, Any]:
        return run(
            "get_document",
            {"document_id": document_id, "collection": collection, "start": start, "end": end},
        )

    @server.tool(description=_description("context"))
    def context(
        query: str,
        top_k: int = 5,
        collections: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        budget: int | None = None,
    ) -> dict[str, Any]:
        return run(
            "context",
            {
                "query": query,
                "top_k": min(top_k, MAX_TOP_K),
                "collections": collections,
                "filters": filters,
                "budget": budget,
            },
        )

    return server


def serve_stdio(toolbox: Toolbox) -> None:
    """Run the MCP server on stdin/stdout until the client closes the connection."""
    build_server(toolbox).run("stdio")
