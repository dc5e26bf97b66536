"""A path swapped between a file and a link while `/index` resolves it exists all along:
it is never "not found" (404 from "[Errno 22] Invalid argument"), but resolves, or is
409 `file_changed` when it keeps changing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from ragloom.errors import FileChanged, PathNotFound
from ragloom.server.paths import confine
from tests.server_launch import ServerProcess

FLIPPER = Path(__file__).with_name("flipper.py")


def flipping(base: Path) -> tuple[Path, Path, subprocess.Popen]:
    """root/d/flip.txt flips between a file and a link to root/d/in.txt (both allowed)."""
    root = base / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "flip.txt").write_text("inside words\n")
    (root / "d" / "in.txt").write_text("inside words\n")
    target = root / "d" / "flip.txt"
    args = [sys.executable, str(FLIPPER), "file", str(target), str(root / "d" / "in.txt")]
    return root, target, subprocess.Popen(args)


def test_resolving_a_swapping_path_never_says_not_found(tmp_path: Path) -> None:
    root, target, flipper = flipping(tmp_path)
    roots = [Path(os.path.realpath(root))]
    outcomes = {"resolved": 0, "file_changed": 0}
    try:
        for _ in range(30_000):  # today's code: about 1 in 2,000 was PathNotFound (EINVAL)
            try:
                confine(str(target), roots)
                outcomes["resolved"] += 1
            except FileChanged:
                outcomes["file_changed"] += 1
            except PathNotFound as exc:
                raise AssertionError(f"an existing path was 'not found': {exc}") from None
    finally:
        flipper.kill()
        flipper.wait()
    assert outcomes["resolved"] > 0, outcomes


def test_index_of_a_swapping_path_is_200_or_409_never_404(tmp_path: Path) -> None:
    root, target, flipper = flipping(tmp_path)
    statuses: dict[int, int] = {}
    try:
        env = {"RAGLOOM_EMBEDDER": "none"}
        with (
            ServerProcess(tmp_path / "i.db", roots=[root], env=env) as server,
            httpx.Client(base_url=server.url, timeout=60) as http,
        ):
            for _ in range(300):
                response = http.post("/index", json={"path": str(target)})
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                assert response.status_code in (200, 409), response.text
                if response.status_code == 409:
                    assert response.json()["code"] == "file_changed"
    finally:
        flipper.kill()
        flipper.wait()
    assert statuses.get(200), statuses
