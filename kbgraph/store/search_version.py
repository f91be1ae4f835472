"""A namespace's search version: a token on its ``KbState`` node that every write which can change
what a search reads of the namespace as a whole replaces, in the write's own transaction.

Some channels read the whole namespace (what every workflow changes and the history of requests
of a domain, ``search_workflow_operations``; every experience's text, ``search_experience_texts``)
and get the same rows back until a write changes them. A search sends the version it kept its rows
with, and the server returns the rows only when the version is another
(kbgraph.search.student.versioned): the version is read first, so rows read with an old version
are at worst kept under that old version, never under a newer one.

The bump is central: the gateway runs every named query through
:func:`kbgraph.store.gateway.run_named` (or its async twin), which calls :func:`bump_search_version`
first: a query that changes what is searched is preceded by ``kb_state_search_version_bump`` in
the same transaction, once per transaction and namespace (:func:`bump_first`). Which named
writes change what is searched is :data:`CHANGES_SEARCHED`: experiences written, merged, archived,
restored or deleted, abstract experiences grown or dissolved, ABSTRACTION and HAS_STEP edges. An
import renews the version itself after each batch (:data:`RENEW`, kbgraph.transfer), so that a
state node it brings from a file gets a version of its own. Feedback is not among them
(:data:`LEAVES_SEARCHED`): it changes an experience's quality, which a search with ``min_quality``
above 0 filters on, so such a search does not use the version
(kbgraph.search.student.versioned.version_applies). A burst of feedback never waits for the
namespace's state node.

What feedback changes (quality, usage impact, last use, the task outcomes, the counters and step
rewards a hit shows) and the failure modes have a version of their own, the *feedback version*:
the writes of :data:`CHANGES_FEEDBACK` replace the token of one of the
namespace's :data:`FEEDBACK_STRIPES` ``FeedbackStripe`` nodes, picked at random once per transaction
and before anything else is locked, so that concurrent feedback rarely waits on the same node and
never holds one while waiting for another. A search reads the stripes with the search version
(kbgraph.search.student.kept_feedback keeps what feedback changes by the two, and
kbgraph.search.student.kept_hits the experiences searches returned).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from threading import Lock
from typing import Any
from weakref import WeakKeyDictionary

import neo4j

from kbgraph.store.queries import query

__all__ = ["BUMP", "CHANGED_IDS", "CHANGES_FEEDBACK", "CHANGES_SEARCHED", "CHANGE_MAX_CHARS", "CHANGE_SEPARATOR",
           "FEEDBACK_BUMP", "FEEDBACK_STRIPES", "LEAVES_SEARCHED", "NOTE", "RENEW", "Changed", "Returned", "bump_first",
           "bump_search_version", "bump_search_version_async", "changed_ids", "feedback_bump_first"]

#: The named query that gives namespace ``$kb`` a new search version.
BUMP = "kb_state_search_version_bump"
#: The same for an import: never creates the state node, which the import may bring.
RENEW = "kb_state_search_version_renew"
#: The named query that gives one feedback stripe of namespace ``$kb`` a new token.
FEEDBACK_BUMP = "feedback_stripe_bump"
#: How many stripes a namespace's feedback version is made of: feedback transactions that pick the
#: same one wait for each other (each holds its stripe until it commits, a few milliseconds).
FEEDBACK_STRIPES = 8

#: The named writes that can change what a search reads of a namespace as a whole: an
#: experience's existence, status, kind, domain, operations, texts, scope, owner, success rate
#: or quality; its ABSTRACTION edges; whether it has steps (HAS_STEP); the meta-concept documents
#: and who exhibits them (EXHIBITS: kbgraph.search.student.kept_concepts).
CHANGES_SEARCHED = frozenset({
    "experience_upsert", "experience_merge", "experience_delete", "step_upsert", "step_texts_migrate",
    "maintenance_archive", "maintenance_restore",
    "abstract_experiences_refresh", "abstract_experiences_rewrite",
    "abstract_experiences_dissolve", "abstract_experiences_dissolve_ids",
    "relation_upsert", "relations_inferred_delete", "relations_inferred_delete_some",
    "namespace_delete",
    "meta_concepts_delete", "meta_concept_upsert", "meta_concept_link", "concept_insight_upsert",
})

#: The named query that writes, on the namespace's state node, the experiences a transaction's
#: writes changed (the change feed, see :data:`CHANGED_IDS` and kbgraph.store.change_feed).
NOTE = "search_change_note"
#: What joins the ids of one version's entry of the change feed (no id holds it: one that does
#: makes the entry "cannot say").
CHANGE_SEPARATOR = "\u001f"
#: The longest entry of the change feed (characters, ~900 ids): a transaction that changes more
#: experiences than that is noted "cannot say", and a search reads the namespace again, which is then
#: no slower. Every bump rewrites the state node's list, so the feed is kept short: 32 versions.
CHANGE_MAX_CHARS = 32_000


#: What a write changes, for the change feed: the experiences whose rows it changes and, of those,
#: the ones whose ABSTRACTION neighbours' rows it changes too (it changes their status, existence
#: or edges); None: it cannot say.
Changed = tuple[list[str], list[str]] | None
#: What a write returned, once it ran (None before).
Returned = Sequence[Mapping[str, Any]] | None


def _rows(*fields: str, joins: bool = False) -> Callable[[Mapping[str, Any], Returned], Changed]:
    def changed(params: Mapping[str, Any], _: Returned) -> Changed:
        ids = [str(row[f]) for row in params["rows"] for f in fields]
        return ids, ids if joins else []

    return changed


def _ids(params: Mapping[str, Any], _: Returned) -> Changed:
    return [str(i) for i in params["ids"]], [str(i) for i in params["ids"]]


def _returned(joins: str | None) -> Callable[[Mapping[str, Any], Returned], Changed]:
    """The ids a write returns (rows with ``id``), noted after it ran; ``joins`` names the column
    that says which of them change their neighbours' rows too (None: all of them)."""
    def changed(_: Mapping[str, Any], rows: Returned) -> Changed:
        if rows is None:
            return [], []
        return [str(row["id"]) for row in rows], [str(row["id"]) for row in rows if joins is None or row[joins]]

    return changed


def _cannot_say(params: Mapping[str, Any], rows: Returned) -> Changed:  # pylint: disable=unused-argument
    return None


def _restored(params: Mapping[str, Any], rows: Returned) -> Changed:
    return _ids(params, rows) if params.get("run") is None else None  # a run's: the query finds them


def _no_experience(params: Mapping[str, Any], rows: Returned) -> Changed:  # pylint: disable=unused-argument
    return [], []


def _merged(params: Mapping[str, Any], _: Returned) -> Changed:
    ids = [str(i) for g in params["groups"] for i in (g["canonical"], *g["merged_ids"])]
    return ids, ids


#: For each write of :data:`CHANGES_SEARCHED`, what it changes (:data:`Changed`), read from its
#: parameters or, once it ran, from the rows it returned. The ABSTRACTION neighbours of the second
#: list are added, as they are before the write and at the commit (kbgraph.store.change_feed). This is the change feed a search's kept rows
#: follow (kbgraph.search.student.change_feed): an id left out would leave a kept row stale, so a
#: write that is not named here cannot say.
CHANGED_IDS: Mapping[str, Callable[[Mapping[str, Any], Returned], Changed]] = {
    # A new experience has no edges; an existing one keeps its status (set on creation only).
    "experience_upsert": _rows("id"),
    "experience_merge": _merged,
    "experience_delete": _ids,
    "step_upsert": _rows("experience_id"),
    "step_texts_migrate": _cannot_say,
    "maintenance_archive": _rows("id", joins=True),
    "maintenance_restore": _restored,
    # Its rows' own values; one dissolved before comes back (``back``): its members' rows change.
    "abstract_experiences_refresh": _returned("back"),
    "abstract_experiences_rewrite": _rows("id"),
    "abstract_experiences_dissolve": _returned(None),
    "abstract_experiences_dissolve_ids": _ids,
    # An ABSTRACTION edge is in its two ends' rows.
    "relation_upsert": _rows("source_id", "target_id"),
    "relations_inferred_delete": _cannot_say,
    "relations_inferred_delete_some": _rows("source_id", "target_id"),
    "namespace_delete": _cannot_say,
    # Meta-concepts and EXHIBITS edges are in no experience's kept rows (only in the documents').
    "meta_concepts_delete": _no_experience, "meta_concept_upsert": _no_experience,
    "meta_concept_link": _no_experience, "concept_insight_upsert": _no_experience,
}


def changed_ids(name: str, params: Mapping[str, Any], rows: Returned = None) -> Changed:
    """What named write ``name`` changes with ``params`` (:data:`CHANGED_IDS`), before it runs or,
    with the ``rows`` it returned, after; None when it cannot say."""
    try:
        return CHANGED_IDS.get(name, _cannot_say)(params, rows)
    except (KeyError, TypeError):  # parameters of another shape than the query's own: cannot say
        return None


#: The named writes that change what a search reads of its candidates and hits besides the search
#: version's rows: quality, usage impact and last use (feedback_used), the task outcomes
#: (feedback_outcome), the counters and step rewards a hit shows (feedback_retrieved,
#: feedback_step_rewards), its failure modes (failure_mode_upsert). Each bumps a feedback stripe
#: first in its transaction (:func:`feedback_bump_first`), unless the transaction gave the namespace
#: a new search version already, which the feedback version begins with.
CHANGES_FEEDBACK = frozenset({
    "feedback_used", "feedback_outcome", "feedback_retrieved", "feedback_step_rewards", "failure_mode_upsert",
})

