"""Schemathesis fuzzes the live server from its OpenAPI schema: no 5xx, answers conform.

The schema is built in-process at import (schemathesis' lazy fixture loader does not work with
pytest 9) and checked equal to the one the subprocess serves; every case goes over HTTP.
"""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from ragloom.server.app import create_app
from ragloom.server.settings import ServerSettings
from tests.server_launch import ServerProcess

EXAMPLES = 100  # per operation and generation mode (positive and negative)

OPENAPI = create_app(ServerSettings.build("unused.db")).openapi()
schema = schemathesis.openapi.from_dict(OPENAPI)


@pytest.fixture(scope="module")
def live_url(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("fuzz")
    notes = base / "root" / "notes"
    notes.mkdir(parents=True)
    (notes / "a.md").write_text("# A\n\nSome lore about the fuzzing dragon.\n")
    env = {"RAGLOOM_EMBEDDER": "none"}
    with ServerProcess(base / "index.db", roots=[base / "root"], max_body=200_000, env=env) as srv:
        assert httpx.get(f"{srv.url}/openapi.json").json() == OPENAPI
        httpx.post(f"{srv.url}/index", json={"path": str(notes)}, timeout=30)
        yield srv.url
        assert "Traceback" not in srv.output(), srv.output()[-3000:]


def _stated_in_words(case, error: str) -> bool:
    """The two refusals the schema states in words because JSON Schema cannot: the filter
    language (which operators exist: `{"a": {"$typo": 1}}` is a valid object) and an overlap
    not below max_chars (a rule between two fields)."""
    if "filter" in error or error.startswith("$"):
        return True
    chunking = (case.body or {}).get("chunking") if isinstance(case.body, dict) else None
    if case.path == "/index" and isinstance(chunking, dict):
        max_chars, overlap = chunking.get("max_chars", 400), chunking.get("overlap", 80)
        return max_chars > 0 and overlap >= max_chars and "overlap" in error
    return False


@schemathesis.check
def positive_data_accepted_unless_the_schema_says_no(ctx, response, case):
    """positive_data_acceptance, except for what the schema says in words (400 `bad_input`
    naming what is wrong). Any other rejection still fails: a step the server has no
    service for (hops, expand llm, rerank) is not in its schema at all."""
    if response.status_code == 400:
        body = response.json()
        if body.get("code") == "bad_input" and _stated_in_words(case, body.get("error", "")):
            return None
    return positive_data_acceptance(ctx, response, case)


def test_the_schema_leaves_out_steps_without_their_service():
    """No LLM and no reranker here: hops only 1, expand only prf, rerank only false."""
    request = OPENAPI["components"]["schemas"]["QueryRequest"]["properties"]
    assert request["hops"]["maximum"] == 1
    assert request["expand"]["anyOf"][0]["enum"] == ["prf"]
    assert request["rerank"]["enum"] == [False]
    served = create_app(ServerSettings.build("unused.db", llm="openai:m@http://127.0.0.1:9"))
    full = served.openapi()["components"]["schemas"]["QueryRequest"]["properties"]
    assert full["hops"]["maximum"] == 5 and "llm" in full["expand"]["anyOf"][0]["enum"]


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
def test_openapi_contract(case: schemathesis.Case, live_url: str) -> None:
    case.call_and_validate(
        base_url=live_url,
        excluded_checks=[positive_data_acceptance],
        additional_checks=[positive_data_accepted_unless_the_schema_says_no],
    )
