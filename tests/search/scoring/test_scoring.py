"""Specification of kbgraph.search.scoring: every formula against values worked out by hand.

Vectors are tiny (2-d or 3-d) so the arithmetic fits in a comment. No database is needed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbgraph.core.models import RelationType
from kbgraph.search.scoring import (
    coarse_score,
    combine_problem_goal,
    cosine_similarity,
    domain_distance,
    failure_score,
    fine_score,
    hybrid_score,
    issue_match,
    lambda_schedule,
    mael_step_score,
    minmax_normalise,
    mmr,
    neo4j_to_cosine,
    path_score,
    recovery_evidence,
    stage_blend,
    step_similarity,
    success_weight,
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


# ----------------------------------------------------------------------------- coarse


class TestCoarseScore:
    def test_identical_vectors_score_one(self) -> None:
        assert coarse_score([0.6, 0.8], [0.6, 0.8]) == approx(1.0)

    def test_orthogonal_vectors_score_zero(self) -> None:
        assert coarse_score([1.0, 0.0], [0.0, 1.0]) == 0.0

    def test_hand_computed_cosine(self) -> None:
        # cos((1,0), (0.6,0.8)) = 0.6 / (1·1) = 0.6
        assert coarse_score([1.0, 0.0], [0.6, 0.8]) == approx(0.6)
        # length does not matter: (2,0) vs (3,4): 6 / (2·5) = 0.6
        assert coarse_score([2.0, 0.0], [3.0, 4.0]) == approx(0.6)

    def test_opposite_meaning_is_clamped_to_zero(self) -> None:
        # cos = −1, documented as "no similarity"
        assert coarse_score([1.0, 0.0], [-1.0, 0.0]) == 0.0

    def test_problem_and_goal_are_summed_before_the_cosine(self) -> None:
        # r̂ = f(π̂)+f(γ̂) = (1,0,0)+(0,1,0) = (1,1,0) → unit (1/√2, 1/√2, 0)
        query = combine_problem_goal([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
        assert query == approx([1 / math.sqrt(2), 1 / math.sqrt(2), 0.0])
        # r = (1,0,0)+(0,0,1) = (1,0,1); cos((1,1,0),(1,0,1)) = 1 / (√2·√2) = 0.5
        candidate = combine_problem_goal([1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
        assert coarse_score(query, candidate) == approx(0.5)

    def test_zero_vector_has_no_similarity(self) -> None:
        assert coarse_score([0.0, 0.0], [1.0, 0.0]) == 0.0

    def test_dimension_mismatch_is_an_error(self) -> None:
        with pytest.raises(ValueError, match="different dimensions"):
            coarse_score([1.0, 0.0], [1.0, 0.0, 0.0])

    def test_nan_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="query_pg contains NaN"):
            coarse_score([NAN, 0.0], [1.0, 0.0])


def test_cosine_similarity_is_not_clamped() -> None:
    # cos((1,0), (−0.6,0.8)) = −0.6
    assert cosine_similarity([1.0, 0.0], [-0.6, 0.8]) == approx(-0.6)


# ----------------------------------------------------------------------------- fine


class TestFineScore:
    def test_mean_over_executed_steps_of_best_match(self) -> None:
        executed = [[1.0, 0.0], [0.0, 1.0]]  # ŝ_1, ŝ_2 (m = 2)
        candidate = [[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]]  # s_1, s_2, s_3 (n = 3)
        # ŝ_1: cos with s_1..s_3 = 1, 0.6, −1 → max 1
        # ŝ_2: cos with s_1..s_3 = 0, 0.8,  0 → max 0.8
        # S_fine = (1 + 0.8) / 2 = 0.9
        assert fine_score(executed, candidate) == approx(0.9)

    def test_single_executed_step(self) -> None:
        # m = 1: ŝ = (0.6,0.8); cos with s_1=(1,0) is 0.6, with s_2=(0,1) is 0.8 → 0.8 / 1
        assert fine_score([[0.6, 0.8]], [[1.0, 0.0], [0.0, 1.0]]) == approx(0.8)
        # a bare 1-d vector is one step
        assert fine_score([0.6, 0.8], [[1.0, 0.0], [0.0, 1.0]]) == approx(0.8)

    def test_identical_steps_score_one(self) -> None:
        steps = [[1.0, 0.0], [0.0, 1.0]]
        assert fine_score(steps, steps) == approx(1.0)

    def test_orthogonal_steps_score_zero(self) -> None:
        assert fine_score([[1.0, 0.0]], [[0.0, 1.0]]) == 0.0

    def test_negative_cosines_count_as_zero(self) -> None:
        # ŝ_1 = (1,0): best cos = max(−1, −0.6) = −0.6 → clipped to 0
        # ŝ_2 = (0,1): best cos = max(0, 0.8) = 0.8
        # S_fine = (0 + 0.8) / 2 = 0.4
        assert fine_score([[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [-0.6, 0.8]]) == approx(0.4)

    def test_normalised_by_m_so_stays_in_unit_interval(self) -> None:
        executed = np.eye(3)  # m = 3 orthonormal steps, all present in the candidate
        assert fine_score(executed, np.eye(3)) == approx(1.0)  # the paper's plain sum would be 3

    @pytest.mark.parametrize(
        ("query", "candidate"),
        [([], [[1.0, 0.0]]), ([[1.0, 0.0]], []), ([], []), (np.zeros((0, 2)), [[1.0, 0.0]])],
    )
    def test_no_steps_on_either_side_scores_zero(self, query: object, candidate: object) -> None:
        assert fine_score(query, candidate) == 0.0  # type: ignore[arg-type]

    def test_dimension_mismatch_is_an_error(self) -> None:
        with pytest.raises(ValueError, match="different dimensions"):
            fine_score([[1.0, 0.0]], [[1.0, 0.0, 0.0]])

    def test_infinite_values_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="candidate_steps contains NaN or infinite"):
            fine_score([[1.0, 0.0]], [[INF, 0.0]])


# ----------------------------------------------------------------------------- λ(t) and the blend


class TestLambdaSchedule:
    @pytest.mark.parametrize("kind", ["exponential", "linear", "constant"])
    def test_nothing_executed_means_coarse_only(self, kind: str) -> None:
        assert lambda_schedule(0, kind=kind) == 1.0  # type: ignore[arg-type]

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
        assert [lambda_schedule(t, kind="constant", rate=0.4) for t in (1, 2, 50)] == approx([0.6] * 3)

    def test_defaults(self) -> None:
        # exponential, rate 0.25, floor 0.2: exp(−0.25·4) = e^−1 ≈ 0.368; exp(−0.25·20) ≈ 0.0067 → 0.2
        assert lambda_schedule(4) == approx(math.exp(-1.0))
        assert lambda_schedule(20) == 0.2

    @pytest.mark.parametrize("kind", ["exponential", "linear", "constant"])
    @pytest.mark.parametrize("floor", [0.0, 0.3])
    def test_monotone_non_increasing_and_floored(self, kind: str, floor: float) -> None:
        values = [lambda_schedule(t, kind=kind, rate=0.3, floor=floor) for t in range(30)]  # type: ignore[arg-type]
        assert all(a >= b for a, b in zip(values, values[1:]))
        assert all(floor <= v <= 1.0 for v in values)
        if kind != "constant":  # the constant kind stays at 1 − rate = 0.7 for every t > 0
            assert values[-1] == approx(floor, abs=1e-3)  # exp(−0.3·29) ≈ 1.7e-4

    def test_rate_zero_keeps_coarse_only(self) -> None:
        assert lambda_schedule(7, kind="exponential", rate=0.0) == 1.0

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
        with pytest.raises(ValueError, match=message):
            lambda_schedule(**kwargs)  # type: ignore[arg-type]


class TestStageBlend:
    def test_hand_computed(self) -> None:
        # 0.25·0.8 + 0.75·0.4 = 0.2 + 0.3 = 0.5
        assert stage_blend(0.8, 0.4, 0.25) == approx(0.5)

    def test_extremes(self) -> None:
        assert stage_blend(0.8, 0.4, 1.0) == 0.8  # λ = 1: coarse only
        assert stage_blend(0.8, 0.4, 0.0) == 0.4  # λ = 0: fine only

    @pytest.mark.parametrize("lam", [-0.1, 1.1, NAN])
    def test_rejects_lambda_outside_unit_interval(self, lam: float) -> None:
        with pytest.raises(ValueError, match="lam"):
            stage_blend(0.8, 0.4, lam)


# ----------------------------------------------------------------------------- hybrid


class TestMinmaxNormalise:
    def test_hand_computed(self) -> None:
        # min 2, max 6: (2,4,6) → (0, 2/4, 4/4)
        assert minmax_normalise([2.0, 4.0, 6.0]) == approx([0.0, 0.5, 1.0])

    def test_positive_ties_become_ones(self) -> None:
        assert minmax_normalise([3.2, 3.2]) == approx([1.0, 1.0])
        assert minmax_normalise([7.0]) == approx([1.0])  # a single lexical hit is the best one

    def test_zero_ties_become_zeros(self) -> None:
        assert minmax_normalise([0.0, 0.0, 0.0]) == approx([0.0, 0.0, 0.0])  # nothing matched

    def test_empty(self) -> None:
        assert minmax_normalise([]).shape == (0,)

    def test_nan_rejected(self) -> None:
        with pytest.raises(ValueError, match="scores contains NaN"):
            minmax_normalise([1.0, NAN])


class TestHybridScore:
    def test_hand_computed_with_default_alpha(self) -> None:
        semantic = [0.8, 0.4, 0.6]
        lexical = [10.0, 2.0, 6.0]  # min-max → (1, 0, 0.5)
        # 0.5·1 + 0.5·0.8 = 0.9;  0.5·0 + 0.5·0.4 = 0.2;  0.5·0.5 + 0.5·0.6 = 0.55
        assert hybrid_score(semantic, lexical) == approx([0.9, 0.2, 0.55])

    def test_alpha_weighs_the_lexical_part(self) -> None:
        # α = 0.25: 0.25·1 + 0.75·0.8 = 0.85;  0.25·0 + 0.75·0.4 = 0.3
        assert hybrid_score([0.8, 0.4], [5.0, 1.0], alpha=0.25) == approx([0.85, 0.3])
        assert hybrid_score([0.8, 0.4], [5.0, 1.0], alpha=0.0) == approx([0.8, 0.4])  # semantic only
        assert hybrid_score([0.8, 0.4], [5.0, 1.0], alpha=1.0) == approx([1.0, 0.0])  # lexical only

    def test_normalisation_on_ties(self) -> None:
        # equal positive lexical scores → 1s: 0.5·1 + 0.5·0.8 = 0.9, 0.5·1 + 0.5·0.4 = 0.7
        assert hybrid_score([0.8, 0.4], [2.5, 2.5]) == approx([0.9, 0.7])
        # no lexical match at all → 0s: 0.5·0 + 0.5·s
        assert hybrid_score([0.8, 0.4], [0.0, 0.0]) == approx([0.4, 0.2])

    def test_negative_semantic_cosine_counts_as_zero(self) -> None:
        # semantic −0.5 → 0; lexical (4, 0) → (1, 0): 0.5·1 + 0 = 0.5; 0.5·0 + 0.5·0.6 = 0.3
        assert hybrid_score([-0.5, 0.6], [4.0, 0.0]) == approx([0.5, 0.3])

    def test_mismatched_lengths_are_an_error(self) -> None:
        with pytest.raises(ValueError, match="same candidates"):
            hybrid_score([0.8, 0.4], [1.0])

    @pytest.mark.parametrize("alpha", [NAN, -0.5, 2.0])
    def test_rejects_bad_alpha(self, alpha: float) -> None:
        with pytest.raises(ValueError, match="alpha"):
            hybrid_score([0.8], [1.0], alpha=alpha)

    def test_rejects_nan_lexical(self) -> None:
        with pytest.raises(ValueError, match="lexical contains NaN"):
            hybrid_score([0.8], [NAN])


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


# ----------------------------------------------------------------------------- success and reward


class TestSuccessAndReward:
    def test_success_weight_eq5(self) -> None:
        # S_final = S · trans · success = 0.8 · 0.5 · 0.75 = 0.3
        assert success_weight(0.8, success=0.75, trans=0.5) == approx(0.3)
        assert success_weight(0.8, success=0.75) == approx(0.6)  # trans defaults to 1
        assert success_weight(0.8, success=0.0) == 0.0  # a never-successful experience drops out

    @pytest.mark.parametrize("success", [1.2, -0.1, NAN])
    def test_success_must_be_a_rate(self, success: float) -> None:
        with pytest.raises(ValueError, match="success"):
            success_weight(0.8, success=success)

    def test_mael_step_score(self) -> None:
        # α·sim + (1−α)·reward = 0.5·0.8 + 0.5·0.4 = 0.6
        assert mael_step_score(0.8, 0.4) == approx(0.6)
        # α = 0.25: 0.25·0.8 + 0.75·0.4 = 0.2 + 0.3 = 0.5
        assert mael_step_score(0.8, 0.4, alpha=0.25) == approx(0.5)
        # negative cosine → 0; a negative reward is kept: 0.5·0 + 0.5·(−1) = −0.5
        assert mael_step_score(-0.3, -1.0) == approx(-0.5)

    def test_mael_rejects_nan_reward(self) -> None:
        with pytest.raises(ValueError, match="reward must be finite"):
            mael_step_score(0.8, NAN)


# ----------------------------------------------------------------------------- graph paths


class TestPathScore:
    def test_seed_alone_is_seed_times_trans(self) -> None:
        assert path_score(0.9, []) == 0.9
        assert path_score(0.9, [], trans=0.5) == approx(0.45)

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
            path_score(1.0, [0.5], edge_type_weights={"ABSTRACTION": 1.0}, types=["COMPOSITION"])

    def test_types_must_match_edges(self) -> None:
        with pytest.raises(ValueError, match="types has 1 entries but the path has 2 edges"):
            path_score(1.0, [0.5, 0.5], types=["ABSTRACTION"])
        with pytest.raises(ValueError, match="needs the types"):
            path_score(1.0, [0.5], edge_type_weights={"ABSTRACTION": 1.0})

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
        arguments: dict[str, object] = {"seed_score": 1.0, **kwargs}
        with pytest.raises(ValueError, match=message):
            path_score(**arguments)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- MMR


class TestMMR:
    # 0: the best match; 1: a near-duplicate of 0; 2: different and a little less relevant.
    SCORES = [0.9, 0.85, 0.7]
    VECTORS = [[1.0, 0.0], [0.99, 0.141], [0.0, 1.0]]

    def test_second_pick_is_diverse_not_the_near_duplicate(self) -> None:
        # pick 1: argmax relevance → 0
        # pick 2, λ = 0.5: cand 1: 0.5·0.85 − 0.5·cos(v1,v0) ≈ 0.425 − 0.5·0.990 ≈ −0.070
        #                  cand 2: 0.5·0.70  − 0.5·cos(v2,v0) = 0.35 − 0 = 0.35  → 2
        # pick 3: only 1 is left
        assert mmr(self.SCORES, self.VECTORS, k=3) == [0, 2, 1]

    def test_lambda_one_is_plain_relevance_order(self) -> None:
        assert mmr(self.SCORES, self.VECTORS, k=3, lam=1.0) == [0, 1, 2]

    def test_k_limits_and_k_beyond_n_returns_everything(self) -> None:
        assert mmr(self.SCORES, self.VECTORS, k=1) == [0]
        assert mmr(self.SCORES, self.VECTORS, k=0) == []
        assert mmr(self.SCORES, self.VECTORS, k=10) == [0, 2, 1]
        assert mmr([], np.zeros((0, 2)), k=3) == []

    def test_ties_go_to_the_lowest_index(self) -> None:
        # identical scores and identical vectors: every MMR value ties at each pick
        assert mmr([0.5, 0.5, 0.5], [[1.0, 0.0]] * 3, k=3) == [0, 1, 2]
        # orthogonal vectors, equal relevance: no penalty differs, so index order again
        assert mmr([0.5, 0.5, 0.5], np.eye(3), k=3) == [0, 1, 2]

    def test_hand_computed_three_way_choice(self) -> None:
        scores = [1.0, 0.8, 0.6]
        vectors = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]
        # pick 1 → 0. pick 2 (λ = 0.5): cand 1: 0.4 − 0.5·0.6 = 0.1; cand 2: 0.3 − 0.5·0 = 0.3 → 2
        # pick 3 → 1 (the only one left)
        assert mmr(scores, vectors, k=3) == [0, 2, 1]
        # λ = 0.8: cand 1: 0.64 − 0.2·0.6 = 0.52; cand 2: 0.48 − 0 = 0.48 → 1
        assert mmr(scores, vectors, k=2, lam=0.8) == [0, 1]

    @pytest.mark.parametrize("k", [-1, -10])
    def test_negative_k_is_rejected(self, k: int) -> None:
        with pytest.raises(ValueError, match="k must be >= 0"):
            mmr(self.SCORES, self.VECTORS, k=k)

    def test_bad_inputs_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="candidate_scores contains NaN"):
            mmr([0.9, NAN], [[1.0, 0.0], [0.0, 1.0]], k=1)
        with pytest.raises(ValueError, match="candidate_vectors contains NaN"):
            mmr([0.9, 0.8], [[1.0, 0.0], [INF, 1.0]], k=1)
        with pytest.raises(ValueError, match="2 candidate_scores but 1 candidate_vectors"):
            mmr([0.9, 0.8], [[1.0, 0.0]], k=1)
        with pytest.raises(ValueError, match="lam"):
            mmr([0.9], [[1.0, 0.0]], k=1, lam=NAN)
        with pytest.raises(ValueError, match="k must be an integer"):
            mmr([0.9], [[1.0, 0.0]], k=1.5)  # type: ignore[arg-type]


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
        assert step_similarity(0.8, 0.4) == approx(0.6)
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
        assert teacher_step_score(sims, matches) == approx(0.6)  # precision defaults to 1

    def test_teacher_step_score_composed_from_eq8_and_eq9(self) -> None:
        # step 1: sim_step = 0.5·1.0 + 0.5·0.6 = 0.8; issue_match = 1 · 0.5 = 0.5 → 0.4
        # step 2: sim_step = 0.5·0.4 + 0.5·0.4 = 0.4; issue_match = 1 · 1.0 = 1.0 → 0.4
        # step 3: sim_step = 0.5·0.9 + 0.5·0.9 = 0.9; issue_match = 0 · 1.0 = 0   → 0
        sims = [step_similarity(1.0, 0.6), step_similarity(0.4, 0.4), step_similarity(0.9, 0.9)]
        matches = [issue_match(1.0, 0.5), issue_match(1.0, 1.0), issue_match(0.0, 1.0)]
        # max 0.4 · precision 0.75 = 0.3
        assert teacher_step_score(sims, matches, precision=0.75) == approx(0.3)

    def test_experience_without_steps_scores_zero(self) -> None:
        assert teacher_step_score([], []) == 0.0

    def test_teacher_step_score_rejects_bad_inputs(self) -> None:
        with pytest.raises(ValueError, match="one value per step"):
            teacher_step_score([0.5, 0.5], [0.5])
        with pytest.raises(ValueError, match="precision"):
            teacher_step_score([0.5], [0.5], precision=NAN)
        with pytest.raises(ValueError, match=r"issue_matches must be in \[0, 1\]"):
            teacher_step_score([0.5], [1.5])


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
