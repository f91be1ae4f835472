"""The explain view quotes stored text; printed anywhere, that text cannot drive a terminal."""

from __future__ import annotations

from kbgraph.core.models import Experience, FailureMode, Step
from kbgraph.search.explain import explain_results
from kbgraph.search.results import ConceptHit, ScoreBreakdown, SearchHit, SearchResults

HOSTILE = "x\x1b]0;pwned\x07 \x1b[31mred\x1b[0m \x9b2J \u202eevil \u2066iso\u2069 [bold]loud[/]"


def _results() -> SearchResults:
    experience = Experience(
        problem=f"Cancel the order {HOSTILE}", goal=f"goal {HOSTILE}", domain="retail",
        steps=[Step(action="get_order_details", text=f"look up {HOSTILE}")],
        failure_modes=[FailureMode(description=f"not found {HOSTILE}", recovery=f"retry {HOSTILE}")],
    )
    hit = SearchHit(rank=1, id="e-1", score=0.5, experience=experience, breakdown=ScoreBreakdown(final=0.5),
                    found_by=["vector:experience_pg_embedding"])
    concept = ConceptHit.model_validate({"id": "m-1", "name": f"refunds {HOSTILE}", "score": 0.4, "experiences": 1,
                                         "document": f"- a line {HOSTILE}"})
    return SearchResults(query=f"cancel {HOSTILE}", hits=[hit], concepts=[concept], notes=[f"note {HOSTILE}"])


def test_control_characters_in_stored_text_are_shown_as_escapes_and_the_layout_kept() -> None:
    text = explain_results(_results())
    assert not any(c in text for c in "\x1b\x07\x9b\u202e\u2066\u2069")
    assert "Cancel the order x\\x1b]0;pwned\\x07 \\x1b[31mred" in text and "\\u202eevil" in text
    assert "pitfall: not found x\\x1b" in text and "recovery: retry x\\x1b" in text
    assert "[bold]loud[/]" in text  # plain text: the CLI prints it with markup off
    assert text.splitlines()[0].startswith("query: cancel x\\x1b")  # lines are still the view's own lines
