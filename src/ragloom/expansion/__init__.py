"""Query expansion: LLM rephrasings (multi-query) and RM3 pseudo-relevance feedback."""

from ragloom.expansion.llm import expand_query, parse_variants
from ragloom.expansion.rm3 import PRFParams, rm3_query

__all__ = ["PRFParams", "expand_query", "parse_variants", "rm3_query"]
