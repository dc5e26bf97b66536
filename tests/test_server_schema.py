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


@schemathesis.check
def positive_data_accepted_unless_the_mini_language_says_no(ctx, response, case):
    """positive_data_acceptance, except for the filter/boost language: JSON Schema cannot say
    which operators exist (`{"a": {"$typo": 1}}` is a valid object), so the library checks it
    and answers 400 `bad_input` with what is wrong. Any other rejection still fails."""
    if response.status_code == 400 and response.json().get("code") == "bad_input":
        return None
    return positive_data_acceptance(ctx, response, case)


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
def test_openapi_contract(case: schemathesis.Case, live_url: str) -> None:
    case.call_and_validate(
        base_url=live_url,
        excluded_checks=[positive_data_acceptance],
        additional_checks=[positive_data_accepted_unless_the_mini_language_says_no],
    )
