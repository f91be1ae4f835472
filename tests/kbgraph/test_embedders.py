"""Embedders: the real MiniLM offline, an OpenAI-compatible endpoint over real HTTP, the cache."""

from __future__ import annotations

from pathlib import Path

import json
import subprocess
import sys

import numpy as np
import pytest

from kbgraph.embedders import (
    CachedEmbedder,
    MiniLMEmbedder,
    OnnxMiniLMEmbedder,
    OpenAIEmbedder,
    embedder_from_settings,
    onnx_export_path,
    other_minilm_runtime,
)
from kbgraph.core.errors import EmbedderError
from kbgraph.core.settings import Settings
from tests.fakes.openai_server import running_fake_openai


class CountingEmbedder:
    def __init__(self, inner: MiniLMEmbedder | OpenAIEmbedder):
        self.inner = inner
        self.calls: list[int] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls.append(len(texts))
        return self.inner.embed(texts)


def test_minilm_gives_unit_vectors_that_put_paraphrases_together(embedder: CachedEmbedder) -> None:
    vectors = embedder.embed(["return an item", "send back a product", "book a flight to Lisbon"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_minilm_loads_from_the_installed_package_and_nothing_at_construction() -> None:
    model = MiniLMEmbedder()
    assert model._model is None  # noqa: SLF001 — constructing must not load anything
    assert model.embed([]).shape == (0, 384)


def test_a_wrong_model_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="no sentence-transformers model"):
        MiniLMEmbedder(model_path=tmp_path).embed(["x"])


def test_the_cache_answers_repeated_texts_without_the_model(tmp_path: Path) -> None:
    with running_fake_openai(dimension=8) as fake:
        counting = CountingEmbedder(OpenAIEmbedder("m", 8, base_url=fake.base_url))
        cached = CachedEmbedder(counting, tmp_path)
        first = cached.embed(["a", "b", "a"])
        second = CachedEmbedder(counting, tmp_path).embed(["b", "a", "c"])  # a new process would see the same file
    assert counting.calls == [2, 1]
    np.testing.assert_array_equal(first[0], second[1])
    np.testing.assert_array_equal(first[0], first[2])


def test_openai_compatible_endpoint_over_real_http() -> None:
    with running_fake_openai(dimension=8) as fake:
        vectors = OpenAIEmbedder("text-embedding-test", 8, base_url=fake.base_url, api_key="k").embed(["x", "y"])
    assert vectors.shape == (2, 8)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert fake.requests[0]["body"]["model"] == "text-embedding-test"


def test_a_failing_endpoint_becomes_one_clear_error() -> None:
    with running_fake_openai() as fake:
        fake.responses.extend([(500, {"error": {"message": "boom"}})] * 3)
        with pytest.raises(EmbedderError, match="embedding request to .* failed"):
            OpenAIEmbedder("m", 8, base_url=fake.base_url, max_retries=2).embed(["x"])


def test_vectors_of_the_wrong_size_are_refused() -> None:
    with running_fake_openai(dimension=5) as fake:
        with pytest.raises(EmbedderError, match=r"expected \(n, 8\)"):
            OpenAIEmbedder("m", 8, base_url=fake.base_url).embed(["x"])


def test_nan_vectors_are_refused() -> None:
    with running_fake_openai() as fake:
        fake.responses.append((200, '{"object": "list", "model": "m", "data": [{"object": "embedding", "index": 0,'
                                    ' "embedding": [NaN, 1, 1, 1, 1, 1, 1, 1]}], "usage": {"prompt_tokens": 1,'
                                    ' "total_tokens": 1}}'))
        with pytest.raises(EmbedderError, match="NaN"):
            OpenAIEmbedder("m", 8, base_url=fake.base_url).embed(["x"])


def test_settings_choose_the_embedder(tmp_path: Path) -> None:
    chosen = embedder_from_settings(Settings(embedder="openai", embedding_dimension=16, cache_dir=tmp_path))
    assert chosen.name == "openai:text-embedding-3-small" and chosen.dimension == 16
    assert embedder_from_settings(Settings(cache_dir=tmp_path)).name == "all-MiniLM-L6-v2"


def test_minilm_runs_on_onnx_runtime_by_default_and_on_pytorch_when_asked(tmp_path: Path) -> None:
    default = embedder_from_settings(Settings(cache_dir=tmp_path))
    torch = embedder_from_settings(Settings(cache_dir=tmp_path, minilm_runtime="torch"))
    assert isinstance(default, CachedEmbedder) and isinstance(default.inner, OnnxMiniLMEmbedder)
    assert isinstance(torch, CachedEmbedder) and isinstance(torch.inner, MiniLMEmbedder)
    # Same weights, same vectors: both runtimes share one embedding cache.
    assert default.path == torch.path


TEXTS = ["return an item", "send back a product", "book a flight to Lisbon",
         "get_order_details(order_id=<id>) -> exchange_delivered_order_items", "",
         "a long task " * 300]  # past the model's 256 tokens: truncated alike


def test_the_onnx_runtime_gives_pytorchs_vectors() -> None:
    onnx = OnnxMiniLMEmbedder(Settings().cache_dir, batch_size=4)  # two batches of unequal lengths
    torch = MiniLMEmbedder()
    ours, reference = onnx.embed(TEXTS), torch.embed(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
    assert (ours * reference).sum(axis=1).min() >= 0.99999
    assert onnx.embed([]).shape == (0, 384)
    assert other_minilm_runtime(onnx, Settings().cache_dir).runtime == "torch"  # type: ignore[union-attr]


def test_the_export_is_made_once_into_the_cache_and_later_processes_need_no_pytorch(tmp_path: Path) -> None:
    model = OnnxMiniLMEmbedder(tmp_path)
    assert model._session is None  # noqa: SLF001 — constructing loads nothing
    first = model.embed(["return an item"])
    exported = next((tmp_path / "models").glob("*.onnx"))
    assert [p.name for p in (tmp_path / "models").iterdir()] == [exported.name]  # no partial file left
    assert exported.stat().st_size > 50_000_000  # the weights are in it
    script = (
        "import json, sys; from pathlib import Path;"
        "from kbgraph.embedders import OnnxMiniLMEmbedder;"
        f"v = OnnxMiniLMEmbedder(Path({str(tmp_path)!r})).embed(['return an item']);"
        "sys.stdout.write(json.dumps(v[0].tolist())); assert 'torch' not in sys.modules, 'PyTorch was imported'"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "models").iterdir()] == [exported.name]
    np.testing.assert_allclose(np.asarray(json.loads(done.stdout), dtype=np.float32), first[0], atol=1e-6)


def test_another_model_gets_an_export_of_its_own(tmp_path: Path) -> None:
    from kbgraph.embedders import bundled_minilm_path

    path = bundled_minilm_path()
    assert onnx_export_path(path, tmp_path) == onnx_export_path(path, tmp_path)
    assert onnx_export_path(path, tmp_path).parent == tmp_path / "models"
    assert onnx_export_path(tmp_path, tmp_path) != onnx_export_path(path, tmp_path)


def test_a_wrong_model_path_is_a_clear_error_on_onnx_runtime_too(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="no sentence-transformers model"):
        OnnxMiniLMEmbedder(tmp_path, model_path=tmp_path).embed(["x"])
