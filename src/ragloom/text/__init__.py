"""Text analysis for the lexical index."""

from ragloom.text.tokenize import Tokenizer, TokenizerConfig, analyzer_for

__all__ = ["Tokenizer", "TokenizerConfig", "analyzer_for"]
