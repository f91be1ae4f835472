"""A KnowledgeBase's remembered link state, so the next consolidation of its namespace can update
it instead of planning from scratch."""

from __future__ import annotations

import threading

from kbgraph.ingest.link_state._state import LinkState

class RememberedLinks:
    """A KnowledgeBase's link state of its namespace, with the facts version it holds for and the
    namespace's experience relations by type at that version.

    Consolidations of one namespace run one at a time (the ingest lease, or the caller's own
    order), so one remembered state per KnowledgeBase is enough; the lock only keeps ``take`` and
    ``keep`` whole."""

    def __init__(self) -> None:
        self._remembered: tuple[LinkState, dict[str, int]] | None = None
        self._version: str | None = None
        self._lock = threading.Lock()

    def take(self, version: str | None) -> tuple[LinkState, dict[str, int]] | None:
        """The remembered state and relation totals if the namespace is still at ``version``, else
        None (and forgotten): :meth:`take_any` held to one version."""
        taken = self.take_any()
        return taken[:2] if taken is not None and version is not None and taken[2] == version else None

    def take_any(self) -> tuple[LinkState, dict[str, int], str] | None:
        """The remembered state, relation totals and the facts version they hold for, whatever
        the namespace's version now (a consolidation may follow the facts log from there,
        ingest/link_state/_log.py). Taken, they are no longer remembered: a consolidation that
        fails half-way leaves nothing behind."""
        with self._lock:
            remembered, self._remembered = self._remembered, None
            held, self._version = self._version, None
            return (*remembered, held) if remembered is not None and held is not None else None

    def keep(self, state: LinkState, version: str, relation_totals: dict[str, int]) -> None:
        with self._lock:
            self._remembered, self._version = (state, dict(relation_totals)), version

    def clear(self) -> None:
        with self._lock:
            self._remembered, self._version = None, None
