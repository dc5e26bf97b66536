"""LLM services for the steps that need one: query expansion, multi-hop decisions, LLM rerank.

`resolve_llm("openai:MODEL@URL")` or `resolve_llm("ollama:MODEL@URL")` builds a client; no
request is made until a feature that needs the LLM is switched on for a search.
"""

from ragloom.llm.client import LLM, ChatLLM, OllamaChat, OpenAIChat, resolve_llm
from ragloom.llm.parse import extract_json

__all__ = ["LLM", "ChatLLM", "OllamaChat", "OpenAIChat", "extract_json", "resolve_llm"]
