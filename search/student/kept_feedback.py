"""What feedback changes, kept in the process for a namespace whose vectors and scoring facts are
kept (up to ``IN_PROCESS_MAX`` experiences), so that a settled search asks the server nothing about
its candidates.

``search_candidates_feedback`` read, every search, what feedback changes without a new search
version (quality, utility, the task outcomes), the cosines against the query that the vector
channels did not return, and the candidates' texts: one request of a settled search's four, ~3 ms
of waiting at 10,000 experiences. Feedback's writes (``feedback_used``, ``feedback_outcome``) give
one of the namespace's feedback stripes a new token (kbgraph.store.search_version); the feedback
version, the search version followed by every stripe's token, is read with the search version
(``search_version_of``, the intent channel's request). So what feedback changes is kept by it:
read in the background as the vectors and facts are
(:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`: read twice, the second read trusted),
and used only when read and confirmed at the feedback version the search read. The cosines are
worked out from the kept experience vectors (:mod:`.vector_model`) and the outcomes' vectors (kept
by outcome id: an outcome's id is the hash of its task, so its vector never changes), the texts
come from the kept facts (:mod:`.kept_facts`).

The values are the request's up to the last bits of the float32 cosines (Neo4j and numpy add the
products in another order) and of ``exp`` (Java's and the C library's):
``tests/search/test_kept_feedback.py`` compares them field by field.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.student.change_feed import first_id, rows_of, without
from kbgraph.search.student.kept_facts import NamespaceFacts
from kbgraph.search.student.vector_model import ExperienceVectors, neo4j_scores
from kbgraph.search.student.versioned import KeptByVersion, Patch, RowsRead, VersionedRead
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import unit_vector

__all__ = ["NamespaceFeedback", "StoredFeedback", "built_feedback", "feedback_rows", "patched_feedback", "utility_as_read"]

#: Outcome vectors asked for per request.
_PAGE = 5000
_EPOCH = date(1970, 1, 1)


@dataclass(frozen=True, slots=True)
class StoredFeedback:
    """One experience's values that feedback changes (a row of ``search_experience_feedback_rows``)."""

    quality: float
    #: Days from 1970-01-01 to the UTC date of its last use, else of its creation (None: neither).
    idle_from: int | None
    usage_impact: float
    #: Days from 1970-01-01 to the UTC date its usage impact was last brought up to date.
    impact_from: int | None
    #: ``(outcome id, outcome)`` of each task outcome it had.
    outcomes: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, row: Sequence[Any]) -> StoredFeedback:
        _, quality, idle_from, impact, impact_from, outcomes = row
        return cls(float(quality), None if idle_from is None else int(idle_from), float(impact),
                   None if impact_from is None else int(impact_from),
                   tuple((str(o), float(outcome)) for o, outcome in outcomes))


class NamespaceFeedback:
    """What feedback changes of every experience of a namespace at one feedback version, and the
    task vectors of their outcomes (unit float32, by outcome id)."""

    def __init__(self, rows: Sequence[Sequence[Any]], outcome_vectors: Mapping[str, npt.NDArray[np.float32]],
                 before: NamespaceFeedback | None = None, changed: Iterable[str] = ()):
        """From rows of ``search_experience_feedback_rows``; with ``before`` and ``changed`` as
        :class:`~kbgraph.search.student.kept_facts.NamespaceFacts` takes them."""
        if before is None:
            self.by_id: dict[str, StoredFeedback] = {str(row[0]): StoredFeedback.of(row) for row in rows}
        else:  # ``rows`` are a follow's (in id order): ``before``'s, the changed ones read again
            fresh = set(changed)
            self.by_id = without(before.by_id, fresh)
            self.by_id.update((str(row[0]), StoredFeedback.of(row)) for row in rows_of(rows, fresh, first_id))
        self.outcome_vectors = dict(outcome_vectors)

    def __len__(self) -> int:
        return len(self.by_id)

    def rows(self, found: Sequence[str], pg: Sequence[float], task: Sequence[float], semantic: Sequence[str],
             structural: Sequence[str], facts: NamespaceFacts, vectors: ExperienceVectors, today: date,
             decay: float) -> list[dict[str, Any]] | None:
        """The rows ``search_candidates_feedback`` returns for these arguments (``today`` in UTC,
        ``decay`` per day), worked out from what is kept; None when something they need is not
        (the request answers)."""
        if any(i not in vectors.held or i not in facts.by_id for i in found):
            return None
        stored = [i for i in found if i in self.by_id]
        outcome_ids = list({o: None for i in stored for o, _ in self.by_id[i].outcomes})
        if any(o not in self.outcome_vectors for o in outcome_ids):
            return None
        semantic_of = dict(zip(semantic, _scores([vectors.held[i][0] for i in semantic], pg), strict=True))
        structural_of = dict(zip(structural, _scores([vectors.held[i][1] for i in structural], task), strict=True))
        outcome_of = dict(zip(outcome_ids, _scores([self.outcome_vectors[o] for o in outcome_ids], pg), strict=True))
        day = (today - _EPOCH).days
        rows = []
        for i in stored:
            e = self.by_id[i]
            rows.append({
                "id": i, "quality": e.quality, "text": facts.by_id[i].text,
                "semantic": semantic_of.get(i), "structural": structural_of.get(i),
                "utility": utility_as_read(e.quality, e.usage_impact, _since(e.idle_from, day), _since(e.impact_from, day), decay),
                "outcomes": [[outcome_of[o], outcome] for o, outcome in e.outcomes],
            })
        return rows


