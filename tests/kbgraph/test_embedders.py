"""Embedders: the real MiniLM offline, an OpenAI-compatible endpoint over real HTTP, the cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbgraph.embedders import CachedEmbedder, MiniLMEmbedder, OpenAIEmbedder, embedder_from_settings
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
