"""Unit vectors of short texts a search compares with the request (an operation's words, what a
workflow changes), embedded once per process."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from threading import Lock

import numpy as np

from kbgraph.embedders import Embedder

__all__ = ["KEPT_VECTORS", "IntentVectors", "unit_rows"]

#: Texts whose vectors one process keeps (operation words and intent texts: a namespace has a few
#: hundred distinct ones; beyond this the oldest are dropped).
KEPT_VECTORS = 20_000


@dataclass
class IntentVectors:
    """Unit vectors of texts, embedded once per process (thread-safe; a text two searches ask for at
    once may be embedded twice)."""

    embedder: Embedder
    _kept: dict[str, np.ndarray] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def of(self, texts: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``texts``, one row each."""
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._kept]
        if missing:
            fresh = unit_rows(np.asarray(self.embedder.embed(missing), dtype=np.float64))
            with self._lock:
                for text, vector in zip(missing, fresh, strict=True):
                    self._kept[text] = vector
                while len(self._kept) > KEPT_VECTORS:
                    del self._kept[next(iter(self._kept))]
        with self._lock:
            return np.stack([self._kept[t] for t in texts]) if texts else np.zeros((0, 0))


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row divided by its length (a zero row stays zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit
