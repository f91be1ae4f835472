"""Stages 6–7 kept up to date: a namespace's merge blocks and link plan, re-planned part by part.

:func:`plan_links` builds this state from every fact and reads the plan off it. A consolidation
that remembers the state (``KnowledgeBase.link_state``, see ingest/consolidate.py) hands it only
the experiences written since, and it re-plans the parts they touch:

- merges: only the blocks (kind, workflow, scope, owner, outcome) of new experiences, and within
  them only pairs with a new one — stored experiences were merged already, so no two of them are
  near-duplicates;
- ABSTRACTION of each workflow that gained or lost a member (its abstract experience, its
  representative, its members' relations);
- COMPOSITION of each workflow whose representative appeared, vanished or changed, and of every
  smaller workflow of its domain that it contains;
- ADAPTATION of the shapes of touched workflows, and declared ADAPTATION of experiences whose
  ``adapted_from`` names a run of a changed experience;
- ALTERNATIVE choices (the closest ways that worked, cosine ≥ 0.8, another workflow) of new
  experiences, of those close to them and of those that had chosen one that left.

Every part is computed by the same function in both cases and similar pairs come from
:class:`~kbgraph.ingest.vector_set.VectorSet` (exact per-pair cosines), so the incremental state
equals the one built from scratch (tests/ingest/test_link_state.py checks it on real runs).

The package: :mod:`._index` (the facts, indexed), :mod:`._ledger` (each part's relations and the
delta), :mod:`._workflows` (ABSTRACTION, COMPOSITION, ADAPTATION), :mod:`._alternatives`
(ALTERNATIVE), :mod:`._state` (:class:`LinkState`, :func:`plan_links`), :mod:`._remembered`, :mod:`._log`
(the facts log other processes follow).
"""

from __future__ import annotations

from kbgraph.ingest.link_state._ledger import LinkDelta, RelationKey
from kbgraph.ingest.link_state._log import LOG_ENTRIES, FollowedChanges, changes_since, log_entry
from kbgraph.ingest.link_state._remembered import RememberedLinks
from kbgraph.ingest.link_state._state import LinkState, plan_links
from kbgraph.ingest.link_state._workflows import WHOLE_DOMAIN_AFTER

__all__ = ["LOG_ENTRIES", "WHOLE_DOMAIN_AFTER", "FollowedChanges", "LinkDelta", "LinkState", "RelationKey", "RememberedLinks",
           "changes_since", "log_entry", "plan_links"]