def utility_as_read(quality: float, usage_impact: float, idle: int, since_impact: int, decay: float) -> float:
    """The utility ``search_candidates_feedback`` computes: quality decayed by the days since the
    last use, plus the usage impact decayed by the days since it was brought up to date (negative
    days count as none), in the same operations."""
    return (quality * math.exp(-decay * (idle if idle > 0 else 0.0))
            + usage_impact * math.exp(-decay * (since_impact if since_impact > 0 else 0.0)))


def _since(epoch_day: int | None, today: int) -> int:
    return 0 if epoch_day is None else today - epoch_day


def _scores(vectors: Sequence[npt.NDArray[np.float32] | None], query: Sequence[float]) -> list[float | None]:
    """:func:`~kbgraph.search.student.vector_model.neo4j_scores` of each of ``vectors`` against
    ``query``, as the vector channels work it out; None for a missing vector."""
    present = [v for v in vectors if v is not None]
    if not present:
        return [None] * len(vectors)
    scores = iter(neo4j_scores(np.stack(present), query).tolist())
    return [next(scores) if v is not None else None for v in vectors]


def feedback_rows(gateway: Neo4jGateway, namespace: str) -> RowsRead[list[list[Any]]]:
    """Reads ``search_experience_feedback_rows`` of ``namespace`` with the feedback version kept, of
    experiences ``ids`` only when given (the change feed)."""
    def read(known: str | None, ids: list[str] | None = None) -> VersionedRead[list[list[Any]]]:
        answer = gateway.read("search_experience_feedback_rows", kb=namespace, known=known, ids=ids)[0]
        return VersionedRead(answer["version"], bool(answer["unchanged"]), list(answer["rows"]))

    return read


def built_feedback(gateway: Neo4jGateway, namespace: str,
                   kept: KeptByVersion[str, NamespaceFeedback]) -> Callable[[list[list[Any]]], NamespaceFeedback]:
    """Makes the kept value of rows read with :func:`feedback_rows`, reading the vectors of the
    outcomes the value ``kept`` holds now does not hold."""
    def make(rows: list[list[Any]]) -> NamespaceFeedback:
        before = kept.kept(namespace)
        return _made(gateway, namespace, rows, before[1] if before is not None else None, None)

    return make


def patched_feedback(gateway: Neo4jGateway, namespace: str) -> Patch[NamespaceFeedback, list[list[Any]]]:
    """The kept value of rows read with :func:`feedback_rows` made from the value before them and the
    ids whose rows changed (the change feed), reading only the outcome vectors it does not hold."""
    def patch(before: NamespaceFeedback, rows: list[list[Any]], changed: list[str]) -> NamespaceFeedback:
        return _made(gateway, namespace, rows, before, changed)

    return patch


def _made(gateway: Neo4jGateway, namespace: str, rows: list[list[Any]], before: NamespaceFeedback | None,
          changed: list[str] | None) -> NamespaceFeedback:
    """``rows``' value; with ``changed``, what was not changed is taken from ``before``."""
    held = before.outcome_vectors if before is not None else {}
    referenced = {str(o) for row in rows for o, _ in row[5]}
    vectors = {o: held[o] for o in referenced if o in held}
    wanted = sorted(referenced - vectors.keys())
    # Only an outcome read with its vector is held (one read without may have been read as its
    # write was being applied: see kbgraph.search.student.versioned); the next read asks again.
    for start in range(0, len(wanted), _PAGE):
        for r in gateway.read("search_outcome_vectors_of", kb=namespace, ids=wanted[start : start + _PAGE]):
            if r["embedding"] is not None:
                vectors[r["id"]] = unit_vector(r["embedding"])
    return NamespaceFeedback(rows, vectors, before, changed or ()) if changed is not None else NamespaceFeedback(rows, vectors)
