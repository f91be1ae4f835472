"""What an ask's words say that its vector does not: that it asks for a human, the state it says its
object is in, the operation it names by its verb (docs/search.md, "An ask for a human", "The state an
ask says its object is in", "An ask that names its operation by its verb").

MiniLM puts "get me a real person" nearer ``submit_referral`` than ``transfer_to_human_agents``,
does not join "the kettle that came" to ``…_delivered_…``, and reads "can I swap it?" as near a
return as an exchange. :class:`AskWords` reads each ask once
(:func:`kbgraph.search.handoff.asks_for_a_human`, :func:`kbgraph.search.order_state.stated_states`,
:func:`kbgraph.search.asked_verbs.asked_verbs`) and moves the asks × operations cosines of the intent
match (kbgraph.search.student.intent) accordingly, the same way for one candidate and for the
channel's table of every workflow.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbgraph.core.weight_groups import IntentWeights
from kbgraph.search.asked_verbs import asked_verbs, operation_verb
from kbgraph.search.handoff import asks_for_a_human
from kbgraph.search.order_state import operation_state, stated_states

__all__ = ["AskWords"]


class AskWords:
    """The words of one request's asks, read once (an empty list of asks reads as one ask saying
    nothing)."""

    def __init__(self, asks: Sequence[str], weights: IntentWeights):
        #: Each ask asks for a human.
        self.human = np.array([weights.human_asks and asks_for_a_human(ask) for ask in asks] or [False], dtype=bool)
        self._state_shift = weights.state_shift
        self._states = [_one_state(ask) if self._state_shift > 0 else None for ask in asks] or [None]
        self._verb_shift = weights.verb_shift
        self._verbs = [asked_verbs(ask) if self._verb_shift > 0 else frozenset() for ask in asks] or [frozenset()]

    @property
    def one_human(self) -> bool:
        """The request is one ask, and it asks for a human."""
        return len(self.human) == 1 and bool(self.human[0])

    @property
    def moves(self) -> bool:
        """Some ask says a state or names a verb: :meth:`shifts` moves cosines."""
        return any(self._states) or any(self._verbs)

    def shifts(self, operations: Sequence[str]) -> npt.NDArray[np.float64]:
        """asks × ``operations``: ``state_shift`` where an ask says the state an operation's name
        needs, minus it where the operation needs another state; plus ``verb_shift`` where the ask
        names the operation's verb; 0 elsewhere."""
        shifts = np.zeros((len(self._states), len(operations)))
        if not self.moves:
            return shifts
        needs = [operation_state(op) for op in operations]
        verbs = [operation_verb(op) for op in operations]
        for row, (said, named) in enumerate(zip(self._states, self._verbs, strict=True)):
            if said is not None:
                shifts[row] += [0.0 if need is None else (self._state_shift if need == said else -self._state_shift)
                                for need in needs]
            if named:
                shifts[row] += [self._verb_shift if verb in named else 0.0 for verb in verbs]
        return shifts

    def shifted(self, by_pair: npt.NDArray[np.float64], operations: Sequence[str]) -> npt.NDArray[np.float64]:
        """``by_pair`` (asks × ``operations`` cosines) with :meth:`shifts` added."""
        return by_pair + self.shifts(operations) if self.moves else by_pair

    def answer_human(self, by_pair: npt.NDArray[np.float64],
                     handoff_columns: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        """``by_pair`` (asks × operations cosines) with each ask for a human answered by each
        handoff operation in full (cosine 1)."""
        if not self.human.any() or not handoff_columns.any() or by_pair.shape[0] != len(self.human):
            return by_pair
        answered = by_pair.copy()
        answered[np.ix_(self.human, handoff_columns)] = 1.0
        return answered


def _one_state(ask: str) -> str | None:
    """The state the ask says its object is in, when it says one (of
    :data:`kbgraph.search.order_state.STATES`)."""
    said = stated_states(ask)
    return next(iter(said)) if len(said) == 1 else None
