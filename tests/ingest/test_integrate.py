"""Integration (BREW integrator): new insights are filed into a meta-concept's document, once each."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.ingest.integrate import (
    DEFAULT_MAX_PER_SECTION,
    Section,
    classify_insight,
    sentence_key,
    update_document,
)
from kbgraph.core.models import ConceptDocument, Insight

# --- classification -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "section"),
    [
        # Conditions that say when the concept applies.
        ("When the customer wants to send back delivered items, use the return tool.", "when_to_use"),
        ("If the order is still pending, cancel it instead of returning it.", "when_to_use"),
        ("Whenever a reservation is in basic economy, check the fare rules first.", "when_to_use"),
        ("Only delivered orders can be returned.", "when_to_use"),
        ("Use it when the user asks for a refund of a delivered item.", "when_to_use"),
        # Reasons and purposes.
        ("Collect every item id first, because the return tool can be called only once.", "why"),
        ("Refunds go to the original payment method so that the money is traceable.", "why"),
        ("Confirm the address with the user to avoid shipping to the wrong place.", "why"),
        # Warnings, failures, mistakes.
        ("Never return items of an order that is still pending.", "pitfalls"),
        ("Don't ask for the user's password in the chat.", "pitfalls"),
        ("Do not cancel a delivered order.", "pitfalls"),
        ("The return fails when the payment method is not on file.", "pitfalls"),
        ("A common mistake is refunding to a new card.", "pitfalls"),
        ("Avoid calling the tool twice for the same order.", "pitfalls"),
        ("Never cancel a shipped order because the items are already on their way.", "pitfalls"),
        ("If the tool returns an error, read the order status again.", "pitfalls"),
        ("Basic economy flights can\u2019t be modified.", "pitfalls"),
        # Everything else is how to do it.
        ("Look up the order with get_order_details and list the item ids.", "how"),
        ("Send the return with the order id, item ids and payment method.", "how"),
    ],
)
def test_insights_are_filed_by_simple_cues(sentence: str, section: Section) -> None:
    assert classify_insight(sentence) == section


# --- updating without embeddings ------------------------------------------------------------------


def test_new_insights_are_appended_to_their_sections_in_order() -> None:
    document = ConceptDocument(how=["Look up the order first."])
    updated, changed = update_document(document, [
        "Send the return with the order id and item ids.",
        "Never return items of a pending order.",
        "When the customer wants a refund for delivered items, start a return.",
        "Refund to the original payment method because it is traceable.",
    ])
    assert changed
    assert updated.how == ["Look up the order first.", "Send the return with the order id and item ids."]
    assert updated.pitfalls == ["Never return items of a pending order."]
    assert updated.when_to_use == ["When the customer wants a refund for delivered items, start a return."]
    assert updated.why == ["Refund to the original payment method because it is traceable."]
    assert document == ConceptDocument(how=["Look up the order first."])  # the input is untouched


def test_a_sentence_already_in_the_document_is_not_added_again() -> None:
    document = ConceptDocument(how=["Look up the order first."], pitfalls=["Never return a pending order."])
    updated, changed = update_document(document, [
        "look up the order first",  # case and trailing punctuation
        "  Look   up the order first!  ",  # white space
        "NEVER return a pending order.",  # case
    ])
    assert not changed
    assert updated == document


def test_the_same_new_insight_twice_in_one_batch_is_added_once() -> None:
    updated, changed = update_document(ConceptDocument(), [
        "Collect all item ids first.", "collect all item ids first", Insight(
            text="Collect all item ids first.", concept="item ids", meta_concept_id="meta_1",
        ),
    ])
    assert changed
    assert updated.how == ["Collect all item ids first."]


def test_blank_insights_are_ignored_and_white_space_is_tidied() -> None:
    updated, changed = update_document(ConceptDocument(), ["   ", "Look  up\nthe order. "])
    assert changed
    assert updated.how == ["Look up the order."]
    assert update_document(ConceptDocument(), ["", "  "]) == (ConceptDocument(), False)


def test_updating_again_with_the_same_insights_changes_nothing() -> None:
    insights = ["Look up the order first.", "Never return a pending order.", "If delivered, return it."]
    once, changed_once = update_document(ConceptDocument(), insights)
    twice, changed_twice = update_document(once, insights)
    assert changed_once and not changed_twice
    assert twice == once


def test_sections_keep_their_earliest_sentences_up_to_the_cap() -> None:
    document = ConceptDocument(how=[f"Step {i} of the procedure." for i in range(10)])
    updated, changed = update_document(document, [f"Extra step {i}." for i in range(5)], max_per_section=12)
    assert changed
    assert updated.how == [f"Step {i} of the procedure." for i in range(10)] + ["Extra step 0.", "Extra step 1."]
    full, changed_full = update_document(updated, ["Yet another step."], max_per_section=12)
    assert not changed_full and full == updated
    assert DEFAULT_MAX_PER_SECTION == 12


def test_repeats_and_overflow_already_in_a_document_are_cleaned_up() -> None:
    document = ConceptDocument(how=["Look up the order.", "look up the order", "Send the return."],
                               why=["Look up the order."])
    updated, changed = update_document(document, [])
    assert changed
    # The first occurrence in reading order (when to use, why, how, pitfalls) stays.
    assert updated == ConceptDocument(why=["Look up the order."], how=["Send the return."])
    capped, _ = update_document(ConceptDocument(how=[f"Step {i}." for i in range(5)]), [], max_per_section=3)
    assert capped.how == ["Step 0.", "Step 1.", "Step 2."]
    with pytest.raises(ValueError):
        update_document(document, [], max_per_section=0)


def test_sentence_keys_ignore_case_white_space_and_trailing_punctuation() -> None:
    assert sentence_key("Check the status.") == sentence_key("  check  the STATUS!? ") == "check the status"
    assert sentence_key("Check the status") != sentence_key("Check the order status")


# --- near-duplicates with an embedding function ---------------------------------------------------


class FakeEmbed:
    """Hand-made unit vectors per text; counts calls."""

    def __init__(self, vectors: dict[str, Sequence[float]]):
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        rows = np.asarray([self.vectors[t] for t in texts], dtype=np.float32)
        normalised: npt.NDArray[np.float32] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return normalised


def test_near_duplicates_are_dropped_at_the_threshold() -> None:
    embed = FakeEmbed({
        "Collect all item ids first.": [1.0, 0.0],
        "Gather every item id beforehand.": [0.95, np.sqrt(1 - 0.95**2)],  # cosine 0.95
        "Ask which payment method gets the refund.": [0.5, np.sqrt(0.75)],  # cosine 0.5
    })
    document = ConceptDocument(how=["Collect all item ids first."])
    new = ["Gather every item id beforehand.", "Ask which payment method gets the refund."]
    updated, changed = update_document(document, new, embed=embed)
    assert changed
    assert updated.how == ["Collect all item ids first.", "Ask which payment method gets the refund."]
    assert len(embed.calls) == 1  # one batch for all sentences
    kept, _ = update_document(document, new, embed=embed, near_duplicate=0.96)
    assert "Gather every item id beforehand." in kept.how


def test_near_duplicates_within_one_batch_keep_the_first() -> None:
    embed = FakeEmbed({"A first phrasing.": [1.0, 0.0, 0.0], "A second phrasing.": [0.99, 0.1, 0.0],
                       "Something else.": [0.0, 0.0, 1.0]})
    updated, _ = update_document(ConceptDocument(), ["A first phrasing.", "A second phrasing.", "Something else."],
                                 embed=embed)
    assert updated.how == ["A first phrasing.", "Something else."]


def test_near_duplicates_count_across_sections() -> None:
    embed = FakeEmbed({"Never return a pending order.": [1.0, 0.0],
                       "Pending orders are never returned.": [1.0, 0.01]})
    document = ConceptDocument(pitfalls=["Never return a pending order."])
    assert update_document(document, ["Pending orders are never returned."], embed=embed) == (document, False)


def test_the_embed_function_is_not_called_when_nothing_is_new() -> None:
    embed = FakeEmbed({})
    document = ConceptDocument(how=["Look up the order."])
    assert update_document(document, ["look up the order"], embed=embed) == (document, False)
    assert embed.calls == []


def test_near_duplicates_with_the_real_minilm(embedder: CachedEmbedder) -> None:
    document = ConceptDocument(how=["Collect all item ids before calling the return tool."])
    updated, changed = update_document(document, [
        "Gather every item id before you call the return tool.",  # cosine 0.955: a paraphrase
        "The return tool can be called only once per order.",  # 0.61: new advice about the same tool
    ], embed=embedder.embed)
    assert changed
    assert updated.how == [
        "Collect all item ids before calling the return tool.",
        "The return tool can be called only once per order.",
    ]

