"""Synthetic corpora for bench/scale.py: Zipf text of realistic lengths, clustered vectors.

Text: words drawn from a Zipf distribution over a pronounceable vocabulary, 20-89 words a
chunk (the lengths the scale issues measured; SciFact's abstracts are split into chunks of
this size). Vectors: unit vectors with a realistic neighbour structure, generated from a
low-dimensional latent space (topics and subtopics, 24 dimensions) mapped into 384 dimensions
plus noise and a direction every vector shares; real sentence embeddings have a low
intrinsic dimension, which is what makes graph indexes work (uniform random vectors are the
worst case and say nothing). The noise and the shared direction are calibrated on real
vectors (`python bench/ann_libraries.py --real ...`): at 6,581 vectors a vector's nearest
neighbours sit at cosine 0.68 (1st) and 0.57 (10th), median cosine 0.08, where the
all-MiniLM-L6-v2 passages of SciFact and Cranfield give 0.68, 0.54 and 0.09.
Everything is a pure function of the chunk number and the seed, so any chunk can be rebuilt.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragloom.embedding.base import Embedder, normalize_rows

DIMENSION = 384
LATENT = 24
TOPICS = 400
SUBTOPICS = 8
LATENT_NOISE = 0.75  # per latent dimension (topic centres are N(0, 1))
AMBIENT_NOISE = 0.13  # per output dimension
SHARED = 2.0  # length of the direction every vector shares, before normalizing
GENERATOR = 2  # in the vector cache's file name: bump when the vectors change
VOCABULARY = 150_000
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"] + ["an", "el", "or", "is"]


def vocabulary(size: int = VOCABULARY, seed: int = 0) -> list[str]:
    """`size` distinct pronounceable words, most frequent first."""
    rng = np.random.default_rng(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(2, 5))
        words["".join(SYLLABLES[i] for i in rng.integers(0, len(SYLLABLES), n))] = None
    return list(words)


@dataclass(eq=False)
class Corpus:
    """Chunk texts and vectors by number; `filter_key` gives 1% and 0.1% selective groups."""

    seed: int = 0

    def __post_init__(self) -> None:
        self.words = np.array(vocabulary(seed=self.seed), dtype=object)
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        weights = ranks**-1.07
        self.cdf = np.cumsum(weights / weights.sum())
        rng = np.random.default_rng(self.seed + 1)
        self.topics = rng.standard_normal((TOPICS, LATENT))
        self.subtopics = rng.standard_normal((TOPICS, SUBTOPICS, LATENT)) * 0.45
        q, _ = np.linalg.qr(rng.standard_normal((DIMENSION, LATENT)))
        self.lift = q.T.astype(np.float32)  # latent -> 384 dims, orthonormal rows
        shared = np.random.default_rng(self.seed + 2).standard_normal(DIMENSION)
        self.shared = (shared / np.linalg.norm(shared) * SHARED).astype(np.float32)

    BLOCK = 4096  # chunks generated together (each block has its own random stream)

    def texts(self, start: int, count: int) -> list[str]:
        """Texts of chunks start..start+count-1, each led by its number (`n123 ...`)."""
        out: list[str] = []
        for block in range(start // self.BLOCK, (start + count - 1) // self.BLOCK + 1):
            texts = self._block_texts(block)
            base = block * self.BLOCK
            lo, hi = max(start, base) - base, min(start + count, base + self.BLOCK) - base
            out.extend(texts[lo:hi])
        return out

    @lru_cache(maxsize=8)  # noqa: B019 (one corpus per run)
    def _block_texts(self, block: int) -> list[str]:
        rng = np.random.default_rng((self.seed, block, 1))
        lengths = rng.integers(20, 90, self.BLOCK)
        picks = np.searchsorted(self.cdf, rng.random(int(lengths.sum())))
        words = self.words[np.minimum(picks, len(self.words) - 1)].tolist()
        bounds = np.concatenate(([0], np.cumsum(lengths))).tolist()
        base = block * self.BLOCK
        return [
            f"n{base + i} " + " ".join(words[bounds[i] : bounds[i + 1]]) for i in range(self.BLOCK)
        ]

    def vector_block(self, block: int) -> np.ndarray:
        """Unit vectors of one block of chunks: topic + subtopic + noise, lifted to 384-d,
        plus noise and the shared direction."""
        rng = np.random.default_rng((self.seed, block, 2))
        topic = rng.integers(TOPICS, size=self.BLOCK)
        sub = rng.integers(SUBTOPICS, size=self.BLOCK)
        z = self.topics[topic] + self.subtopics[topic, sub]
        z += rng.standard_normal((self.BLOCK, LATENT)) * LATENT_NOISE
        lifted = z.astype(np.float32) @ self.lift
        lifted += rng.standard_normal((self.BLOCK, DIMENSION), dtype=np.float32) * AMBIENT_NOISE
        return normalize_rows(lifted + self.shared)

    def fresh_vector(self, key: int) -> np.ndarray:
        """One vector drawn like a chunk's (`vector_block`'s recipe) from its own stream: a
        query or a piece of a chunk, without generating a whole block for it."""
        rng = np.random.default_rng((self.seed, key % 2**63, 3))
        topic = int(rng.integers(TOPICS))
        z = self.topics[topic] + self.subtopics[topic, int(rng.integers(SUBTOPICS))]
        z = z + rng.standard_normal(LATENT) * LATENT_NOISE
        lifted = z.astype(np.float32) @ self.lift
        lifted += rng.standard_normal(DIMENSION, dtype=np.float32) * AMBIENT_NOISE
        return normalize_rows((lifted + self.shared)[None, :])[0]

    def vectors(self, numbers: Sequence[int]) -> np.ndarray:
        numbers = np.asarray(numbers, np.int64)
        out = np.zeros((len(numbers), DIMENSION), np.float32)
        blocks = numbers // self.BLOCK
        for block in np.unique(blocks).tolist():
            where = np.flatnonzero(blocks == block)
            out[where] = self.vector_block(block)[numbers[where] - block * self.BLOCK]
        return out

    def vector_table(self, count: int, folder: Path) -> np.ndarray:
        """Vectors of chunks 0..count-1, computed once and kept in `folder` (memory-mapped)."""
        blocks = (count + self.BLOCK - 1) // self.BLOCK
        path = folder / f"scale-vectors-g{GENERATOR}-{self.seed}-{blocks * self.BLOCK}.f32"
        shape = (blocks * self.BLOCK, DIMENSION)
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            table = np.lib.format.open_memmap(tmp, "w+", np.float32, shape)
            for block in range(blocks):
                table[block * self.BLOCK : (block + 1) * self.BLOCK] = self.vector_block(block)
            table.flush()
            del table
            tmp.rename(path)
        return np.load(path, mmap_mode="r")

    @staticmethod
    def metadata(n: int) -> dict[str, int]:
        """`group`: 100 groups (a 1% filter); `shard`: 1000 (a 0.1% filter)."""
        return {"group": n % 100, "shard": (n * 7919) % 1000}


def number_of(text: str) -> int | None:
    """The chunk number a bench text encodes in its first word (`n123 ...`), if any."""
    head = text.split(" ", 1)[0]
    return int(head[1:]) if head.startswith("n") and head[1:].isdigit() else None


class BenchEmbedder(Embedder):
    """A trivial embedder for the scale bench: a chunk's vector comes from its number (the
    first word of its text, `n<number>`), so ingest measures ragloom, not a model."""

    name = "bench-clustered-384"
    dimension = DIMENSION
    batch_size = 4096

    def __init__(
        self,
        corpus: Corpus,
        real: dict[str, np.ndarray] | None = None,
        table: np.ndarray | None = None,
    ) -> None:
        self.corpus = corpus
        self.real = real or {}
        self.table = table  # precomputed vectors by chunk number (Corpus.vector_table)

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSION), np.float32)
        synthetic = []
        for i, text in enumerate(texts):
            key = hashlib.sha1(text.encode()).hexdigest()
            if key in self.real:
                out[i] = self.real[key]
            else:
                synthetic.append((i, number_of(text)))
        numbered = [(i, n) for i, n in synthetic if n is not None]
        if numbered:
            rows = [i for i, _ in numbered]
            numbers = np.array([n for _, n in numbered], np.int64)
            if self.table is not None and numbers.max() < len(self.table):
                out[rows] = self.table[numbers]
            else:
                out[rows] = self.corpus.vectors(numbers)
        for i, _ in (item for item in synthetic if item[1] is None):  # a piece of a chunk
            out[i] = self.corpus.fresh_vector(int(hashlib.sha1(texts[i].encode()).hexdigest(), 16))
        return out

    def config(self) -> dict:
        return {"provider": "custom", "model": self.name, "dimension": DIMENSION}


# The benchmark's metadata filters as ragloom's `filters` (1 % and 0.1 % of the chunks).
FILTERS = {"none": None, "1%": {"group": 7}, "0.1%": {"shard": 123}}
PASSES = 3  # timed passes of the query mix on each side (`bench/scale.py --passes`)


def merge_passes(passes: list[dict]) -> dict:
    """Timed passes of a query mix as one: each kind's latencies from every pass together (a
    p50 over 3 x 40 queries moves less with a moment's noise than one pass's); figures that
    are not latencies (dense recall, the same every pass) from the first pass."""
    out: dict = {}
    for one in passes:
        for key, value in one.items():
            if isinstance(value, list):
                out.setdefault(key, []).extend(value)
            else:
                out.setdefault(key, value)
    return out


def query_chunks(n: int, count: int = 40) -> list[int]:
    """Numbers of the chunks whose texts (and vectors) are the benchmark's queries: never
    indexed in an index of `n` chunks."""
    return [n + 1000 + 37 * i for i in range(count)]


def hybrid_words(text: str) -> str:
    """A hybrid query of the benchmark: the first 8 words of a query chunk's text."""
    return " ".join(text.split()[:8])


def query_words(corpus: Corpus) -> dict[str, list[str]]:
    """The benchmark's query terms by how common they are (ragloom and FTS5 ask the same)."""
    return {
        "very common": corpus.words[:3].tolist(),  # in ~99% of chunks
        "common": corpus.words[20:23].tolist(),  # in ~10-20% of chunks
        "rare": [str(corpus.words[40_000 + 17 * i]) for i in range(3)],
    }
