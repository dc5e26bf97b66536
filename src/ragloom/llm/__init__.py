"""LLM services for the steps that need one: query expansion, multi-hop decisions, LLM rerank,
and the answers of `ask` (streamed, with tool calls).

`resolve_llm("openai:MODEL@URL")` or `resolve_llm("ollama:MODEL@URL")` builds a client; no
request is made until a feature that needs the LLM is switched on for a search.
"""

from ragloom.llm.client import LLM, ChatLLM, OllamaChat, OpenAIChat, StreamingLLM, resolve_llm
from ragloom.llm.parse import extract_json
from ragloom.llm.stream import ChatReply

__all__ = [
    "LLM",
    "ChatLLM",
    "ChatReply",
    "OllamaChat",
    "OpenAIChat",
    "StreamingLLM",
    "extract_json",
    "resolve_llm",
]
