"""``python -m kbgraph.cli`` (what ``./kb`` and the tests run): the same as the ``kbgraph`` command."""

from __future__ import annotations

from kbgraph.cli import main

main()
