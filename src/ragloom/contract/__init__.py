"""The interface contract: every search option declared once (`ragloom.contract.options`),
and what each interface derives from it: JSON Schema for the tools (`schema`), pydantic
fields for the HTTP requests (`http`), click options for the command line (`cli`)."""

from ragloom.contract.options import (
    ARGUMENTS,
    DEFAULT_TOP_K,
    HTTP_MAX_TOP_K,
    OPTIONS,
    SEARCH_OPTIONS,
    TOOL_MAX_TOP_K,
    Option,
    offered,
)

__all__ = [
    "ARGUMENTS",
    "DEFAULT_TOP_K",
    "HTTP_MAX_TOP_K",
    "OPTIONS",
    "SEARCH_OPTIONS",
    "TOOL_MAX_TOP_K",
    "Option",
    "offered",
]
