"""The CLI tests run most commands in this process (``kbgraph.cli.run``, what the ``kbgraph``
command runs): a process per command cost 5–10 s of imports and model loading each. This fixture
puts back after every test what such a run changes beyond itself, so that no test depends on
another having run in the same worker."""

from __future__ import annotations

import logging
import sys

import pytest

import kbgraph.kb
from kbgraph.core.settings import Settings
from kbgraph.embedders import CachedEmbedder, Embedder, MiniLMEmbedder


@pytest.fixture(autouse=True)
def cli_runs_in_this_process(monkeypatch: pytest.MonkeyPatch, embedder: CachedEmbedder) -> None:
    # kbgraph.cli.run sends the driver's log to DEBUG for the whole process (quiet_driver_log: a
    # handler on the "neo4j" logger, which then stops propagating), and typer sets sys.excepthook.
    driver_log = logging.getLogger("neo4j")
    monkeypatch.setattr(driver_log, "handlers", list(driver_log.handlers))
    monkeypatch.setattr(driver_log, "propagate", driver_log.propagate)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)

    # Each command builds its embedder from its settings, as it does as a process; the MiniLM one
    # shares the session's loaded model (a fresh cache wrapper, so its counters start at zero)
    # rather than loading its own at every command.
    build = kbgraph.kb.embedder_from_settings

    def sharing_the_loaded_model(settings: Settings) -> Embedder:
        built = build(settings)
        if isinstance(built, CachedEmbedder) and isinstance(built.inner, MiniLMEmbedder):
            return CachedEmbedder(embedder.inner, settings.cache_dir)
        return built

    monkeypatch.setattr(kbgraph.kb, "embedder_from_settings", sharing_the_loaded_model)
