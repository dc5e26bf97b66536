"""Shared by the stress and crash tests: deterministic documents and a churning writer.

Run as a script, it is another process writing to the same index:
`python -m tests.churn writer INDEX SECONDS SEED` replaces and deletes documents until time is
up; `python -m tests.churn ingest INDEX SEED` adds the crash test's corpus batch by batch;
`python -m tests.churn reader INDEX SECONDS` searches and prints its counts as JSON;
`python -m tests.churn adder INDEX SECONDS SEED` adds documents of its own (see `add_for`).
"""

from __future__ import annotations

import contextlib
import json
import random
import sys
import time

from ragloom import Document, Index
from ragloom.errors import NotFound

STEADY = 40  # documents that always exist (replaced, never deleted)
WORDS = ["amber", "brook", "cinder", "dune", "ember", "fjord", "grove", "heath", "inlet"]


def steady_doc(i: int, version: int) -> Document:
    """Three chunks (scenes: breaks are hard chunk boundaries), each naming the document
    (`keepI`) and its version (`verN`)."""
    rng = random.Random(i * 1_000_003 + version)
    paragraphs = [
        f"keep{i} ver{version} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
        for _ in range(3)
    ]
    return Document(f"steady-{i}", "\n\n***\n\n".join(paragraphs), metadata={"version": version})


def churn_doc(rng: random.Random) -> Document:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
    return Document(f"churn-{rng.randint(0, 200)}", f"churn {words}")


def corpus(seed: int, batches: int = 160, size: int = 25) -> list[list[Document]]:
    """The crash test's documents, in the batches the ingesting process commits."""
    rng = random.Random(seed)
    out = []
    for b in range(batches):
        batch = []
        for j in range(size):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 120)))
            batch.append(Document(f"doc-{b}-{j}", f"{words}\n\n{words[::-1]}"))
        out.append(batch)
    return out


def write_for(index: Index, seconds: float, seed: int) -> int:
    """Replace steady documents and churn others until time is up; returns writes done."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    done = 0
    while time.monotonic() < deadline:
        i = rng.randrange(STEADY)
        index.add([steady_doc(i, rng.randint(1, 10**9)), churn_doc(rng)])
        if rng.random() < 0.3:
            doc_id = f"churn-{rng.randint(0, 200)}"
            with contextlib.suppress(NotFound):  # not stored at the moment
                index.delete(doc_id)
        done += 1
    return done


def check_hits(hits, i: int) -> str | None:
    """None when the hits show steady document i whole, in one version; else the problem."""
    mine = [h for h in hits if h.document_id == f"steady-{i}"]
    if not mine:
        return "miss"
    versions = {h.metadata.get("version") for h in mine}
    tags = {word for h in mine for word in h.text.split() if word.startswith("ver")}
    if len(versions) != 1 or len(tags) != 1 or f"ver{versions.pop()}" not in tags:
        return "mixed"
    if len(mine) != 3:
        return "partial"
    return None


def read_for(index: Index, seconds: float, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    counts = {"searches": 0, "miss": 0, "mixed": 0, "partial": 0, "errors": 0}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        i = rng.randrange(STEADY)
        try:
            hits = index.search(f"keep{i}", top_k=10, mode="lexical")
        except Exception:
            counts["errors"] += 1
            continue
        counts["searches"] += 1
        problem = check_hits(hits, i)
        if problem:
            counts[problem] += 1
    return counts


def small_segments(index: Index, flush_rows: int, factor: int | None = None) -> None:
    """Make the embedded store flush and merge often (other stores have no segments)."""
    maintenance = getattr(index.store, "maintenance", None)
    if maintenance is not None:
        maintenance.flush_rows = flush_rows
        if factor is not None:
            maintenance.factor = factor


def add_for(index: Index, seconds: float, seed: int) -> int:
    """Add documents of this writer's own (`w{seed}-{n}`) and replace steady ones, until time
    is up; returns how many it added (the test then finds every one: no lost updates)."""
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    added = 0
    while time.monotonic() < deadline:
        i = rng.randrange(STEADY)
        mine = Document(f"w{seed}-{added}", f"writer{seed} entry{added} " + churn_doc(rng).text)
        index.add([steady_doc(i, rng.randint(1, 10**9)), mine])
        added += 1
    return added


def main() -> None:
    role, path = sys.argv[1], sys.argv[2]
    if role == "writer":
        with Index(path, embedder=None) as index:
            small_segments(index, 60)
            print(json.dumps({"writes": write_for(index, float(sys.argv[3]), int(sys.argv[4]))}))
    elif role == "adder":
        with Index(path, embedder=None) as index:
            print(json.dumps({"added": add_for(index, float(sys.argv[3]), int(sys.argv[4]))}))
    elif role == "reader":
        with Index(path, embedder=None) as index:
            print(json.dumps(read_for(index, float(sys.argv[3]), int(sys.argv[4]))))
    elif role == "ingest":
        with Index(path, embedder=None) as index:
            small_segments(index, 40, 3)
            for batch in corpus(int(sys.argv[3])):
                index.add(batch)
                print("committed", batch[-1].id, flush=True)


if __name__ == "__main__":
    main()
