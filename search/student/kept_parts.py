"""How each part a search keeps of a large namespace is read, made and kept current under writes
(:class:`~kbgraph.search.student.versioned.KeptPart`): its whole read, the value made of its rows,
and how the value follows the change feed (:mod:`.change_feed`) — the rows the writes changed, read
again, and a value made from the one before: the vectors (:mod:`.vector_model`), the texts
(:mod:`.text_corpus`), the scoring facts (:mod:`.kept_facts`) and what feedback changes
(:mod:`.kept_feedback`) and the step texts (:mod:`.step_model`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from kbgraph.search.student.change_feed import following, following_feedback
from kbgraph.search.student.kept_facts import NamespaceFacts, fact_rows, patched_facts
from kbgraph.search.student.kept_feedback import NamespaceFeedback, built_feedback, feedback_rows, patched_feedback
from kbgraph.search.student.step_model import StepRow, StepSayers, following_steps, patched_steps, step_rows
from kbgraph.search.student.text_corpus import NamespaceTexts, patched_texts, text_rows
from kbgraph.search.student.vector_model import ExperienceVectors, built, patched_vectors, vector_rows
from kbgraph.search.student.versioned import KeptByVersion, KeptPart, VersionedRead
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["facts_part", "feedback_part", "read_texts", "steps_part", "texts_part", "vectors_part"]


def read_texts(gateway: Neo4jGateway, params: Mapping[str, Any], known: str | None,
               ids: list[str] | None = None) -> VersionedRead[list[tuple[str, ...]]]:
    """``search_experience_texts`` with the version the caller kept its rows with (of ``ids`` only)."""
    return text_rows(gateway.read("search_experience_texts", **params, known=known, ids=ids)[0])


def texts_part(gateway: Neo4jGateway, namespace: str, params: Mapping[str, Any]) -> KeptPart[list[tuple[str, ...]], NamespaceTexts]:
    """The texts of the experiences that pass ``params``'s filters, and their BM25 corpus."""
    read = partial(read_texts, gateway, params)
    return KeptPart(read, NamespaceTexts.of, following(gateway, namespace, read, rows_alone=True), patched_texts)


def vectors_part(gateway: Neo4jGateway, namespace: str,
                 kept: KeptByVersion[str, ExperienceVectors]) -> KeptPart[list[list[Any]], ExperienceVectors]:
    """Every experience's vectors, with what the channels filter on."""
    read = vector_rows(gateway, namespace)
    return KeptPart(read, built(gateway, namespace, kept), following(gateway, namespace, read),
                    patched_vectors(gateway, namespace))


def facts_part(gateway: Neo4jGateway, namespace: str) -> KeptPart[list[list[Any]], NamespaceFacts]:
    """Every experience's scoring facts that only a versioned write changes."""
    read = fact_rows(gateway, namespace)
    return KeptPart(read, NamespaceFacts, following(gateway, namespace, read, rows_alone=True), patched_facts)


def feedback_part(gateway: Neo4jGateway, namespace: str,
                  kept: KeptByVersion[str, NamespaceFeedback]) -> KeptPart[list[list[Any]], NamespaceFeedback]:
    """What feedback changes of every experience (by the feedback version)."""
    read = feedback_rows(gateway, namespace)
    return KeptPart(read, built_feedback(gateway, namespace, kept), following_feedback(gateway, namespace, read),
                    patched_feedback(gateway, namespace))


def steps_part(gateway: Neo4jGateway, namespace: str) -> KeptPart[list[StepRow], StepSayers]:
    """Every experience with the step texts it says."""
    return KeptPart(step_rows(gateway, namespace), StepSayers.of, following_steps(gateway, namespace), patched_steps)
