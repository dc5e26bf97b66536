"""Every import points down the layers, and no module or function outgrows its limit.

The layers are derived from the package itself (`tests/layers.py`): a room (a subpackage or
a top-level module) sits one floor above the highest room it imports, which is well defined
only while no two rooms import each other, directly or around a circle. So a new import that
points up (into a room that imports, however indirectly, the importing one) makes a circle,
and this test fails naming it. `python tests/layers.py` prints the floors.
"""

from __future__ import annotations

import pytest

from tests.layers import Graph, circles, floors, lazy_upward, read_graph, report
from tests.sizes import (
    EXEMPT,
    EXEMPT_FUNCTIONS,
    FUNCTION_LIMIT,
    MODULE_LIMIT,
    function_sizes,
    module_sizes,
)


def test_no_import_points_up_and_no_module_circle(capsys: pytest.CaptureFixture[str]) -> None:
    found = report()
    print("\n".join(found.lines()))
    assert found.room_circles == [], "\n".join(found.lines())
    assert found.module_circles == [], "\n".join(found.lines())


def test_every_import_goes_to_a_lower_floor() -> None:
    graph = read_graph()
    rooms = graph.room_imports()
    floor_of = floors({room: set(targets) for room, targets in rooms.items()})
    upward = [
        f"{module} -> {target} (line {line}): floor {floor_of[room]} -> {floor_of[up]}"
        for room, targets in rooms.items()
        for up, items in targets.items()
        if floor_of[up] >= floor_of[room]
        for module, target, line in items
    ]
    assert upward == []


def test_the_layer_check_sees_an_upward_import() -> None:
    """The check itself: an import from a low room into one above it is a circle."""
    graph = read_graph()
    rooms = {room: set(targets) for room, targets in graph.room_imports().items()}
    assert circles(rooms) == []
    low, high = "errors", "index"  # the index imports errors (through the engine)
    assert floors(rooms)[high] > floors(rooms)[low]
    rooms[low] = {*rooms.get(low, set()), high}
    assert circles(rooms) and any(low in c and high in c for c in circles(rooms))


def test_lazy_and_named_imports_count(tmp_path) -> None:
    """An import inside a function, under TYPE_CHECKING or by name in a string is an edge."""
    package = tmp_path / "ragloom"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "high.py").write_text("import ragloom.low\n")
    (package / "low" / "a.py").write_text("def f():\n    from ragloom import high\n")
    (package / "low" / "b.py").write_text("TABLE = {'x': 'ragloom.high:thing'}\n")
    (package / "low" / "c.py").write_text("LOG = 'ragloom.high'  # a logger name, not an import\n")
    graph: Graph = read_graph(tmp_path)
    assert set(graph.imports["ragloom.low.a"]) == {"ragloom.high"}
    assert set(graph.imports["ragloom.low.b"]) == {"ragloom.high"}
    assert graph.imports["ragloom.low.c"] == {}
    assert report(tmp_path).room_circles == [["high", "low"]]


def test_no_lazy_import_points_up() -> None:
    """A lazy import puts off an import's cost; it never hides a dependency that runs the
    other way (a room that stands above another only because of a lazy import into it)."""
    assert lazy_upward(read_graph()) == []


def test_the_lazy_check_sees_a_lazy_import_that_points_up(tmp_path) -> None:
    """`low` imports `base` at its top and `high` inside a function; `high` imports `base`
    too: only the lazy import puts `low` above `high`, so it points up. The same lazy
    import from a room that stands above `high` anyway (`top`) is a deferred cost."""
    package = tmp_path / "ragloom"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text("X = 1\n")
    (package / "high.py").write_text("import ragloom.base\n")
    (package / "low.py").write_text("import ragloom.base\n\ndef f():\n    import ragloom.high\n")
    (package / "top.py").write_text(
        "import ragloom.low\n\ndef g():\n    from ragloom import high\n"
    )
    graph = read_graph(tmp_path)
    assert set(graph.lazy["ragloom.low"]) == {"ragloom.high"}
    assert report(tmp_path).room_circles == []  # no circle: the other checks pass
    found = lazy_upward(graph)
    assert found == ["ragloom.low -> ragloom.high (line 4): floor 2 -> 2"]


def test_no_module_over_its_limit() -> None:
    over = {name: n for name, n in module_sizes().items() if n > MODULE_LIMIT}
    assert set(over) <= EXEMPT, over


def test_no_function_over_its_limit() -> None:
    over = {
        name: n
        for name, n in function_sizes().items()
        if n > FUNCTION_LIMIT and name.split(":")[0] not in EXEMPT and name not in EXEMPT_FUNCTIONS
    }
    assert over == {}, over
