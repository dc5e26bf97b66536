"""A folder of notes changed the way editors and people change one (shared by the watcher's
tests and bench/watch.py): in-place edits, appends, atomic saves (a temp file renamed over),
renames, moves into subfolders, deletes, new notes, and editors' swap and backup files.

Every version of a note carries a word of its own (`mark`), so the index can be checked
against the folder: each live note's current word finds that note, and no word of an older
version, of a deleted note or of a scratch file finds anything.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path

CONSONANTS = "bcdfghjklmnpqrstvwxz"
FILLER = ["amber", "brook", "cinder", "dune", "ember", "fjord", "grove", "heath", "inlet"]


@dataclass
class Change:
    """One operation: what was done, to which note (relative path), and the word that must
    now be searchable there (None: something must stop being found)."""

    kind: str
    path: str
    mark: str | None


@dataclass
class FolderChurn:
    folder: Path
    notes: int = 50
    seed: int = 0
    live: dict[str, list[str]] = field(default_factory=dict)  # note -> the words it holds
    stale: set[str] = field(default_factory=set)  # words that must no longer be found
    scratch: set[str] = field(default_factory=set)  # words only scratch files ever held

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._made: set[str] = set()
        self._serial = 0

    def mark(self) -> str:
        while True:
            word = "".join(self.rng.choice(CONSONANTS) for _ in range(9)) + "x"
            if word not in self._made:
                self._made.add(word)
                return word

    def _text(self, word: str) -> str:
        filler = " ".join(self.rng.choice(FILLER) for _ in range(self.rng.randint(20, 60)))
        return f"# Note {word}\n\n{word} {filler}.\n"

    def _new_name(self) -> str:
        self._serial += 1
        folder = self.rng.choice(["", "", "", "journal/", "lore/"])
        return f"{folder}note{self._serial:04d}.md"

    def _write(self, rel: str, text: str) -> None:
        path = self.folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)

    def setup(self) -> None:
        """The starting folder: `notes` notes."""
        for _ in range(self.notes):
            rel, word = self._new_name(), self.mark()
            self._write(rel, self._text(word))
            self.live[rel] = [word]

    def step(self) -> Change:
        """Make one change (the kinds weighted as a working writer's day)."""
        kinds = ["edit", "append", "atomic", "rename", "delete", "create", "swap"]
        kind = self.rng.choices(kinds, weights=[5, 3, 4, 2, 1, 2, 2])[0]
        if kind in ("rename", "delete") and len(self.live) < self.notes // 2:
            kind = "create"
        word = self.mark()
        if kind == "create":
            rel = self._new_name()
            self._write(rel, self._text(word))
            self.live[rel] = [word]
            return Change(kind, rel, word)
        rel = self.rng.choice(sorted(self.live))
        path = self.folder / rel
        if kind == "delete":
            path.unlink()
            self.stale.update(self.live.pop(rel))
            return Change(kind, rel, None)
        if kind == "rename":
            new = self._new_name()
            (self.folder / new).parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, self.folder / new)
            self.live[new] = self.live.pop(rel)  # the same text, found at the new path
            return Change(kind, new, self.live[new][-1])
        if kind == "swap":  # an editor's swap or backup file beside the note
            name = self.rng.choice([f".{path.name}.swp", f"{path.name}~", f"#{path.name}#"])
            (path.parent / name).write_text(self._text(word))
            self.scratch.add(word)
            if self.rng.random() < 0.5:
                (path.parent / name).unlink()
            return Change(kind, rel, None)
        if kind == "append":
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"\n{word} added later.\n")
            self.live[rel].append(word)
            return Change(kind, rel, word)
        if kind == "atomic":
            temp = path.parent / f".{path.name}.tmp{self.rng.randint(0, 9999)}"
            temp.write_text(self._text(word))
            os.replace(temp, path)
        else:
            self._write(rel, self._text(word))
        self.stale.update(self.live[rel])
        self.live[rel] = [word]
        return Change(kind, rel, word)

    def differences(self, index) -> list[str]:
        """How the index differs from the folder (empty: it equals the folder)."""
        problems = []
        stored = {d.doc_id for d in index.documents(limit=100_000)}
        if stored != set(self.live):
            problems.append(
                f"documents: extra {sorted(stored - set(self.live))[:5]},"
                f" missing {sorted(set(self.live) - stored)[:5]}"
            )
        for rel, words in sorted(self.live.items()):
            for word in words:
                hits = index.search(word, top_k=5, mode="lexical")
                where = sorted({h.document_id for h in hits})  # overlapping chunks: once
                if where != [rel]:
                    problems.append(f"{word} of {rel} found in {where}")
        for word in sorted(self.stale | self.scratch):
            hits = index.search(word, top_k=5, mode="lexical")
            if hits:
                problems.append(f"old or scratch word {word} found in {hits[0].document_id}")
        return problems
