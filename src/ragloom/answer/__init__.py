"""The answer stage: `ask` retrieves, packs the passages under a grounding prompt, calls the
model (streamed, with tools to search again), checks its citations, and says plainly when
the material does not cover the question, without calling the model when no passage
passes the relevance floor. It composes what exists (context, tools, the LLM client):
retrieval stays usable without a model."""

from ragloom.answer.result import AskResult
from ragloom.answer.run import NOT_COVERED, ask, ask_stream

__all__ = ["NOT_COVERED", "AskResult", "ask", "ask_stream"]
