"""Retrieval as a tool: the OpenAI function schema and dispatcher, the capped tool loop,
and the MCP server over stdio with the official `mcp` client."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

import ragloom
from ragloom.tools import SCHEMAS, Toolbox, run_tool_loop

from .children import mcp_env

DOCS = [
    ("key", "Mira forged the silver key in the north tower.", {"book": 1}, "lore"),
    ("gate", "The silver key opens the gate of the drowned city.", {"book": 2}, "lore"),
    ("mira", "Mira is a blacksmith's daughter with a scar on her hand.", {"book": 1}, "people"),
]


@pytest.fixture
def index_file(tmp_path):
    path = tmp_path / "tools.db"
    with ragloom.Index(path, embedder=None) as idx:
        for doc_id, text, meta, collection in DOCS:
            idx.add([ragloom.Document(id=doc_id, text=text, metadata=meta)], collection)
    return path


@pytest.fixture
def toolbox(index_file):
    with ragloom.Index(index_file, embedder=None) as idx:
        yield Toolbox(idx, collection="lore")


def test_schemas_are_openai_function_tools():
    assert [s["function"]["name"] for s in SCHEMAS] == ["search", "get_document", "context"]
    for schema in SCHEMAS:
        assert schema["type"] == "function"
        params = schema["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
    json.dumps(SCHEMAS)  # plain JSON


def test_search_tool_with_filters_and_collections(toolbox):
    answer = toolbox.call("search", '{"query": "silver key", "top_k": 5}')
    # both hold "silver key" once in five terms: equal scores rank by document id
    assert answer["ok"] and [r["document_id"] for r in answer["results"]] == ["gate", "key"]
    assert answer["total_tokens"] == sum(r["tokens"] for r in answer["results"]) > 0
    filtered = toolbox.call("search", {"query": "silver key", "filters": {"book": 2}})
    assert [r["document_id"] for r in filtered["results"]] == ["gate"]
    both = toolbox.call("search", {"query": "Mira", "collections": ["lore", "people"]})
    assert {r["collection"] for r in both["results"]} == {"lore", "people"}


def test_get_document_and_context_tools(toolbox):
    doc = toolbox.call("get_document", {"document_id": "gate", "start": 4, "end": 14})
    assert doc["ok"] and doc["text"] == "silver key" and doc["length"] == len(DOCS[1][1])
    packed = toolbox.call("context", {"query": "who forged the key", "budget": 200})
    assert packed["ok"] and packed["text"].count("[1]") >= 1 and packed["tokens"] <= 200
    assert packed["passages"][0]["document_id"] == "key"


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("search", "{not json", "bad_input"),
        ("search", {"top_k": 3}, "bad_request"),
        ("search", {"query": "x", "top_k": "3"}, "bad_request"),
        ("search", {"query": "x", "top_k": 500}, "bad_request"),
        ("search", {"query": "x", "colour": "red"}, "bad_request"),
        ("search", {"query": "x", "filters": {"book": {"$near": 1}}}, "bad_input"),
        ("search", "[1, 2]", "bad_request"),
        ("get_document", {"document_id": "nope"}, "not_found"),
        ("delete_everything", {}, "bad_input"),
    ],
)
def test_bad_calls_come_back_as_errors_for_the_model(toolbox, name, arguments, code):
    answer = toolbox.call(name, arguments)
    assert answer["ok"] is False and answer["error"]["code"] == code


def test_answer_turns_tool_calls_into_tool_messages(toolbox):
    calls = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "search", "arguments": '{"query": "gate"}'},
        },
        {
            "id": "c2",
            "type": "function",
            "function": {"name": "get_document", "arguments": '{"document_id": "key"}'},
        },
    ]
    messages = toolbox.answer(calls)
    assert [m["tool_call_id"] for m in messages] == ["c1", "c2"]
    assert all(m["role"] == "tool" for m in messages)
    assert json.loads(messages[1]["content"])["text"] == DOCS[0][1]


def test_tool_loop_is_capped(toolbox):
    offered = []

    def greedy_model(messages, tools):
        offered.append(tools is not None)
        if tools is None:
            return {"role": "assistant", "content": "Mira forged it [1]."}
        call = {"name": "search", "arguments": json.dumps({"query": "key"})}
        return {"role": "assistant", "tool_calls": [{"id": f"c{len(offered)}", "function": call}]}

    messages = [{"role": "user", "content": "Who forged the key?"}]
    final, rounds = run_tool_loop(greedy_model, messages, toolbox, max_rounds=2)
    assert final["content"] == "Mira forged it [1]." and rounds == 2
    assert offered == [True, True, False]  # the last call offers no tools
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


def test_tool_loop_stops_when_the_model_answers(toolbox):
    def model(messages, tools):
        if messages[-1]["role"] == "tool":
            found = json.loads(messages[-1]["content"])["results"][0]["document_id"]
            return {"role": "assistant", "content": f"see {found}"}
        call = {"name": "search", "arguments": '{"query": "drowned city"}'}
        return {"role": "assistant", "tool_calls": [{"id": "a", "function": call}]}

    final, rounds = run_tool_loop(model, [{"role": "user", "content": "?"}], toolbox)
    assert final["content"] == "see gate" and rounds == 1


def test_mcp_server_over_stdio(index_file):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "ragloom",
            "--index",
            str(index_file),
            "--embedder",
            "none",
            "mcp",
            "-c",
            "lore",
        ],
        env=mcp_env(),
    )

    async def session() -> None:
        async with Client(params) as client:
            tools = await client.list_tools()
            names = sorted(t.name for t in tools.tools)
            assert names == ["context", "get_document", "search"]
            schema = next(t for t in tools.tools if t.name == "search").input_schema
            assert {"query", "top_k", "collections", "filters"} <= set(schema["properties"])
            found = await client.call_tool(
                "search", {"query": "silver key", "filters": {"book": 2}}
            )
            assert not found.is_error
            assert [r["document_id"] for r in found.structured_content["results"]] == ["gate"]
            doc = await client.call_tool("get_document", {"document_id": "key"})
            assert doc.structured_content["text"] == DOCS[0][1]
            packed = await client.call_tool("context", {"query": "Mira", "collections": ["people"]})
            assert "scar" in packed.structured_content["text"]
            missing = await client.call_tool("get_document", {"document_id": "nope"})
            assert missing.is_error and "not_found" in missing.content[0].text

    anyio.run(session)


def test_mcp_schemas_carry_every_bound_and_refuse_what_they_do_not_allow(index_file):
    """The MCP tools' input schemas keep the bounds the tools enforce (top_k 1-50, budget
    >= 1, start/end >= 0, no other properties, every description), and a call they refuse
    answers ragloom's error code (bad_request, as over HTTP): a missing query, an unknown
    argument, top_k out of bounds (refused, not capped)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragloom", "--index", str(index_file), "--embedder", "none", "mcp"],
        env=mcp_env(),
    )
    calls = {
        "missing query": ("search", {"top_k": 2}),
        "unknown argument": ("search", {"query": "key", "k": 2}),
        "top_k too big": ("search", {"query": "key", "top_k": 10**9}),
        "top_k zero": ("context", {"query": "key", "top_k": 0}),
        "budget zero": ("context", {"query": "key", "budget": 0}),
        "negative start": ("get_document", {"document_id": "key", "start": -1}),
        "string top_k": ("search", {"query": "key", "top_k": "3"}),
        "query too long": ("search", {"query": "key " * 50_000}),
        "no collection": ("search", {"query": "key", "collections": []}),
        "long collection name": ("search", {"query": "key", "collections": ["c" * 201]}),
        "empty document id": ("get_document", {"document_id": ""}),
        "blank document id": ("get_document", {"document_id": " \t"}),
        "huge filter": ("search", {"query": "key", "filters": {"k": ["v" * 1000] * 120}}),
    }
    accepted = {
        "top_k 2.0": ("search", {"query": "silver key", "top_k": 2.0, "collections": ["lore"]}),
        "context": ("context", {"query": "Mira", "collections": ["people"]}),
        "document": ("get_document", {"document_id": "key", "collection": "lore", "end": 4.0}),
    }

    async def session() -> tuple[dict, dict]:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            listed = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            answers = {}
            for case, (tool, arguments) in calls.items():
                result = await client.call_tool(tool, arguments)
                answers[case] = (result.is_error, result.content[0].text)
            for case, (tool, arguments) in accepted.items():
                # the client checks the structured answer against the tool's output schema
                result = await client.call_tool(tool, arguments)
                answers[case] = (result.is_error, result.structured_content)
            outputs = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            return listed, answers, outputs

    listed, answers, outputs = anyio.run(session)
    search, context, get_document = listed["search"], listed["context"], listed["get_document"]
    assert {name: schema["type"] for name, schema in outputs.items()} == {
        "search": "object",
        "get_document": "object",
        "context": "object",
    }
    assert answers.pop("top_k 2.0")[1]["results"].__len__() == 2
    assert answers.pop("document")[1]["text"] == DOCS[0][1][:4]
    assert answers.pop("context")[1]["passages"]
    assert search["properties"]["query"]["maxLength"] == 10_000
    assert search["properties"]["collections"]["maxItems"] == 16
    assert search["properties"]["collections"]["items"]["maxLength"] == 200
    assert search["properties"]["filters"]["maxProperties"] == 100
    assert get_document["properties"]["document_id"]["maxLength"] == 1024
    assert get_document["properties"]["document_id"]["minLength"] == 1
    search, context, get_document = listed["search"], listed["context"], listed["get_document"]
    assert search["properties"]["top_k"] | {"description": ""} == {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "default": 5,
        "description": "",
    }
    assert context["properties"]["budget"]["minimum"] == 1
    assert get_document["properties"]["start"]["minimum"] == 0
    assert get_document["properties"]["end"]["minimum"] == 0
    for schema in listed.values():
        assert schema["additionalProperties"] is False
        assert all(p["description"] for p in schema["properties"].values()), schema
    assert search["required"] == ["query"]
    for case, (is_error, text) in answers.items():
        assert is_error, case
        assert text.startswith("bad_request: "), (case, text)
    assert "missing argument 'query'" in answers["missing query"][1]
    assert "unknown argument(s) k" in answers["unknown argument"][1]
    assert "top_k must be at most 50" in answers["top_k too big"][1]
    assert "query must have at most 10,000 characters" in answers["query too long"][1]
