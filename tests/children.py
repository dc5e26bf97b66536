"""The environment of a child process the tests start through a client that passes on only a
few variables (the MCP client's stdio transport)."""

from __future__ import annotations

import os


def mcp_env() -> dict[str, str]:
    """Lexical only, and PYTHONPATH passed on, so that the child runs the code under test
    when it is not the installed one."""
    path = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    return {"RAGLOOM_EMBEDDER": "none", **path}
