"""Concept deduplication never merges two different operations: the operation a label names, the
constraint it puts on clustering and attaching, and the labelled pairs drawn from real runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.ingest import dedupe
from kbgraph.ingest.dedupe import attach, cluster_concepts, concept_context, concept_vectors
from kbgraph.core.operation_keys import cannot_link, operation_key, verb_group
from kbgraph.ingest.reflect_rules import verbs_named

PAIRS = Path(__file__).parents[2] / "ingest" / "data" / "concept_pairs.jsonl"


def apart(a: str, b: str) -> bool:
    return cannot_link(operation_key(a), operation_key(b))


@pytest.mark.parametrize(("a", "b"), [
    ("book reservation", "cancel reservation"), ("return delivered order items", "exchange delivered order items"),
    ("freeze card", "unfreeze card"), ("lock the account", "unlock the account"), ("add a passenger", "remove a passenger"),
    ("upgrade the cabin", "downgrade the cabin"), ("get reservation details", "cancel reservation"),
    ("update reservation flights", "update reservation baggages"), ("modify pending order items", "modify pending order address"),
    ("not found during cancel reservation", "book reservation"), ("book_reservation", "cancel_reservation"),
])
def test_different_operations_stay_apart(a: str, b: str) -> None:
    assert apart(a, b) and apart(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("cancel reservation", "cancel a booking"), ("cancel reservation", "call off the flight booking"),
    ("return item", "send back a product"), ("return item", "return a delivered item"),
    ("update reservation flights", "change the flights of a reservation"), ("book reservation", "book a flight"),
    ("transfer to human agents", "escalate to a human representative"), ("invalid argument during book reservation", "book reservation"),
    ("change user email", "change the e-mail on file"), ("check who the caller is", "verify the caller's identity"),
    ("return item", "refund a returned order"), ("add checked bags", "update the baggage allowance"),
    ("a wholly unknown idea", "book reservation"),  # an unknown verb is left to the embeddings
])
def test_one_operation_in_other_words_may_merge(a: str, b: str) -> None:
    assert not apart(a, b)


def test_the_key_reads_the_verb_through_synonyms_negations_and_issue_labels() -> None:
    key = operation_key("call off the flight booking")
    assert key is not None and key.verb == "cancel" and key.head == "reservation"
    assert operation_key("unlock the account") is not None and operation_key("unlock the account").verb == "unfreeze"
    assert operation_key("disable auto-pay") is not None and operation_key("disable auto-pay").verb == "freeze"
    assert operation_key("timeout during get order details").verb == "get"  # type: ignore[union-attr]
    assert operation_key("the weather") is None


def test_a_label_means_its_words_literally_and_only_a_request_says_a_change_in_everyday_words() -> None:
    # "push" is how a customer moves a flight, not what a tool that pushes commits does; "kill" in a
    # title names no cancellation. Labels, action names and quoted tasks read the plain lexicon.
    assert operation_key("commit and push") is None
    assert verbs_named("To Kill a Mockingbird") == frozenset()
    assert verb_group("push") is None and verb_group("push", everyday=True) == "update"
    assert verb_group("get rid of", everyday=True) == "cancel"


def test_complete_linkage_never_groups_labels_held_apart_even_when_their_vectors_coincide() -> None:
    labels = ["book reservation", "cancel reservation", "cancel a booking"]
    same = np.ones((3, 4)) / 2.0  # identical vectors: only the constraint can separate them
    groups = cluster_concepts(same, labels)
    assert sorted(sorted(labels[i] for i in g) for g in groups) == [
        ["book reservation"], ["cancel a booking", "cancel reservation"]]


def test_a_new_concept_never_attaches_to_a_meta_concept_of_another_operation() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 1.0]])
    metas = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert attach(vectors, metas, 0.6) == [0, 1]
    assert attach(vectors, metas, 0.6, labels=["cancel reservation", "book a flight"],
                  meta_labels=["book reservation", "book a flight"]) == [None, 1]


def _labelled_pairs() -> list[dict[str, object]]:
    return [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]


def _precision_recall(groups: list[list[int]], labels: list[str], pairs: list[dict[str, object]]) -> tuple[float, float]:
    group_of = {labels[i]: g for g, members in enumerate(groups) for i in members}
    merged = [p for p in pairs if group_of[str(p["a"])] == group_of[str(p["b"])]]
    true_merged = sum(1 for p in merged if p["same"])
    positives = sum(1 for p in pairs if p["same"])
    return true_merged / max(len(merged), 1), true_merged / positives


def test_the_labelled_pairs_of_real_concepts_are_merged_precisely(
    embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every distinct label of the set clustered together as ingestion does: label and context
    (the tool its runs called) embedded and mixed. Precision and recall over the labelled pairs."""
    pairs = _labelled_pairs()
    action = {str(p["a"]): str(p["a_action"]) for p in pairs} | {str(p["b"]): str(p["b_action"]) for p in pairs}
    labels = sorted(action)
    vectors = concept_vectors(embedder.embed(labels), embedder.embed([concept_context([], [action[x]]) for x in labels]))
    assert sum(1 for p in pairs if p["same"]) >= 80 and sum(1 for p in pairs if not p["same"]) >= 300

    precision, recall = _precision_recall(cluster_concepts(vectors, labels), labels, pairs)
    monkeypatch.setattr(dedupe._cluster, "cannot_link", lambda a, b: False)
    plain_precision, plain_recall = _precision_recall(cluster_concepts(vectors, labels), labels, pairs)
    print(f"\nconcept pairs: {len(pairs)}; with operations P {precision:.3f} R {recall:.3f}; "
          f"embeddings alone P {plain_precision:.3f} R {plain_recall:.3f}")
    assert precision >= 0.95 and recall >= 0.85
