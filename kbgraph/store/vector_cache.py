"""Unit problem+goal vectors by experience id, read from the store once per process.

Ingestion (linking and merging) and search (comparing hits) both read them; the KnowledgeBase
keeps one :class:`PgVectorCache` for its pipelines.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt


#: Reads the stored problem+goal vectors of some experience ids: rows of ``{id, pg_embedding}``
#: (and ``pg_embedding_bytes``, which is taken when given: :func:`stored_unit_vector`).
VectorLoader = Callable[[list[str]], Iterable[dict[str, Any]]]


class PgVectorCache:
    """Unit problem+goal vectors by experience id, kept by a KnowledgeBase for its pipelines.

    An experience's id is the hash of its content, so its vector never changes: once read, it
    need not travel again. Each consolidation reads the namespace's facts without vectors and
    asks only for the ids this process has not seen (the cost of adding a run then no longer
    includes moving every vector of the namespace); search compares hits with them. Bounded:
    past ``max_entries`` it starts over.
    """

    def __init__(self, max_entries: int = 500_000):
        self.max_entries = max_entries
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()

    def read_through(
        self, ids: Iterable[str], load: VectorLoader, uncached: Iterable[str] = (),
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The unit vectors of ``ids`` and ``uncached``, by id. Those of ``ids`` this cache does not
        hold are loaded and kept; those of ``uncached`` (vectors that can change, such as an
        abstract experience's) are loaded every time and not kept. ``load(ids)`` gives rows of
        ``{id, pg_embedding}``; it is called once per 5,000 ids. An id stored without a vector
        (or not stored) is left out."""
        always = list(dict.fromkeys(uncached))
        changing = set(always)
        wanted = [i for i in dict.fromkeys(ids) if i not in changing]
        with self._lock:
            found = {i: self._vectors[i] for i in wanted if i in self._vectors}
        to_load = [i for i in wanted if i not in found] + always
        loaded = {row["id"]: vector
                  for start in range(0, len(to_load), 5000) for row in load(to_load[start : start + 5000])
                  if (vector := stored_unit_vector(row.get("pg_embedding_bytes"), row["pg_embedding"])) is not None}
        self.keep({i: v for i, v in loaded.items() if i not in changing})
        return found | loaded

    def keep(self, vectors: Mapping[str, npt.NDArray[np.float32]]) -> None:
        """Holds ``vectors`` (unit vectors by id) from now on."""
        with self._lock:
            if len(self._vectors) + len(vectors) > self.max_entries:
                self._vectors.clear()
            self._vectors.update(vectors)

    def held(self) -> dict[str, npt.NDArray[np.float32]]:
        """Every vector held, by id."""
        with self._lock:
            return dict(self._vectors)


#: The vectors an experience also stores as bytes, by the property that holds them (the bulk reads of
#: the search's read model, of ingestion and of maintenance take those). Bolt carries a list of 384 floats as 384
#: tagged doubles, which Neo4j boxes and the driver unboxes one by one: reading 5,000 experiences'
#: two vectors took 0.3 s of the client's CPU and 0.3–0.7 s of the server's as lists, 0.1 s of each
#: as bytes (bench-scaled-10000, 2026-12-07). The bytes are the very float32 values the vector
#: property holds (setNodeVectorProperty stores float32), so either reads the same vector; every
#: query that sets one of these vectors sets its bytes too (tests/kbgraph/store/test_vector_bytes.py).
VECTOR_BYTES: dict[str, str] = {"pg_embedding": "pg_embedding_bytes", "structure_embedding": "structure_embedding_bytes"}


def vector_bytes(values: Any) -> bytes | None:
    """A vector as its stored bytes (little-endian float32); None for none."""
    return None if values is None else np.asarray(values, dtype="<f4").tobytes()


def stored_values(packed: bytes | None, values: Any) -> Any:
    """A stored vector read as its bytes (``packed``) or, for an experience written before they
    were kept, as its list of floats (``values``)."""
    return np.frombuffer(packed, dtype="<f4") if packed is not None else values


def stored_unit_vector(packed: bytes | None, values: Any) -> npt.NDArray[np.float32] | None:
    """The unit vector of :func:`stored_values`; None if it has none."""
    vector = stored_values(packed, values)
    return unit_vector(vector) if vector is not None else None


def unit_vector(values: Any) -> npt.NDArray[np.float32]:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector)) or 1.0
    return vector / norm
