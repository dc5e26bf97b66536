"""The options of `ask` (the answer stage), beside the search options it also takes."""

from __future__ import annotations

from ragloom.contract.option import MAX_QUERY_CHARS, Option

ASK_OPTIONS: tuple[Option, ...] = (
    Option(
        "question",
        "string",
        "The question to answer.",
        max_length=MAX_QUERY_CHARS,
        surfaces=("cli", "http"),
    ),
    Option(
        "max_rounds",
        "integer",
        "Tool rounds in which the model may search again before it must answer (0: none).",
        default=3,
        minimum=0,
        maximum=10,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "history",
        "array",
        'The conversation so far, oldest first, each {"role": "user" or "assistant",'
        ' "content": "..."}: the question is then rewritten into a standalone search query.',
        items="object",
        max_length=100,
        max_json=200_000,
        surfaces=("library", "http"),
    ),
    Option(
        "min_relevance",
        "number",
        "The relevance floor: below it the passages are taken not to cover the question and"
        " the answer says so without calling the model. Default: the floor measured for the"
        " collection's search; 0 never abstains.",
        minimum=0,
        maximum=1,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "max_tokens",
        "integer",
        "Most tokens the answer may take (default: the model's own limit).",
        minimum=1,
        maximum=100_000,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "show_prompt",
        "boolean",
        "Return (on the command line, print) the messages sent to the model.",
        default=False,
        surfaces=("library", "cli", "http"),
    ),
    Option(
        "template",
        "string",
        "A file holding the system prompt, with {passages} where the numbered passages go"
        " (and optionally {instruction} and {question}).",
        surfaces=("library", "cli"),
    ),
    Option(
        "stream",
        "boolean",
        "Answer as text/event-stream: the answer's text as it arrives, then one final event"
        " with the whole answer.",
        default=False,
        surfaces=("http",),
    ),
)
