"""The step channel of a large namespace, answered in the process: the namespace's step texts (one
vector per distinct ``action: text``, ``StepText``) as a float32 matrix, with the experiences that
say each one, kept with the namespace's search version (:mod:`kbgraph.search.student.versioned`).

The exact scan (``search_step_scan``) scores every step text, then walks from the best text to the
steps that say it and their experiences. Many experiences say the same text (every retail run
starts by finding the user): at 100,000 experiences a text is said by thousands of steps, and a
query whose first texts' experiences the filters drop expands them all (p95 446 ms for queries
with executed steps in ``bench online`` at 100,000). Here the walk is over arrays: the texts in
score order, each one's experiences (in id order) that pass the filters, until ``k`` are found.

Kept current in the background as the vectors are (:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`)
and used only when read at the version the search read, and not with a quality floor above 0
(feedback moves quality without a new version). The answer is the exact scan's: the experiences
with their best step's Neo4j score ``(1 + cos) / 2``, best first, ties by id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.experience_filters import ExperienceFilters
from kbgraph.search.student.versioned import VersionedRead
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import unit_vector

__all__ = ["StepSayers", "step_rows"]


@dataclass
class StepSayers:
    """One version of a namespace's step texts: their distinct unit vectors (a text's row in
    ``vectors`` is ``row_of[text]``: equal vectors score equal, as in Neo4j), and for each text the
    experiences that say it, as indices into ``experiences`` (whose ids are in id order)."""

    experiences: ExperienceFilters
    vectors: npt.NDArray[np.float32]
    row_of: npt.NDArray[np.intp]
    sayers: list[npt.NDArray[np.intp]]

    @classmethod
    def of(cls, rows: Mapping[str, Any]) -> StepSayers:
        """From ``search_step_text_rows``'s rows: ``experiences`` as ``search_experience_vector_rows``
        gives them, ``texts`` as ``[embedding, ids of the experiences that say it]``."""
        experiences = ExperienceFilters.of(sorted(rows["experiences"], key=lambda row: str(row[0])))
        index = {exp_id: n for n, exp_id in enumerate(experiences.ids)}
        texts = [(vector, said) for vector, said in rows["texts"] if vector]
        dimension = len(texts[0][0]) if texts else 0
        texts = [(vector, said) for vector, said in texts if len(vector) == dimension]
        if texts:
            matrix = np.stack([unit_vector(vector) for vector, _ in texts]).astype(np.float32)
            vectors, inverse = np.unique(matrix, axis=0, return_inverse=True)
        else:
            vectors, inverse = np.zeros((0, dimension), dtype=np.float32), np.zeros(0, dtype=np.intp)
        sayers = [np.array(sorted({index[i] for i in said if i in index}), dtype=np.intp) for _, said in texts]
        return cls(experiences, vectors, inverse.reshape(-1).astype(np.intp), sayers)

    def nearest(self, vector: Sequence[float], params: Mapping[str, Any], k: int) -> list[ChannelHit]:
        """The ``k`` experiences whose best step text is nearest to ``vector``, among those that pass
        the filters, as ``search_step_scan`` ranks them: best first, ties by id."""
        if not self.sayers or k <= 0:
            return []
        score = (1.0 + np.einsum("ij,j->i", self.vectors, unit_vector(vector)).astype(np.float64)) / 2.0
        text_score = score[self.row_of]
        passed = self.experiences.mask(params)
        found = np.zeros(len(self.experiences.ids), dtype=bool)
        best = np.zeros(len(self.experiences.ids), dtype=np.float64)
        order = np.argsort(-text_score, kind="stable")
        count, n = 0, 0
        while n < order.size:
            # A group of texts of equal score: an experience saying any of them scores that.
            group_score = text_score[order[n]]
            while n < order.size and text_score[order[n]] == group_score:
                said = self.sayers[order[n]]
                new = said[passed[said] & ~found[said]]
                found[new], best[new] = True, group_score
                count += new.size
                n += 1
            if count >= k:
                break
        hits = np.flatnonzero(found)
        # Best first, then by id: hits are in id order, and the sort is stable.
        ranked = hits[np.argsort(-best[hits], kind="stable")][:k]
        return [ChannelHit(self.experiences.ids[i], float(best[i])) for i in ranked]


def step_rows(gateway: Neo4jGateway, namespace: str) -> Callable[[str | None], VersionedRead[dict[str, Any]]]:
    """Reads ``search_step_text_rows`` of ``namespace`` with the version kept (a versioned read)."""
    def read(known: str | None) -> VersionedRead[dict[str, Any]]:
        answer = gateway.read("search_step_text_rows", kb=namespace, known=known)[0]
        return VersionedRead(answer["version"], bool(answer["unchanged"]),
                             {"experiences": answer["experiences"], "texts": answer["texts"]})

    return read
