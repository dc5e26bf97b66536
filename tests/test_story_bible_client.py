"""The story-bible app's Swift client, replayed against the real sidecar over loopback.

The writing assistant talks to `ragloom serve` through a small Swift client. It sends
`POST /index {"path"}` for each lore file at launch and `POST /query {"query", "top_k"}` per
story request, and it decodes the answers with `JSONDecoder` into these types:

    struct IndexReply: Decodable { let ok: Bool; let file: String?; let chunks: Int
                                   let error: String? }
    struct QueryReply: Decodable { let ok: Bool; let results: [Hit]; let context: String }
    struct Hit: Decodable { let rank: Int; let score: Double; let chunk: String
                            let source: String? }
    struct Failure: Decodable { let ok: Bool; let error: String? }

It expects 200 (decoded as the reply), 400 or 404 (decoded as `Failure`, whose `error` it
shows to the writer); any other status is a bug to it. `decode` below follows JSONDecoder's
rules: a missing non-optional key or a null in one throws, so does a value of another type
(an object where a String is expected, 2.5 for an Int, 1 for a Bool); unknown keys are
ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server_launch import ServerProcess


class DecodingError(AssertionError):
    """What Swift's JSONDecoder would throw (keyNotFound, valueNotFound, typeMismatch)."""


class Optional_:
    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped


class Array:
    def __init__(self, element: Any) -> None:
        self.element = element


def decode(value: Any, kind: Any, path: str = "$") -> Any:
    """Decode a JSON value as a Swift `Decodable` type described by `kind`."""
    if isinstance(kind, Optional_):
        return None if value is None else decode(value, kind.wrapped, path)
    if value is None:
        raise DecodingError(f"valueNotFound at {path}: expected {kind}, found null")
    if isinstance(kind, dict):  # a struct: every non-optional key must be there
        if not isinstance(value, dict):
            raise DecodingError(f"typeMismatch at {path}: expected an object")
        out = {}
        for key, member in kind.items():
            if key not in value and not isinstance(member, Optional_):
                raise DecodingError(f"keyNotFound {key!r} at {path}")
            out[key] = decode(value.get(key), member, f"{path}.{key}")
        return out
    if isinstance(kind, Array):
        if not isinstance(value, list):
            raise DecodingError(f"typeMismatch at {path}: expected an array")
        return [decode(v, kind.element, f"{path}[{i}]") for i, v in enumerate(value)]
    if kind is bool and isinstance(value, bool):
        return value
    if kind is int and not isinstance(value, bool) and isinstance(value, (int, float)):
        if float(value).is_integer():
            return int(value)
        raise DecodingError(f"dataCorrupted at {path}: {value} is not an Int")
    if kind is float and not isinstance(value, bool) and isinstance(value, (int, float)):
        return float(value)
    if kind is str and isinstance(value, str):
        return value
    raise DecodingError(f"typeMismatch at {path}: expected {kind.__name__}, found {value!r}")


INDEX_REPLY = {"ok": bool, "file": Optional_(str), "chunks": int, "error": Optional_(str)}
HIT = {"rank": int, "score": float, "chunk": str, "source": Optional_(str)}
QUERY_REPLY = {"ok": bool, "results": Array(HIT), "context": str}
FAILURE = {"ok": bool, "error": Optional_(str)}


class SidecarRejected(Exception):
    """400 or 404: the client shows `error` to the writer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class StoryBibleClient:
    """What the Swift client does, request for request and decode for decode."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def _send(self, path: str, body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(path, json=body, headers={"Accept": "application/json"})
        payload = response.json()
        if response.status_code == 200:
            return decode(payload, reply)
        if response.status_code in (400, 404):
            failure = decode(payload, FAILURE)
            assert failure["ok"] is False
            raise SidecarRejected(response.status_code, failure["error"] or "unknown error")
        raise AssertionError(f"unexpected status {response.status_code}: {response.text}")

    def index(self, path: Path) -> str:
        """Index one lore file; returns the line the app shows."""
        reply = self._send("/index", {"path": str(path)}, INDEX_REPLY)
        assert reply["ok"] and reply["error"] is None
        return f"indexed into {reply['chunks']} passages"

    def passages(self, text: str, top_k: int = 3) -> dict[str, Any]:
        return self._send("/query", {"query": text, "top_k": top_k}, QUERY_REPLY)


LORE = {
    "characters.txt": "Mira Vale keeps the lighthouse of Greyhaven.\n\n"
    "She forged the silver key from her grandmother's ring.\n\n"
    "Oren Tash smuggles salt and secrets along the northern coast.",
    "world.txt": "Greyhaven is a harbour city on black basalt cliffs.\n\n"
    "Its bells ring at every tide, except the drowned bell.",
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StoryBibleClient, Path]]:
    base = tmp_path_factory.mktemp("bible")
    lore = base / "lore"
    lore.mkdir()
    for name, text in LORE.items():
        (lore / name).write_text(text, encoding="utf-8")
    (lore / "broken.txt").write_bytes(b"The bell \xff\xfe rang.")
    with (
        ServerProcess(base / "index.db", roots=[lore]) as server,
        httpx.Client(base_url=server.url, timeout=60) as http,
    ):
        yield StoryBibleClient(http), lore


def test_launch_indexes_every_file_and_relaunch_reports_the_same_passages(client) -> None:
    app, lore = client
    first = {name: app.index(lore / name) for name in LORE}
    assert all(line != "indexed into 0 passages" for line in first.values())
    # Every launch indexes the files again; unchanged files keep their passage count.
    assert {name: app.index(lore / name) for name in LORE} == first


def test_story_request_decodes_its_passages(client) -> None:
    app, lore = client
    for name in LORE:
        app.index(lore / name)
    reply = app.passages("Who forged the silver key?")
    assert reply["ok"] and 1 <= len(reply["results"]) <= 3
    top = reply["results"][0]
    assert top["rank"] == 1 and "silver key" in top["chunk"]
    assert top["chunk"] in reply["context"]


def test_blank_story_request_gives_no_passages(client) -> None:
    app, _ = client
    assert app.passages("   ")["results"] == []


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({}, "path"),  # the file picker returned nothing
        ({"path": 42}, "path"),
        ({"path": None}, "path"),
    ],
)
def test_bad_index_requests_are_400_with_a_readable_message(client, body, names) -> None:
    app, _ = client
    with pytest.raises(SidecarRejected) as rejected:
        app._send("/index", body, INDEX_REPLY)
    assert rejected.value.status == 400
    message = rejected.value.message
    assert names in message and "function-after" not in message and "body." not in message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "bell", "top_k": 0}, "top_k"),
        ({"query": "bell", "top_k": "3"}, "top_k"),
        ({"top_k": 3}, "query"),
    ],
)
def test_bad_story_requests_are_400_naming_the_field(client, body, field) -> None:
    app, _ = client
    with pytest.raises(SidecarRejected) as rejected:
        app._send("/query", body, QUERY_REPLY)
    assert rejected.value.status == 400 and f"'{field}'" in rejected.value.message


def test_missing_file_is_404_with_a_message(client) -> None:
    app, lore = client
    with pytest.raises(SidecarRejected) as rejected:
        app.index(lore / "deleted-chapter.txt")
    assert rejected.value.status == 404 and "deleted-chapter.txt" in rejected.value.message


def test_undecodable_file_is_400_with_a_message(client) -> None:
    app, lore = client
    with pytest.raises(SidecarRejected) as rejected:
        app.index(lore / "broken.txt")
    assert rejected.value.status == 400 and "invalid UTF-8" in rejected.value.message
