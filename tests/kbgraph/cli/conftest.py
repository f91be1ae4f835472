"""The CLI tests run most commands in this process (``kbgraph.cli.run``, what the ``kbgraph``
command runs, through tests/cli_in_process.run_kbgraph, which puts back after each call what a run
changes for the whole process): a process per command cost 5–10 s of imports and model loading
each. This fixture lets those commands share the session's loaded model."""

from __future__ import annotations

import pytest

import kbgraph.kb
from kbgraph.core.settings import Settings
from kbgraph.embedders import CachedEmbedder, Embedder


@pytest.fixture(autouse=True)
def cli_commands_share_the_loaded_model(monkeypatch: pytest.MonkeyPatch, embedder: CachedEmbedder) -> None:
    # Each command builds its embedder from its settings, as it does as a process; the MiniLM one
    # (on the session's runtime) shares the session's loaded model (a fresh cache wrapper, so its counters start at zero)
    # rather than loading its own at every command.
    build = kbgraph.kb.embedder_from_settings

    def sharing_the_loaded_model(settings: Settings) -> Embedder:
        built = build(settings)
        if isinstance(built, CachedEmbedder) and type(built.inner) is type(embedder.inner):
            return CachedEmbedder(embedder.inner, settings.cache_dir)
        return built

    monkeypatch.setattr(kbgraph.kb, "embedder_from_settings", sharing_the_loaded_model)
