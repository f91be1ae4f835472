"""A generalised text keeps its placeholders as data: where each stands and what it stands for. What
reads the text afterwards (the identity clause of a task, a leading contact, a rule that opens on a
placeholder) asks the slots, so a task that writes "{id}" itself is not taken for a placeholder."""

from __future__ import annotations

from kbgraph.core.experience_rules import problem_from_task
from kbgraph.core.general_text import GeneralText, Slot
from kbgraph.core.generalise import general_task, generalise, generalise_task, generalise_text
from kbgraph.core.recovery import trimmed_thought


def test_generalisation_returns_its_placeholders_with_the_words_it_always_wrote() -> None:
    text = "You are Mia Li (user mia_li_3668), mail mia@x.com about order #W6067464, zip 19122 today."
    general = generalise(text, names={"Mia Li"})
    assert general.text == generalise_text(text, names={"Mia Li"}) == (
        "You are {name} (user {id}), mail {email} about order {id}, zip {number} today.")
    assert [(general.text[s.start:s.end], s.kind) for s in general.slots] == [
        ("{name}", "name"), ("{id}", "id"), ("{email}", "email"), ("{id}", "id"), ("{number}", "number")]


def test_a_url_that_held_an_id_is_one_placeholder() -> None:
    general = generalise("see www.shop.com/HXDUBJ/x now", ids={"HXDUBJ"})
    assert general.text == "see {url} now" and general.slots == (Slot(4, 9, "url"),)


def test_the_identity_clause_is_found_by_its_placeholders_not_by_their_spelling() -> None:
    assert generalise_task("You are mia_li_3668 (with ID: 4). You want to cancel.") == "You want to cancel."
    assert generalise_task("You are 'mia_li_3668' and jo@x.com, and you want a refund") == "You want a refund"
    # A task that wrote the braces itself names nobody: nothing is dropped.
    assert generalise_task("You are {id}, you want a refund") == "You are {id}, you want a refund"
    assert general_task("You are {id}, you want a refund").slots == ()


def test_a_leading_contact_is_dropped_only_when_generalisation_put_it_there() -> None:
    assert problem_from_task("jo@x.com: I want to return a lamp.") == "I want to return a lamp."
    assert problem_from_task("{email}: I want to return a lamp.") == "{email}: I want to return a lamp."


def test_a_rule_that_opens_on_a_placeholder_is_known_by_its_slot() -> None:
    about_one = trimmed_thought("Mia Li cannot change a basic economy flight.", names={"Mia Li"})
    general = trimmed_thought("Basic economy flights cannot be changed.")
    written = trimmed_thought("{x} flights cannot be changed.")
    assert about_one is not None and about_one.opens_with_placeholder()
    assert general is not None and not general.opens_with_placeholder()
    assert written is not None and not written.opens_with_placeholder()


def test_cutting_and_joining_move_the_slots_with_the_words() -> None:
    general = GeneralText.joined([GeneralText("to "), GeneralText.placeholder("{id}", "id"), GeneralText(" now")])
    assert general.slots == (Slot(3, 7, "id"),)
    assert general.cut(3).slots == (Slot(0, 4, "id"),) and general.cut(4).slots == ()  # a cut placeholder is none
    assert GeneralText("ßa {id}", (Slot(3, 7, "id"),)).capitalised() == GeneralText("SSa {id}", (Slot(4, 8, "id"),))
