"""The tunables of student retrieval (docs/design.md §3): :class:`SearchWeights`, a small tree of
settings, its flat aliases and its named recipes.

They live in the core, below both the settings (``[search]`` in ``kbgraph.toml`` or
``KBGRAPH_SEARCH__LEXICAL__ALPHA=0.3``) and the search that reads them, so the settings need not
import a pipeline. The tree's groups (``coarse``, ``lexical``, ``intent``, ``outcomes``,
``traversal``, ``selection``, ``scan``) and every field's default, bounds and meaning are in
:mod:`kbgraph.core.weight_groups`; a field is named by its path, ``intent.one_ask_penalty``.

Every field also keeps the flat name it had before the tree (``intent_one_ask_penalty``, ``alpha``,
``exact_scan_max``): :data:`FLAT_NAMES` maps each to its path. Wherever weights are given — the
constructor, :meth:`SearchWeights.merged`, ``--set NAME=VALUE``, the settings, a request's JSON, an
evaluation recipe — a flat name, a dotted path and a nested group (``{"intent": {"weight": 0}}``)
are all accepted, and reading ``weights.alpha`` still answers (untyped: typed code reads
``weights.lexical.alpha``). :mod:`kbgraph.search.params` re-exports them next to the query a caller
sends.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from kbgraph.core.weight_groups import (
    DEFAULT_EXACT_SCAN_MAX, DEFAULT_OVERFETCH_LIMIT, CoarseWeights, ExactScanMax, IntentWeights, LexicalWeights,
    OutcomeWeights, OverfetchLimit, ScanLimits, SelectionWeights, StrictModel, TraversalWeights, Unit,
)

__all__ = [
    "DEFAULT_EXACT_SCAN_MAX", "DEFAULT_OVERFETCH_LIMIT", "FLAT_NAMES", "GROUPS", "CoarseWeights", "ExactScanMax",
    "IntentWeights", "LexicalWeights", "OutcomeWeights", "OverfetchLimit", "RETIRED", "RetiredWeightWarning",
    "ScanLimits", "SearchWeights",
    "SelectionWeights", "StrictModel", "TraversalWeights", "Unit", "WeightChanges", "as_paths", "as_tree", "names_given",
]

#: Changes to some of the SearchWeights, as a caller gives them (``--set``, a recipe of the suite, a
#: request's JSON): by flat name, by dotted path or by group; :meth:`SearchWeights.merged` validates
#: them as a whole.
WeightChanges = dict[str, Any]

#: The groups of the tree, in order, and the model of each.
GROUPS: dict[str, type[StrictModel]] = {
    "coarse": CoarseWeights, "lexical": LexicalWeights, "intent": IntentWeights, "outcomes": OutcomeWeights,
    "traversal": TraversalWeights, "selection": SelectionWeights, "scan": ScanLimits,
}

# Fields whose flat name is not their name within the group (every other field keeps its name).
_RENAMED = {
    "structure_query_steps": "coarse.query_steps", "theta_coarse": "coarse.theta",
    "lexical_scale": "lexical.scale", "lexical_stop_words": "lexical.stop_words",
    "intent_weight": "intent.weight", "intent_scale": "intent.scale", "intent_new_below": "intent.new_below",
    "intent_known_above": "intent.known_above", "intent_spread": "intent.spread",
    "intent_candidates": "intent.candidates", "intent_history_weight": "intent.history_weight",
    "intent_one_ask_penalty": "intent.one_ask_penalty", "intent_unasked_penalty": "intent.unasked_penalty",
    "intent_human_asks": "intent.human_asks", "intent_state_shift": "intent.state_shift",
    "intent_verb_shift": "intent.verb_shift",
    "intent_payment_joins": "intent.payment_joins", "intent_order_penalty": "intent.order_penalty",
}


class RetiredWeightWarning(FutureWarning):
    """A search weight that is no longer a setting was given, and was ignored (:data:`RETIRED`). A
    FutureWarning, so that a user whose settings file names it sees it, not only a developer."""


#: Weights that were settings and are no longer: no set of the development suite moved when they
#: did (docs/search.md, "Knobs no set moves"), so their mechanism runs at the value they had. By
#: path, with the flat name each had; each maps to what now stands in its place. Given anywhere
#: (a settings file, ``--set``, a request's JSON), one is ignored with a RetiredWeightWarning, so
#: settings written before keep working.
RETIRED: dict[str, str] = {
    "selection.same_task_similarity": "a run that only failed is shown as a failed attempt of a hit at least 0.9 "
    "similar (kbgraph.search.student.hits.SAME_TASK_SIMILARITY); 0.8 and 0.99 changed no query of the development suite",
}
_RETIRED_FLAT: dict[str, str] = {"same_task_similarity": "selection.same_task_similarity"}


def _retired(name: str, group: str | None = None) -> bool:
    """``name`` (a flat name or a path; with ``group``, a field of that group) is a retired weight:
    warn and say so."""
    path = f"{group}.{name}" if group else _RETIRED_FLAT.get(name, name)
    if path not in RETIRED:
        return False
    warnings.warn(RetiredWeightWarning(f"search weight {name!r} is no longer a setting and was ignored: {RETIRED[path]}"),
                  stacklevel=4)
    return True


def _flat_names() -> dict[str, str]:
    names = {flat: path for flat, path in _RENAMED.items()}
    renamed = set(_RENAMED.values())
    for group, model in GROUPS.items():
        for field in model.model_fields:
            if f"{group}.{field}" not in renamed:
                names[field] = f"{group}.{field}"
    return names


#: Every field's flat name (the name before the tree, still accepted) and its path in the tree.
FLAT_NAMES: dict[str, str] = _flat_names()
assert len(FLAT_NAMES) == sum(len(model.model_fields) for model in GROUPS.values()), "a flat name is ambiguous"


def _path(name: str) -> tuple[str, str] | None:
    """``(group, field)`` of a flat name or a dotted path; None for neither."""
    path = FLAT_NAMES.get(name, name)
    group, dot, field = path.partition(".")
    return (group, field) if dot and group in GROUPS else None


def as_tree(changes: Mapping[str, Any]) -> dict[str, Any]:
    """``changes`` (flat names, dotted paths or groups, mixed) as a nested dict of groups, the later
    of two names for one field winning. A group given as a model counts the fields it was given.
    A name that is none of these is kept as it is, for validation to refuse."""
    tree: dict[str, Any] = {}
    for name, value in changes.items():
        if isinstance(name, str) and _retired(name):
            continue
        if name in GROUPS:
            fields = value.model_dump(exclude_unset=True) if isinstance(value, BaseModel) else value
            if isinstance(fields, Mapping):
                fields = {field: v for field, v in fields.items() if not (isinstance(field, str) and _retired(field, name))}
            if isinstance(fields, Mapping) and isinstance(tree.get(name), dict):
                tree[name].update(fields)
            else:
                tree[name] = dict(fields) if isinstance(fields, Mapping) else fields
            continue
        path = _path(name)
        if path is None:
            tree[name] = value
            continue
        group, field = path
        if not isinstance(tree.get(group), dict):
            tree[group] = {}
        tree[group][field] = value
    return tree


def as_paths(changes: Mapping[str, Any]) -> WeightChanges:
    """``changes`` by dotted path (``{"intent.weight": 0}``), however they were named: the one spelling
    a report records, so two runs that named a field differently agree."""
    paths: WeightChanges = {}
    for group, fields in as_tree(changes).items():
        if group in GROUPS and isinstance(fields, Mapping):
            paths.update({f"{group}.{field}": value for field, value in fields.items()})
        else:
            paths[group] = fields
    return paths


def names_given(changes: object) -> dict[str, str]:
    """The flat names among ``changes``, by path (``{"lexical.alpha": "alpha"}``): an error about a
    field then names it as the caller did."""
    if not isinstance(changes, Mapping):
        return {}
    return {FLAT_NAMES[name]: name for name in changes if isinstance(name, str) and name in FLAT_NAMES}


class SearchWeights(StrictModel):
    """The tunables of student retrieval, as a tree of seven groups (kbgraph.core.weight_groups).

    ``SearchWeights(intent={"one_ask_penalty": 0})``, ``SearchWeights.model_validate({"intent.one_ask_penalty":
    0})`` and ``SearchWeights.model_validate({"intent_one_ask_penalty": 0})`` are the same weights.
    """

    coarse: CoarseWeights = Field(default_factory=CoarseWeights)
    lexical: LexicalWeights = Field(default_factory=LexicalWeights)
    intent: IntentWeights = Field(default_factory=IntentWeights)
    outcomes: OutcomeWeights = Field(default_factory=OutcomeWeights)
    traversal: TraversalWeights = Field(default_factory=TraversalWeights)
    selection: SelectionWeights = Field(default_factory=SelectionWeights)
    scan: ScanLimits = Field(default_factory=ScanLimits)

    @model_validator(mode="before")
    @classmethod
    def _flat_and_dotted_names(cls, data: Any) -> Any:
        return as_tree(data) if isinstance(data, Mapping) else data

    if not TYPE_CHECKING:  # the flat names read at run time only: typed code reads the tree
        def __getattr__(self, name: str) -> Any:
            path = FLAT_NAMES.get(name)
            if path is None:
                return super().__getattr__(name)
            group, _, field = path.partition(".")
            return getattr(getattr(self, group), field)

    def value(self, name: str) -> Any:
        """One field's value, by flat name or dotted path (``"intent.weight"``)."""
        path = _path(name)
        if path is None or path[1] not in GROUPS[path[0]].model_fields:
            raise KeyError(f"unknown search weight {name!r}")
        return getattr(getattr(self, path[0]), path[1])

    def merged(self, overrides: SearchWeights | WeightChanges | None) -> SearchWeights:
        """These weights with ``overrides`` applied (validated as a whole): a SearchWeights counts the
        fields it was given; a mapping may name fields by flat name, dotted path or group."""
        if overrides is None:
            return self
        changes = (overrides.model_dump(exclude_unset=True) if isinstance(overrides, SearchWeights)
                   else as_tree(overrides))
        tree = self.model_dump()
        for group, fields in changes.items():
            if group in tree and isinstance(fields, Mapping):
                fields = dict(fields)
                edges = fields.get("edge_weights")
                if group == "traversal" and isinstance(edges, Mapping):  # name some edge types, keep the others'
                    fields["edge_weights"] = {**{k.value: v for k, v in self.traversal.edge_weights.items()},
                                              **{str(k).upper(): v for k, v in edges.items()}}
                tree[group] = {**tree[group], **fields}
            else:
                tree[group] = fields
        return SearchWeights.model_validate(tree)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> SearchWeights:
        """A copy; ``update`` is validated and may name fields as :meth:`merged` takes them
        (pydantic's own copy would set an unknown flat name without a word)."""
        copy = super().model_copy(deep=deep)
        return copy if not update else copy.merged(dict(update))
