"""A candidate's score breakdown as the stages keep it (kbgraph.search.student.parts): the values the
ScoreBreakdown of a returned hit is made of, and the few the stages rank by."""

from __future__ import annotations

from kbgraph.search.results import AskMatch, ScoreBreakdown
from kbgraph.search.student.parts import Later, Parts

VALUES = {"semantic": 0.8, "structural": None, "coarse": 0.7, "stage": 0.7, "trans": 0.9, "success": 1.0,
          "support": 0.3, "share": 0.5, "utility_factor": 1.1, "outcomes": 2, "handed_off": True,
          "asks": [AskMatch(ask="cancel it", operation="cancel_pending_order", similarity=0.6)],
          "direct": 0.812345678, "final": 0.812345678}


def test_a_returned_hit_s_breakdown_is_the_one_its_values_make() -> None:
    assert Parts(dict(VALUES)).explained() == ScoreBreakdown(**VALUES)


def test_the_stages_read_the_values_they_rank_by_and_a_value_left_out_is_the_breakdown_s_default() -> None:
    parts = Parts(dict(VALUES))
    assert (parts.direct, parts.stage, parts.trans, parts.success, parts.share, parts.support, parts.utility_factor) \
        == (0.812345678, 0.7, 0.9, 1.0, 0.5, 0.3, 1.1)
    empty = Parts({})
    default = ScoreBreakdown()
    assert (empty.direct, empty.trans, empty.share, empty.utility_factor) \
        == (default.direct, default.trans, default.share, default.utility_factor)


def test_an_update_is_a_copy_and_each_explanation_is_the_caller_s_own() -> None:
    parts = Parts(dict(VALUES))
    workflow = parts.updated(workflow=0.9, direct=0.9)
    assert (workflow.direct, parts.direct) == (0.9, 0.812345678)
    assert workflow.explained().workflow == 0.9 and parts.explained().workflow is None
    first = parts.explained()
    first.final = 0.0
    assert parts.explained().final == 0.812345678


def test_a_value_only_an_explanation_shows_is_worked_out_when_the_breakdown_is_made() -> None:
    made: list[int] = []

    def asks() -> list[AskMatch]:
        made.append(1)
        return list(VALUES["asks"])  # type: ignore[call-overload]

    parts = Parts({**VALUES, "asks": Later(asks)}).updated(final=0.9)
    assert made == [] and parts.direct == 0.812345678, "ranking reads no explanation"
    assert parts.explained() == ScoreBreakdown(**{**VALUES, "final": 0.9})
    assert made == [1]


def test_values_no_stage_ranks_by_are_rounded_when_the_breakdown_is_made_cosines_at_0_at_least() -> None:
    parts = Parts({**VALUES, "semantic": -0.0000004, "coarse": 0.70000049, "quality": None},
                  frozenset({"semantic", "coarse", "quality"})).updated(context=0.123456789)
    assert parts.values["coarse"] == 0.70000049, "kept as computed"
    shown = parts.explained()
    assert (shown.semantic, shown.coarse, shown.quality, shown.context) == (0.0, 0.7, None, 0.123456789)
