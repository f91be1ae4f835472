"""Adding a run commits once (issue 53, point 2).

An add that fits in one write batch — a run or a few, as an agent loop hands them over — runs the
whole pipeline (pass 1's experiences, concepts, insights and record marks; pass 2's merges,
meta-concepts, documents, relations, workflows and marks cleared; the growth count) in ONE write
transaction (kbgraph.store.transaction): everything lands, or nothing. Before, it made eight
commits (the lease taken, the experiences, the insights and marks, the meta-concepts, the links,
the marks cleared, the lease given back, the growth count), and commits were three quarters of
its time.

Its first statement locks the namespace's state node until the commit
(kbgraph.ingest.lease.check_lease_free): adds and ingests of every process take turns on that
lock, as they took turns on the lease; an ingest of many transactions still holding the lease
makes the add roll back and wait. Everything else is read after the lock, in the transaction, so
the reads see the namespace as no other ingest can change it until the commit; the
compare-and-set of the facts version (kb_state_facts_version_set) and of the marks' stamps
(experiences_unlinked_clear) stay, for the writers that take no lease (delete, maintenance,
import). A transaction the server rolls back (a deadlock, a lost connection) is run again from
the start; what the add learnt for later (the link plan, the vectors read) is kept for this
process only once it has committed (:meth:`OneTransaction.settle`).

An add Neo4j refuses inside its one transaction (:class:`~kbgraph.store.transaction.DeletedInTransaction`)
is rolled back whole and written under the lease by the pipeline; each time is counted
(:data:`REFUSALS`, the report's ``one_transaction_refused``) and logged, for that way is a safety
net, not a path an add should take.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from kbgraph.core.models import Experience
from kbgraph.core.settings import Settings
from kbgraph.embedders import Embedder
from kbgraph.ingest.context import IngestContext
from kbgraph.ingest.failure_records import with_records
from kbgraph.ingest.group_commit import AddWork, Outcome, outcomes_of_group, queue_of
from kbgraph.store.vector_cache import PgVectorCache, VectorLoader
from kbgraph.ingest.lease import LeaseHeld, check_lease_free, process_turn, wait_for_lease
from kbgraph.ingest.link_state import LinkState, RememberedLinks
from kbgraph.store.experiences import ExperienceStore
from kbgraph.store.transaction import DeletedInTransaction, TransactionGateway, in_one_transaction
from kbgraph.store.writer import ExperienceWriter, WriteReport

__all__ = ["REFUSALS", "OneTransaction", "add_in_one_transaction", "count_refusal"]

T = TypeVar("T")
logger = logging.getLogger(__name__)


class _Refusals:
    """How many adds of this process Neo4j refused in their one transaction."""

    def __init__(self) -> None:
        self.count = 0


REFUSALS = _Refusals()


def count_refusal(refused: DeletedInTransaction) -> None:
    """Counts and logs (a warning) an add written under the lease because Neo4j refused its one
    transaction."""
    REFUSALS.count += 1
    logger.warning("%s; written under the lease instead (%d time(s) in this process)", refused, REFUSALS.count)


class StagedVectors(PgVectorCache):
    """The process's vector cache as an uncommitted add sees it: what the cache holds is used,
    what the add reads is kept aside (it may be an experience the add wrote, rolled back if it
    fails) until :meth:`settle`."""

    def __init__(self, shared: PgVectorCache):
        super().__init__(shared.max_entries)
        self.shared = shared

    def read_through(self, ids: Iterable[str], load: VectorLoader,
                     uncached: Iterable[str] = ()) -> dict[str, npt.NDArray[np.float32]]:
        wanted = list(dict.fromkeys(ids))
        known = self.shared.read_through(wanted, lambda _: [])  # what it holds; it loads nothing
        return known | super().read_through([i for i in wanted if i not in known], load, uncached)

    def settle(self) -> None:
        self.shared.keep(self.held())


class PendingLinks(RememberedLinks):
    """The process's remembered link plan as an uncommitted add sees it: taken from it at once
    (a failed add leaves nothing behind), kept again only after the commit (:meth:`settle`)."""

    def __init__(self, shared: RememberedLinks):
        super().__init__()
        self.shared = shared
        self._pending: tuple[LinkState, str, dict[str, int]] | None = None

    def take_any(self) -> tuple[LinkState, dict[str, int], str] | None:
        return self.shared.take_any()

    def keep(self, state: LinkState, version: str, relation_totals: dict[str, int]) -> None:
        self._pending = (state, version, dict(relation_totals))

    def clear(self) -> None:
        self._pending = None
        self.shared.clear()

    def settle(self) -> None:
        if self._pending is not None:
            self.shared.keep(*self._pending)


class OneTransaction:
    """The :class:`~kbgraph.ingest.context.IngestContext` of ``outer``'s namespace with every
    read and write in one open transaction (``gateway``)."""

    def __init__(self, outer: IngestContext, gateway: TransactionGateway):
        self.namespace: str = outer.namespace
        self.settings: Settings = outer.settings
        self.embedder: Embedder = outer.embedder
        self.gateway = gateway
        self.store = ExperienceStore(gateway, outer.namespace, outer.settings.write_batch_size)
        self.pg_vectors = StagedVectors(outer.pg_vectors)
        self.link_state = PendingLinks(outer.link_state)

    def add_experiences(
        self, items: Iterable[Experience | Mapping[str, Any]], on_progress: Callable[[int], None] | None = None,
        labels: Sequence[str] | None = None, maintain: bool = False,
    ) -> WriteReport:
        # Growth counted here is checked once, at the end of the add (kb_state_growth).
        return ExperienceWriter(self.store, self.embedder, with_records).add(items, on_progress, labels, count_growth=maintain)

    def embed_missing(self, experiences: Sequence[Experience]) -> None:
        ExperienceWriter(self.store, self.embedder).embed_missing(experiences)

    def settle(self) -> None:
        """After the commit: what the add learnt is the process's."""
        self.pg_vectors.settle()
        self.link_state.settle()


