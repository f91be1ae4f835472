"""Unit vectors of short texts a search compares with the request (an operation's words, what a
workflow changes), embedded once per process."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kbgraph.embedders import Embedder
from kbgraph.search.student.bounded import BoundedMap

__all__ = ["KEPT_VECTORS", "IntentVectors", "unit_rows"]

#: Texts whose vectors one process keeps (operation words and intent texts: a namespace has a few
#: hundred distinct ones; beyond this the oldest are dropped).
KEPT_VECTORS = 20_000


@dataclass
class IntentVectors:
    """Unit vectors of texts, embedded once per process (thread-safe; a text two searches ask for at
    once may be embedded twice)."""

    embedder: Embedder
    _kept: BoundedMap[str, np.ndarray] = field(default_factory=lambda: BoundedMap(KEPT_VECTORS))

    def of(self, texts: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``texts``, one row each."""
        distinct = list(dict.fromkeys(texts))
        vectors = self._kept.get_many(distinct)
        missing = [t for t in distinct if t not in vectors]
        if missing:
            fresh = dict(zip(missing, unit_rows(np.asarray(self.embedder.embed(missing), dtype=np.float64)), strict=True))
            self._kept.put_many(fresh)
            # Read from this call's own copy: another search may drop them from the map meanwhile.
            vectors.update(fresh)
        return np.stack([vectors[t] for t in texts]) if texts else np.zeros((0, 0))


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row divided by its length (a zero row stays zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit
