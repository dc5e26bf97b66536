"""The chunking configuration: validated on construction and round-trippable through JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ragloom.errors import InputError

MODES = ("prose", "markdown", "code")
# Bumped when the same text and policy give different chunks (2: overlap at every boundary,
# a chunk for titled documents with no body; 3: a code line too long for one chunk is cut
# so that the next piece starts at a word, never at the space before it). Part of every
# content hash, so documents indexed by an older chunker are chunked anew when indexed again.
CHUNKER_VERSION = 3


def _check_int(name: str, value: Any) -> None:
    """Reject non-integers (including bools) so a config typo fails loudly."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(
            f"chunk policy: {name} must be an integer, got {value!r}",
            f"set {name} to a whole number of characters",
        )


@dataclass(frozen=True)
class ChunkPolicy:
    """How a document is cut into chunks; `to_dict()` fingerprints it for the index.

    max_chars bounds every chunk (0: the whole trimmed document is one chunk); overlap is
    how much consecutive pieces of a split paragraph may share; chunks shorter than
    min_chars are dropped as fragments, unless that would leave the document with no
    chunk at all (so a min_chars above max_chars never loses a document).

    Mode "code" cuts source along declarations (see `ragloom.chunking.code`); `language`
    names the parser (None: taken from the source's suffix, else line windows). There,
    overlap applies to line windows only and min_chars is not used.
    """

    mode: str = "prose"
    max_chars: int = 400
    overlap: int = 80
    min_chars: int = 20
    language: str | None = None

    def __post_init__(self) -> None:
        """Validate eagerly so a bad policy fails before any document is read."""
        if self.mode not in MODES:
            raise InputError(
                f"chunk policy: unknown mode {self.mode!r}",
                f"use one of: {', '.join(MODES)}",
            )
        for name in ("max_chars", "overlap", "min_chars"):
            _check_int(name, getattr(self, name))
        if self.max_chars < 0:
            raise InputError(
                f"chunk policy: max_chars must be >= 0, got {self.max_chars}",
                "use 0 to keep each document as a single chunk",
            )
        if self.overlap < 0:
            raise InputError(
                f"chunk policy: overlap must be >= 0, got {self.overlap}",
                "use 0 for no overlap",
            )
        if self.max_chars > 0 and self.overlap >= self.max_chars:
            raise InputError(
                f"chunk policy: overlap ({self.overlap}) must be smaller than "
                f"max_chars ({self.max_chars})",
                "lower the overlap or raise max_chars",
            )
        if self.min_chars < 0:
            raise InputError(
                f"chunk policy: min_chars must be >= 0, got {self.min_chars}",
                "use 0 to keep every fragment",
            )
        if self.language is not None and (
            not isinstance(self.language, str) or not self.language or self.mode != "code"
        ):
            raise InputError(
                f"chunk policy: language {self.language!r} needs mode 'code' and a name",
                "set mode='code' with a language such as 'python', or leave language unset",
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form, stable enough to fingerprint the chunking config.

        `language` appears only when set, so prose and Markdown fingerprints are unchanged.
        """
        d = asdict(self)
        if d["language"] is None:
            del d["language"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ChunkPolicy:
        """Rebuild a policy from `to_dict()` output; missing keys take their defaults."""
        if not isinstance(d, dict):
            raise InputError(
                f"chunk policy: expected a mapping, got {type(d).__name__}",
                "pass the dict produced by ChunkPolicy.to_dict()",
            )
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise InputError(
                f"chunk policy: unknown field(s) {', '.join(map(str, unknown))}",
                f"known fields are: {', '.join(sorted(known))}",
            )
        return cls(**d)
