"""Specification of kbgraph.search.scoring: every formula against values worked out by hand.

Vectors are tiny (2-d or 3-d) so the arithmetic fits in a comment. No database is needed.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

from kbgraph.core.models import RelationType
import kbgraph.search.scoring as scoring
from kbgraph.search.scoring import (
    carried_over,
    domain_distance,
    failure_score,
    fine_score,
    issue_match,
    lambda_schedule,
    neo4j_to_cosine,
    path_score,
    recovery_evidence,
    step_similarity,
    teacher_step_score,
    transferability,
)

approx = pytest.approx
NAN, INF = float("nan"), float("inf")


# ----------------------------------------------------------------------------- Neo4j score → cosine


class TestNeo4jToCosine:
    def test_inverts_neo4j_cosine_score(self) -> None:
        # Neo4j: score = (1 + cos)/2  ⇒  cos = 2·score − 1
        assert neo4j_to_cosine(1.0) == 1.0  # 2·1 − 1
        assert neo4j_to_cosine(0.5) == 0.0  # 2·0.5 − 1
        assert neo4j_to_cosine(0.0) == -1.0  # 2·0 − 1
        assert neo4j_to_cosine(0.9) == approx(0.8)  # 1.8 − 1

    def test_float32_rounding_above_one_is_clamped(self) -> None:
        assert neo4j_to_cosine(1.00000012) == 1.0

    @pytest.mark.parametrize("bad", [1.5, -0.2, NAN, INF])
    def test_rejects_scores_that_are_not_neo4j_cosine_scores(self, bad: float) -> None:
        with pytest.raises(ValueError, match="score"):
            neo4j_to_cosine(bad)


# ----------------------------------------------------------------------------- fine


class TestFineScore:
    def test_mean_over_executed_steps_of_their_best_match(self) -> None:
        # ŝ_1's best candidate step has cosine 1, ŝ_2's 0.8: S_fine = (1 + 0.8) / 2 = 0.9
        assert fine_score([1.0, 0.8]) == approx(0.9)

    def test_divided_by_m_so_it_stays_in_the_unit_interval(self) -> None:
        assert fine_score([1.0, 1.0, 1.0]) == 1.0  # the paper's plain sum would be 3

    def test_negative_cosines_count_as_zero(self) -> None:
        # best cosines −0.6 and 0.8: (0 + 0.8) / 2 = 0.4
        assert fine_score([-0.6, 0.8]) == approx(0.4)

    def test_nothing_executed_scores_zero(self) -> None:
        assert fine_score([]) == 0.0

    @pytest.mark.parametrize("bad", [NAN, INF, 1.5])
    def test_rejects_what_is_not_a_cosine(self, bad: float) -> None:
        with pytest.raises(ValueError, match=r"best_cosines\[1\]"):
            fine_score([0.5, bad])


# ----------------------------------------------------------------------------- λ(t)


class TestLambdaSchedule:
    @pytest.mark.parametrize("kind", ["exponential", "linear", "constant"])
    def test_nothing_executed_means_coarse_only(self, kind: str) -> None:
        assert lambda_schedule(0, kind=kind, rate=0.25, floor=0.2) == 1.0  # type: ignore[arg-type]

    def test_exponential(self) -> None:
        # max(floor, exp(−rate·t)): exp(−0.5·2) = e^−1 ≈ 0.3679
        assert lambda_schedule(2, kind="exponential", rate=0.5, floor=0.0) == approx(math.exp(-1.0))
        # exp(−0.5·10) ≈ 0.0067 < 0.2 → floor
        assert lambda_schedule(10, kind="exponential", rate=0.5, floor=0.2) == 0.2

    def test_linear(self) -> None:
        # max(floor, 1 − rate·t): 1 − 0.25·2 = 0.5; 1 − 0.25·3 = 0.25; 1 − 0.25·10 < 0.1 → 0.1
        assert lambda_schedule(2, kind="linear", rate=0.25, floor=0.1) == approx(0.5)
        assert lambda_schedule(3, kind="linear", rate=0.25, floor=0.1) == approx(0.25)
        assert lambda_schedule(10, kind="linear", rate=0.25, floor=0.1) == 0.1

    def test_constant_is_a_fixed_blend_once_a_step_has_run(self) -> None:
        # λ(t>0) = max(floor, 1 − rate) = 1 − 0.4 = 0.6, whatever t
        assert [lambda_schedule(t, kind="constant", rate=0.4, floor=0.2) for t in (1, 2, 50)] == approx([0.6] * 3)

    @pytest.mark.parametrize("kind", ["exponential", "linear", "constant"])
    @pytest.mark.parametrize("floor", [0.0, 0.3])
    def test_monotone_non_increasing_and_floored(self, kind: str, floor: float) -> None:
        values = [lambda_schedule(t, kind=kind, rate=0.3, floor=floor) for t in range(30)]  # type: ignore[arg-type]
        assert all(a >= b for a, b in zip(values, values[1:]))
        assert all(floor <= v <= 1.0 for v in values)
        if kind != "constant":  # the constant kind stays at 1 − rate = 0.7 for every t > 0
            assert values[-1] == approx(floor, abs=1e-3)  # exp(−0.3·29) ≈ 1.7e-4

    def test_rate_zero_keeps_coarse_only(self) -> None:
        assert lambda_schedule(7, kind="exponential", rate=0.0, floor=0.2) == 1.0

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"t": -1}, "t must be >= 0"),
            ({"t": NAN}, "t must be finite"),
            ({"t": 1, "rate": -0.1}, "rate must be >= 0"),
            ({"t": 1, "rate": INF}, "rate must be finite"),
            ({"t": 1, "floor": 1.5}, r"floor must be in \[0, 1\]"),
            ({"t": 1, "kind": "cosine"}, "kind must be"),
        ],
    )
    def test_rejects_bad_settings(self, kwargs: dict[str, object], message: str) -> None:
        arguments: dict[str, object] = {"kind": "exponential", "rate": 0.25, "floor": 0.2, **kwargs}
        with pytest.raises(ValueError, match=message):
            lambda_schedule(**arguments)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- transferability


class TestDomainDistanceAndTransferability:
    def test_same_domain_is_distance_zero(self) -> None:
        assert domain_distance("Retail", " retail ", [1.0, 0.0], [0.0, 1.0]) == 0.0

    def test_one_minus_cosine_of_domain_embeddings(self) -> None:
        # 1 − cos((1,0),(0.6,0.8)) = 1 − 0.6 = 0.4
        assert domain_distance("retail", "airline", [1.0, 0.0], [0.6, 0.8]) == approx(0.4)
        # orthogonal domains: 1 − 0 = 1; opposite: 1 − (−1) = 2
        assert domain_distance("a", "b", [1.0, 0.0], [0.0, 1.0]) == approx(1.0)
        assert domain_distance("a", "b", [1.0, 0.0], [-1.0, 0.0]) == approx(2.0)

    def test_without_embeddings_falls_back_to_unknown(self) -> None:
        assert domain_distance("retail", "airline") == 1.0
        assert domain_distance("retail", "airline", unknown=0.5) == 0.5

    def test_transferability_hand_computed(self) -> None:
        assert transferability(0.0, tau=0.5) == 1.0  # exp(0)
        # exp(−1/1) = e^−1 ≈ 0.3679; exp(−1/2) ≈ 0.6065 (a warmer τ forgives more)
        assert transferability(1.0, tau=1.0) == approx(math.exp(-1.0))
        assert transferability(1.0, tau=2.0) == approx(math.exp(-0.5))
        # composed: d = 0.4, τ = 0.2 → exp(−2) ≈ 0.1353
        d = domain_distance("retail", "airline", [1.0, 0.0], [0.6, 0.8])
        assert transferability(d, tau=0.2) == approx(math.exp(-2.0))

    @pytest.mark.parametrize(
        ("distance", "tau", "message"),
        [(-0.1, 1.0, "domain_distance must be >= 0"), (NAN, 1.0, "domain_distance must be finite"),
         (0.5, 0.0, "tau must be > 0"), (0.5, INF, "tau must be finite")],
    )
    def test_rejects_bad_inputs(self, distance: float, tau: float, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            transferability(distance, tau)

    def test_a_record_without_steps_carries_nothing_into_another_domain(self) -> None:
        trans = transferability(0.6, tau=1.0)
        assert carried_over(trans, same_domain=False, has_steps=True) == trans   # a way of doing it transfers
        assert carried_over(trans, same_domain=False, has_steps=False) == 0.0    # a bare task statement does not
        assert carried_over(1.0, same_domain=True, has_steps=False) == 1.0       # at home it is still a match

    def test_carried_over_rejects_a_trans_outside_the_unit_interval(self) -> None:
        with pytest.raises(ValueError, match="trans"):
            carried_over(1.5, same_domain=False, has_steps=True)


# ----------------------------------------------------------------------------- graph paths


class TestPathScore:
    def test_seed_alone_is_seed_times_trans(self) -> None:
        assert path_score(0.9, [], hop_decay=0.8) == 0.9
        assert path_score(0.9, [], hop_decay=0.8, trans=0.5) == approx(0.45)

    def test_hand_computed_two_hop_path(self) -> None:
        weights = {"ABSTRACTION": 1.0, "ALTERNATIVE": 0.5}
        # 0.8 · (0.9·1.0) · (0.5·0.5) · 0.8² · 0.5
        # = 0.8 · 0.9 · 0.25 · 0.64 · 0.5 = 0.0576
        score = path_score(
            0.8, [0.9, 0.5], hop_decay=0.8, edge_type_weights=weights,
            types=["ABSTRACTION", "ALTERNATIVE"], trans=0.5,
        )
        assert score == approx(0.0576)

    def test_relation_type_enum_works_as_type(self) -> None:
        # 1.0 · 0.5 · 0.6 · 0.5¹ = 0.15
        score = path_score(1.0, [0.5], hop_decay=0.5, edge_type_weights={"ADAPTATION": 0.6},
                           types=[RelationType.ADAPTATION])
        assert score == approx(0.15)

    def test_without_type_weights_types_weigh_one(self) -> None:
        # 1.0 · 0.5 · 0.5 · 0.8² = 0.16
        assert path_score(1.0, [0.5, 0.5], hop_decay=0.8) == approx(0.16)

    def test_each_hop_decays(self) -> None:
        scores = [path_score(1.0, [1.0] * hops, hop_decay=0.5) for hops in range(4)]
        assert scores == approx([1.0, 0.5, 0.25, 0.125])

    def test_unknown_type_is_an_error(self) -> None:
        with pytest.raises(ValueError, match="no weight for edge type 'COMPOSITION'"):
            path_score(1.0, [0.5], 0.8, edge_type_weights={"ABSTRACTION": 1.0}, types=["COMPOSITION"])

    def test_types_must_match_edges(self) -> None:
        with pytest.raises(ValueError, match="types has 1 entries but the path has 2 edges"):
            path_score(1.0, [0.5, 0.5], 0.8, types=["ABSTRACTION"])
        with pytest.raises(ValueError, match="needs the types"):
            path_score(1.0, [0.5], 0.8, edge_type_weights={"ABSTRACTION": 1.0})

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"edge_weights": [0.5, NAN]}, r"edge_weights\[1\] must be finite"),
            ({"edge_weights": [1.5]}, r"edge_weights\[0\] must be in \[0, 1\]"),
            ({"edge_weights": [0.5], "hop_decay": INF}, "hop_decay must be finite"),
            ({"edge_weights": [0.5], "edge_type_weights": {"ABSTRACTION": NAN},
              "types": ["ABSTRACTION"]}, "edge_type_weights"),
            ({"edge_weights": [], "seed_score": NAN}, "seed_score must be finite"),
        ],
    )
    def test_rejects_nan_and_out_of_range_weights(self, kwargs: dict[str, object], message: str) -> None:
        arguments: dict[str, object] = {"seed_score": 1.0, "hop_decay": 0.8, **kwargs}
        with pytest.raises(ValueError, match=message):
            path_score(**arguments)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- teacher phase


class TestTeacherPhase:
    def test_issue_match_eq9(self) -> None:
        # sim(issue types) · resolution_effectiveness = 1 · 0.7 = 0.7; 0.5 · 0.8 = 0.4
        assert issue_match(1.0, 0.7) == approx(0.7)
        assert issue_match(0.5, 0.8) == approx(0.4)
        assert issue_match(-0.2, 0.8) == 0.0  # dissimilar issue types give no match

    def test_issue_match_rejects_effectiveness_outside_unit_interval(self) -> None:
        with pytest.raises(ValueError, match="resolution_effectiveness"):
            issue_match(1.0, 1.5)

    def test_step_similarity_eq8(self) -> None:
        # 0.5·0.8 + 0.5·0.4 = 0.6;  0.7·1.0 + 0.3·0.5 = 0.85
        assert step_similarity(0.8, 0.4, w_func=0.5, w_exec=0.5) == approx(0.6)
        assert step_similarity(1.0, 0.5, w_func=0.7, w_exec=0.3) == approx(0.85)
        # weights are divided by their sum: (2, 1) ≡ (2/3, 1/3): (2·0.9 + 1·0.3)/3 = 0.7
        assert step_similarity(0.9, 0.3, w_func=2.0, w_exec=1.0) == approx(0.7)

    @pytest.mark.parametrize(
        ("w_func", "w_exec", "message"),
        [(-0.1, 0.5, ">= 0"), (0.0, 0.0, "cannot both be 0"), (NAN, 0.5, "w_func must be finite")],
    )
    def test_step_similarity_rejects_bad_weights(self, w_func: float, w_exec: float, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            step_similarity(0.5, 0.5, w_func=w_func, w_exec=w_exec)

    def test_teacher_step_score_eqs_6_7(self) -> None:
        sims = [0.9, 0.6, 0.8]
        matches = [0.2, 1.0, 0.5]
        # products: 0.18, 0.6, 0.4 → max 0.6; · Precision 0.5 = 0.3
        assert teacher_step_score(sims, matches, precision=0.5) == approx(0.3)
        assert teacher_step_score(sims, matches, precision=1.0) == approx(0.6)

    def test_teacher_step_score_composed_from_eq8_and_eq9(self) -> None:
        # step 1: sim_step = 0.5·1.0 + 0.5·0.6 = 0.8; issue_match = 1 · 0.5 = 0.5 → 0.4
        # step 2: sim_step = 0.5·0.4 + 0.5·0.4 = 0.4; issue_match = 1 · 1.0 = 1.0 → 0.4
        # step 3: sim_step = 0.5·0.9 + 0.5·0.9 = 0.9; issue_match = 0 · 1.0 = 0   → 0
        sims = [step_similarity(1.0, 0.6, 0.5, 0.5), step_similarity(0.4, 0.4, 0.5, 0.5), step_similarity(0.9, 0.9, 0.5, 0.5)]
        matches = [issue_match(1.0, 0.5), issue_match(1.0, 1.0), issue_match(0.0, 1.0)]
        # max 0.4 · precision 0.75 = 0.3
        assert teacher_step_score(sims, matches, precision=0.75) == approx(0.3)

    def test_experience_without_steps_scores_zero(self) -> None:
        assert teacher_step_score([], [], precision=1.0) == 0.0

    def test_teacher_step_score_rejects_bad_inputs(self) -> None:
        with pytest.raises(ValueError, match="one value per step"):
            teacher_step_score([0.5, 0.5], [0.5], precision=1.0)
        with pytest.raises(ValueError, match="precision"):
            teacher_step_score([0.5], [0.5], precision=NAN)
        with pytest.raises(ValueError, match=r"issue_matches must be in \[0, 1\]"):
            teacher_step_score([0.5], [1.5], precision=1.0)


# ----------------------------------------------------------------------------- teacher: evidence of a recovery


class TestRecoveryEvidence:
    def test_is_the_rule_of_succession_once_it_worked(self) -> None:
        assert recovery_evidence(3, 4) == approx(2 / 3) == approx(recovery_evidence(1, 1))
        assert recovery_evidence(9, 10) > recovery_evidence(3, 4) > recovery_evidence(1, 3) > recovery_evidence(1, 10)
        assert recovery_evidence(1, 10) == approx(1 / 6)

    def test_a_recovery_that_never_worked_has_no_evidence_however_rarely_tried(self) -> None:
        assert recovery_evidence(0, 0) == recovery_evidence(0, 1) == recovery_evidence(0, 5) == 0.0

    @pytest.mark.parametrize("worked, tried", [(2, 1), (-1, 0), (1.0, 2), (True, 2)])
    def test_rejects_counts_that_are_not_counts(self, worked: object, tried: int) -> None:
        with pytest.raises(ValueError):
            recovery_evidence(worked, tried)  # type: ignore[arg-type]

    def test_failure_score_weighs_similarity_by_evidence(self) -> None:
        assert failure_score(0.8, 1.0, 1.0) == approx(0.8)
        assert failure_score(0.8, 0.5, 0.0) == approx(0.2)  # never fixed still counts half
        assert failure_score(-0.3, 1.0, 1.0) == 0.0  # a negative cosine is no evidence
        with pytest.raises(ValueError):
            failure_score(0.8, 1.5, 0.5)


# ----------------------------------------------------------------------------- no second default


#: Numbers a formula may default: conventions of the formula, not tunables of a search.
NOT_TUNABLES = {
    ("domain_distance", "unknown"): "the distance of two unrelated (orthogonal) domains",
    ("path_score", "trans"): "a reached node's own transferability; the student search multiplies it in after the path",
    ("history_association", "smoothing"): "the pseudo-count of a smoothed estimate (one run's worth), not a weight",
    ("ask_history_association", "smoothing"): "the pseudo-count of a smoothed estimate (one run's worth), not a weight",
}


def test_no_formula_defaults_a_tunable() -> None:
    """A weight of a formula comes from ``SearchWeights`` or ``RefineWeights`` at the call, so a
    formula never holds a second default that could disagree with them."""
    defaulted = sorted(
        f"{name}({parameter.name}={parameter.default!r})"
        for name in scoring.__all__ if inspect.isfunction(function := getattr(scoring, name))
        for parameter in inspect.signature(function).parameters.values()
        if isinstance(parameter.default, (int, float, str)) and not isinstance(parameter.default, bool)
        and (name, parameter.name) not in NOT_TUNABLES
    )
    assert not defaulted, "take these from the weights at the call instead: " + ", ".join(defaulted)