#: Named writes that reach experiences but leave what is searched as a whole as it was, and why.
LEAVES_SEARCHED: Mapping[str, str] = {
    "feedback_used": "quality: a search filtering on min_quality > 0 does not use the version; it bumps the "
                     "feedback version (CHANGES_FEEDBACK)",
    "feedback_retrieved": "a counter no search filters on; it bumps the feedback version (CHANGES_FEEDBACK)",
    "feedback_outcome": "Outcome nodes and HAD_OUTCOME edges: it bumps the feedback version (CHANGES_FEEDBACK)",
    "feedback_step_rewards": "step rewards: it bumps the feedback version (CHANGES_FEEDBACK)",
    "experiences_unlinked_clear": "the consolidation's marks",
    "experience_content_claims": "locks the state node, writes nothing searched",
    "failure_mode_upsert": "FailureMode nodes, HAS_FAILURE edges: it bumps the feedback version (CHANGES_FEEDBACK)",
    "step_link_next": "NEXT edges between steps",
    "experience_vector_bytes_fill": "the bytes of vectors the experience holds, the same values: a search reads "
                                    "the same vectors either way",
    **{name: "the importer renews the version after each batch (RENEW, kbgraph.transfer)" for name in (
        "import_merge_experience", "import_node_values", "import_rel_abstraction", "import_rel_has_step",
        "import_merge_step_text", "import_rel_says", "import_merge_meta_concept")},
    "import_relationship_values": "relationship properties",
    "import_rel_exhibits": "EXHIBITS edges", "import_rel_has_failure": "HAS_FAILURE edges",
    "import_rel_had_outcome": "HAD_OUTCOME edges", "import_rel_composition": "COMPOSITION edges",
    "import_rel_adaptation": "ADAPTATION edges", "import_rel_alternative": "ALTERNATIVE edges",
    "import_rel_next": "NEXT edges", "import_rel_has_vector": "HAS_VECTOR edges",
    "import_rel_in_domain": "IN_DOMAIN edges", "import_rel_about": "ABOUT edges",
    "import_rel_from": "FROM edges", "import_rel_instance_of": "INSTANCE_OF edges",
    "import_rel_performed": "PERFORMED edges",
}

# The transactions that bumped already, and for which namespaces (a transaction is one thread's).
_bumped: WeakKeyDictionary[Any, set[tuple[str, str]]] = WeakKeyDictionary()
_lock = Lock()


def bump_first(runner: Any, name: str, params: Mapping[str, Any], transaction: bool) -> str | None:
    """The namespace whose search version must be bumped in ``runner`` before named query ``name``
    runs there with ``params``, or None: ``name`` changes nothing searched, or ``runner`` (a
    ``transaction``) bumped that namespace already. In an auto-commit session the bump is a
    statement of its own, run first (``namespace_delete`` deletes the state node anyway)."""
    return _first(runner, name, params, transaction, CHANGES_SEARCHED, "search")


def feedback_bump_first(runner: Any, name: str, params: Mapping[str, Any], transaction: bool) -> str | None:
    """As :func:`bump_first`, for the feedback version (:data:`CHANGES_FEEDBACK`): None also when
    ``runner`` bumped the namespace's search version already (an ingest writing failure modes after
    its experiences), which the feedback version begins with: no stripe is locked after the state
    node."""
    return _first(runner, name, params, transaction, CHANGES_FEEDBACK, "feedback", also=("search",))


def _first(runner: Any, name: str, params: Mapping[str, Any], transaction: bool, changes: frozenset[str],
           version: str, also: tuple[str, ...] = ()) -> str | None:
    """The namespace to bump ``version`` of before ``name``, or None when ``name`` is not among
    ``changes`` or ``runner`` (a ``transaction``) bumped it, or one of ``also``, already."""
    kb = params.get("kb")
    if name not in changes or not isinstance(kb, str):
        return None
    if not transaction:
        return kb
    with _lock:
        done = _bumped.setdefault(runner, set())
        if any((bumped, kb) in done for bumped in (version, *also)):
            return None
        done.add((version, kb))
    return kb


def _bumps(runner: Any, name: str, params: Mapping[str, Any], transaction: bool) -> list[tuple[str, dict[str, Any]]]:
    """The bumps to run in ``runner`` before ``name``: the search version's, then a feedback
    stripe's."""
    bumps: list[tuple[str, dict[str, Any]]] = []
    if (kb := bump_first(runner, name, params, transaction)) is not None:
        bumps.append((BUMP, {"kb": kb}))
    if (kb := feedback_bump_first(runner, name, params, transaction)) is not None:
        bumps.append((FEEDBACK_BUMP, {"kb": kb, "stripe": random.randrange(FEEDBACK_STRIPES)}))
    return bumps


def bump_search_version(runner: neo4j.Session | neo4j.Transaction | neo4j.ManagedTransaction, name: str,
                        params: Mapping[str, Any]) -> None:
    """Bumps, in ``runner``, the search version of the namespace named query ``name`` is about to
    change what is searched of, if it does and ``runner`` has not bumped it yet; and the same for
    its feedback version."""
    for bump, values in _bumps(runner, name, params, not isinstance(runner, neo4j.Session)):
        runner.run(query(bump), values).consume()


async def bump_search_version_async(runner: neo4j.AsyncSession | neo4j.AsyncTransaction | neo4j.AsyncManagedTransaction,
                                    name: str, params: Mapping[str, Any]) -> None:
    """:func:`bump_search_version` on the async driver."""
    for bump, values in _bumps(runner, name, params, not isinstance(runner, neo4j.AsyncSession)):
        await (await runner.run(query(bump), values)).consume()
