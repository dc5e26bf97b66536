"""`ragloom mcp`: the retrieval tools over the Model Context Protocol (stdio), on the official
`mcp` package's low-level `Server` (its 2.x API). The tools are `ragloom.tools.Toolbox`'s:
`search`, `get_document` and `context`, with filters, collections and top_k.

The tools' input schemas are `ragloom.tools.SCHEMAS` as they are (every bound and
description from `ragloom.contract`, no other properties allowed), their output schemas
`ragloom.contract.outputs.OUTPUT_SCHEMAS` (the client checks each answer), and the arguments are
checked by the toolbox itself, so a call the schema refuses (a missing `query`, an unknown
argument, `top_k` out of bounds) comes back as an MCP tool error whose text starts with
ragloom's error code, like any other failure (an unknown document, a bad filter).
"""

from __future__ import annotations

import json
from typing import Any

from ragloom.contract.outputs import OUTPUT_SCHEMAS
from ragloom.errors import ModelUnavailable
from ragloom.tools import SCHEMAS, Toolbox

INSTALL_HINT = "install the MCP server with `pip install 'ragloom[mcp]'`"


def build_server(toolbox: Toolbox) -> Any:
    """A low-level MCP `Server` listing the toolbox's three tools and calling them."""
    try:
        import mcp_types as types
        from mcp.server.lowlevel import Server
    except ImportError as exc:
        raise ModelUnavailable(f"the mcp package is not installed ({exc})", INSTALL_HINT) from None
    from ragloom.version import __version__

    tools = [
        types.Tool(
            name=s["function"]["name"],
            description=s["function"]["description"],
            input_schema=s["function"]["parameters"],
            output_schema=OUTPUT_SCHEMAS[s["function"]["name"]],
        )
        for s in SCHEMAS
    ]
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in SCHEMAS}

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        result = toolbox.call(params.name, dict(params.arguments or {}))
        if not result.pop("ok"):
            error = result["error"]
            text = f"{error['code']}: {error['message']}"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
        )

    return Server(
        "ragloom",
        version=__version__,
        instructions="Search the user's indexed material; cite passages by their ids.",
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _serve(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_stdio(toolbox: Toolbox) -> None:
    """Run the MCP server on stdin/stdout until the client closes the connection."""
    import anyio

    anyio.run(_serve, build_server(toolbox))
