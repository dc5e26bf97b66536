"""Text analysis for the lexical index."""

from ragloom.text.tokenize import Tokenizer, TokenizerConfig

__all__ = ["Tokenizer", "TokenizerConfig"]