def add_in_one_transaction(kb: IngestContext, work: AddWork[T], on_wait: Callable[[str], None] | None = None) -> T:
    """``work`` run over ``kb``'s namespace in one write transaction, after this process's turn
    (kbgraph.ingest.lease.process_turn) and with the namespace's state node locked to the commit;
    while another ingest holds the lease, it waits (module docstring). Adds of ``kb`` waiting
    meanwhile are committed in the same transaction (ingest/group_commit.py)."""
    def commit_group(works: Sequence[AddWork[T]]) -> list[Outcome[T]]:
        return outcomes_of_group(works, lambda group: _committed(kb, group, on_wait))

    return queue_of(kb).run(work, lambda: process_turn(kb.gateway, kb.namespace, on_wait), commit_group, on_wait,
                            f"another add of this process is writing namespace {kb.namespace!r}; "
                            "waiting to be committed after it, with the adds waiting beside this one")


def _committed(kb: IngestContext, works: Sequence[AddWork[T]], on_wait: Callable[[str], None] | None) -> list[T]:
    """``works`` in one write transaction (the caller holds the process's turn): each one's
    writes, one consolidation, one growth check, each one's result; then the commit."""
    def attempt(gateway: TransactionGateway) -> tuple[list[T], OneTransaction]:
        check_lease_free(gateway, kb.namespace)
        context = OneTransaction(kb, gateway)
        for work in works:
            work.write(context)
        leader = works[0]
        leader.consolidate(context)
        row = gateway.write("kb_state_growth", kb=kb.namespace, added=0)[0]
        growth = (int(row["before"]), int(row["after"]))
        # The growth is checked once: the leader's caller runs maintenance if it is due; the others
        # see nothing crossed.
        return [work.finish(context, leader, len(works), growth if work is leader else (growth[1], growth[1]))
                for work in works], context

    told = False
    while True:
        try:
            results, context = in_one_transaction(kb.gateway, "adding runs", attempt)
        except LeaseHeld as held:
            if not told and on_wait is not None:
                on_wait(str(held))
                told = True
            wait_for_lease(kb.gateway)
            continue
        context.settle()
        return results
