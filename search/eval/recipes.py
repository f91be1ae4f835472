"""The kbgraph columns of the evaluation as named recipes: kbgraph itself, its ablations (a mechanism
switched off) and opt-in variants (a mechanism switched on), and the view with each query's own
source text hidden.

A recipe is a name and the weights it changes (on top of any ``--set`` of the run), named by their
paths in the settings tree (``intent.weight``; kbgraph.core.weights). To add a column to ``kbgraph
eval --suite``, add one :class:`Recipe` to :data:`ABLATIONS`; the suite, its table, its JSON and
``--ablations`` take it from there. :data:`VARIANTS` are the opt-in mechanisms, run only when
``--ablations`` names them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.weights import WeightChanges, as_paths
from kbgraph.search.params import SearchWeights

__all__ = ["ABLATIONS", "KBGRAPH", "RECIPES", "VARIANTS", "Recipe", "Recipes", "columns"]


@dataclass(frozen=True)
class Recipe:
    """One kbgraph column: ``changes`` to the run's weights."""

    name: str
    changes: WeightChanges = field(default_factory=dict)
    #: What the column shows, in a few words.
    about: str = ""

    def on(self, weights: Mapping[str, object]) -> WeightChanges:
        """The weights of this column over the run's own: the run's, then this recipe's changes, by
        path of the settings tree whatever name the run gave (``alpha`` or ``lexical.alpha``)."""
        return as_paths({**as_paths(weights), **as_paths(self.changes)})

    def checked(self, weights: Mapping[str, object]) -> Recipe:
        """This recipe, after checking that its weights over ``weights`` are valid (a bad ``--set``
        or an unknown weight fails before anything runs)."""
        try:
            SearchWeights().merged(self.on(weights))
        except ValueError as error:
            raise InvalidInputError([f"weights of {self.name}: {error}"]) from None
        return self


class Recipes(Mapping[str, Recipe]):
    """Recipes by name, in the order given (the order of the table's columns)."""

    def __init__(self, *recipes: Recipe):
        self._by_name = {recipe.name: recipe for recipe in recipes}
        if len(self._by_name) != len(recipes):
            raise ValueError("recipe names must be unique")

    def __getitem__(self, name: str) -> Recipe:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def chosen(self, names: Sequence[str] | None) -> Recipes:
        """These recipes only (None: all of them); an unknown name is an error."""
        if names is None:
            return self
        unknown = [name for name in names if name not in self._by_name]
        if unknown:
            raise InvalidInputError([f"--ablations: unknown {', '.join(unknown)} (known: {', '.join(self._by_name)})"])
        return Recipes(*(self._by_name[name] for name in names))

    def changes(self) -> dict[str, WeightChanges]:
        """``{name: changes}``: how a report records its columns."""
        return {name: dict(recipe.changes) for name, recipe in self._by_name.items()}


#: kbgraph with the run's weights.
KBGRAPH = Recipe("kbgraph", about="kbgraph with the run's weights")

#: The ablation columns of the suite: each switches one mechanism off, by the paths of the settings
#: tree (kbgraph.core.weights; docs/search.md, "The settings tree").
ABLATIONS = Recipes(
    Recipe("traversal_off", {"traversal.max_hops": 0}, "traversal (max_hops 1 by default) off"),
    Recipe("workflows_off", {"selection.workflows": False}, "workflows off"),
    Recipe("lexical_off", {"lexical.alpha": 0.0}, "the lexical channel off"),
    Recipe("structure_off", {"coarse.structure_weight": 0.0, "coarse.task_structure_weight": 0.0,
                             "coarse.intent_structure_weight": 0.0}, "the structure scores off"),
    Recipe("outcomes_off", {"outcomes.success_floor": 1.0, "outcomes.support_weight": 0.0,
                            "outcomes.handoff_credit": 1.0, "outcomes.outcome_weight": 0.0},
           "what outcomes add, off"),
    Recipe("intent_off", {"intent.weight": 0.0},
           "the intent channel of requests without steps (search/student/intent.py) off"),
    Recipe("history_off", {"intent.history_weight": 0.0},
           "what the namespace's own history adds to the intent match (kbgraph.search.scoring.history_association) off"),
    Recipe("intent_ramp_off", {"intent.scale": "novelty"},
           "the intent weight scaled by novelty (1 − best semantic cosine) instead of the ramp (intent_share)"),
    Recipe("intent_spread_off", {"intent.spread": False},
           "the intent matches mixed as cosines instead of stretched over the candidates (scoring._direct.spread)"),
    Recipe("human_asks_off", {"intent.human_asks": False},
           "a request asking for a human matched like any other (kbgraph.search.handoff.asks_for_a_human off)"),
    Recipe("state_shift_off", {"intent.state_shift": 0.0},
           "the state an ask says its object is in left out of the intent match (kbgraph.search.order_state)"),
    Recipe("verb_shift_off", {"intent.verb_shift": 0.0},
           "the operations an ask names by their verb left out of the intent match (kbgraph.search.asked_verbs)"),
    Recipe("order_off", {"intent.order_penalty": 0.0},
           "a request of several asks matched whatever order a workflow makes their changes in "
           "(scoring.intent_match's order_penalty)"),
    Recipe("one_ask_penalty_off", {"intent.one_ask_penalty": 0.0},
           "a request of one ask matched with a workflow's operations read as one text only, whatever changes it "
           "makes besides (scoring.one_ask_matches)"),
    Recipe("payment_joins_off", {"intent.payment_joins": False},
           "a piece of a request that only says how to pay is an ask of its own (kbgraph.search.asks.pays_only off)"),
)

#: Opt-in variants: mechanisms the defaults leave off, measured and kept as settings (docs/search.md,
#: "Weights, and how they were chosen"). ``--ablations`` names them like the ablations; no suite
#: runs them unless asked.
VARIANTS = Recipes(
    Recipe("lexical_coverage", {"lexical.scale": "coverage"},
           "the lexical score as the share of the request covered, not relative to the best candidate"),
    Recipe("relation_hops", {"traversal.seeds": 10},
           "the best direct hits expanded along the four relations (the default until 2026-11-28)"),
    Recipe("diversity", {"selection.mmr_lambda": 0.5}, "MMR over the final candidates, λ 0.5 (the design's)"),
    Recipe("repeat_penalty", {"intent.repeat_penalty": 0.5},
           "a workflow's intent match times (distinct operations / changes made)^0.5 (scoring.repeat_factors)"),
    Recipe("task_structure", {"coarse.task_structure_weight": 0.3},
           "the structural index weighed for a query without steps as for one with a shape (ω 0.3)"),
)

#: Every named recipe, ablations then variants: what ``--ablations`` may name.
RECIPES = Recipes(*ABLATIONS.values(), *VARIANTS.values())


def columns(names: Sequence[str] | None) -> Recipes:
    """The suite's extra columns: the ablations (None), or the recipes named (ablations or variants)."""
    return ABLATIONS if names is None else RECIPES.chosen(names)
