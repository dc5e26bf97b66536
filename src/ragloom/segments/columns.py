"""Chunk metadata held as dictionary-encoded columns, and filters evaluated over them.

Each top-level metadata key becomes a column: its distinct values (decoded JSON) and one small
integer code per chunk (-1 where the chunk lacks the key). A filter leaf is evaluated once per
distinct value with the very predicate the library uses on a metadata dict, then broadcast
to every chunk through the codes: exact for every operator, and fast because the number of
distinct values of the keys people filter on (chapter, scholar, tags, versions) is small.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragloom.filters import AnyOf, FilterNode, Leaf, Not, lookup

_SCALARS = (str, int, float, bool, type(None))


def _canonical(value: Any) -> Any:
    """A hashable key telling distinct JSON values apart (1, 1.0, True and "1" differ)."""
    if isinstance(value, _SCALARS):
        return (type(value), value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _code_dtype(distinct: int) -> np.dtype:
    if distinct < 2**7:
        return np.dtype(np.int8)
    return np.dtype(np.int16) if distinct < 2**15 else np.dtype(np.int32)


@dataclass(frozen=True, eq=False)
class Column:
    """One metadata key: distinct values and a code per chunk (-1: key missing)."""

    values: tuple[Any, ...]
    codes: np.ndarray


@dataclass(frozen=True, eq=False)
class MetadataColumns:
    """The metadata of `n` chunks, column by column."""

    n: int
    columns: Mapping[str, Column]

    @classmethod
    def build(cls, metadatas: Sequence[Mapping[str, Any]]) -> MetadataColumns:
        """Encode a list of metadata dicts (one per chunk)."""
        n = len(metadatas)
        index: dict[str, dict[Any, int]] = {}
        values: dict[str, list[Any]] = {}
        codes: dict[str, list[int]] = {}  # a Python list per key: item stores stay cheap
        for row, metadata in enumerate(metadatas):
            for key, value in metadata.items():
                seen = index.get(key)
                if seen is None:
                    seen, values[key] = index.setdefault(key, {}), []
                    codes[key] = [-1] * n
                text = _canonical(value)
                code = seen.get(text)
                if code is None:
                    code = seen[text] = len(values[key])
                    values[key].append(value)
                codes[key][row] = code
        columns = {
            key: Column(tuple(values[key]), np.array(codes[key], _code_dtype(len(values[key]))))
            for key in index
        }
        return cls(n, columns)

    @classmethod
    def concat(cls, parts: Sequence[tuple[MetadataColumns, np.ndarray]]) -> MetadataColumns:
        """Join the kept rows (`keep`: row indexes, ascending) of several parts, in order."""
        keys: dict[str, None] = {}
        for part, _ in parts:
            keys.update(dict.fromkeys(part.columns))
        total = sum(len(keep) for _, keep in parts)
        columns = {}
        for key in keys:
            index: dict[Any, int] = {}
            values: list[Any] = []
            pieces = []
            for part, keep in parts:
                column = part.columns.get(key)
                if column is None:
                    pieces.append(np.full(len(keep), -1, np.int32))
                    continue
                mapping = np.empty(len(column.values) + 1, np.int32)
                mapping[-1] = -1  # code -1 indexes the last slot: missing stays missing
                for old, value in enumerate(column.values):
                    text = _canonical(value)
                    if text not in index:
                        index[text] = len(values)
                        values.append(value)
                    mapping[old] = index[text]
                pieces.append(mapping[column.codes[keep].astype(np.int64)])
            codes = np.concatenate(pieces) if pieces else np.zeros(0, np.int32)
            columns[key] = Column(tuple(values), codes.astype(_code_dtype(len(values))))
        return cls(total, columns)

    def row(self, i: int) -> dict[str, Any]:
        """The metadata dict of chunk `i` (keys in column order)."""
        out = {}
        for key, column in self.columns.items():
            code = int(column.codes[i])
            if code >= 0:
                out[key] = column.values[code]
        return out

    # -- files ------------------------------------------------------------------------
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Arrays (one code array per key) and a JSON-ready description of the values."""
        arrays, keys = {}, []
        for i, (key, column) in enumerate(self.columns.items()):
            arrays[f"meta.{i}"] = column.codes
            keys.append({"key": key, "values": list(column.values)})
        return arrays, {"n": self.n, "keys": keys}

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], info: Mapping[str, Any]
    ) -> MetadataColumns:
        columns = {
            entry["key"]: Column(tuple(entry["values"]), arrays[f"meta.{i}"])
            for i, entry in enumerate(info["keys"])
        }
        return cls(int(info["n"]), columns)

    # -- filters ----------------------------------------------------------------------
    def evaluate(self, node: FilterNode) -> np.ndarray:
        """Which chunks match the filter: a boolean array of length `n`."""
        if isinstance(node, Leaf):
            return self._leaf(node)
        if isinstance(node, Not):
            return ~self.evaluate(node.part)
        if isinstance(node, AnyOf):
            out = np.zeros(self.n, bool)
            for part in node.parts:
                out |= self.evaluate(part)
            return out
        out = np.ones(self.n, bool)
        for part in node.parts:
            out &= self.evaluate(part)
        return out

    def values_of(self, key: str) -> list[Any]:
        """The distinct values a filter on `key` (dots for nested fields) reads here."""
        out = []
        for name in self._relevant(key):
            for value in self.columns[name].values:
                found, inner = lookup({name: value}, key)
                if found:
                    out.append(inner)
        return out

    def _relevant(self, key: str) -> list[str]:
        """Columns a (possibly dotted) key can read: the key itself and its prefixes."""
        parts = key.split(".")
        names = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
        return [name for name in names if name in self.columns]

    def _leaf(self, leaf: Leaf) -> np.ndarray:
        names = self._relevant(leaf.key)
        if not names:
            return np.full(self.n, bool(leaf.test({})))
        if len(names) == 1:
            column = self.columns[names[0]]
            table = np.array(
                [bool(leaf.test({names[0]: v})) for v in column.values] + [bool(leaf.test({}))]
            )
            return table[column.codes.astype(np.int64)]  # -1 reads the "missing" slot
        stacked = np.stack([self.columns[name].codes.astype(np.int64) for name in names])
        combos, inverse = np.unique(stacked, axis=1, return_inverse=True)
        results = []
        for combo in combos.T.tolist():
            metadata = {
                name: self.columns[name].values[code]
                for name, code in zip(names, combo)
                if code >= 0
            }
            results.append(bool(leaf.test(metadata)))
        return np.array(results, bool)[inverse.reshape(-1)]
