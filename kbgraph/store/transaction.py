"""Work that reads and writes through the gateway's interface and commits ONCE.

:func:`in_one_transaction` opens one explicit write transaction and hands ``work`` a
:class:`TransactionGateway`: the gateway's interface (``read``, ``write``, ``write_all`` …) with
every statement run in that transaction — reads see what ``work`` wrote before them — and the
transaction committed when ``work`` returns. An exception from ``work`` (a ``verify`` that refuses,
a problem of the input, anything) rolls the whole of it back. Adding a run is such work
(kbgraph.ingest.one_transaction): before, each of its eight steps committed on its own.

An error the driver would retry (a deadlock, a transient error, a connection lost) rolls back
and runs ``work`` again from the start, on the schedule of
:func:`kbgraph.store.retry.retried`: ``work`` must be safe to run again, so it keeps what it
learns for after the commit. Each statement is bounded as the gateway bounds its calls
(``timeout_s``, then a ping), so a frozen server fails the work instead of hanging it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, ClassVar, Protocol, TypeVar

import neo4j

from kbgraph.store.deadline import Neo4jTimeoutError, within
from kbgraph.store.change_feed import flush_notes
from kbgraph.store.gateway import Neo4jGateway, Row, run_named
from kbgraph.store.retry import guarded, retried

__all__ = ["DeletedInTransaction", "OpenTransaction", "TransactionGateway", "in_one_transaction"]

#: What Neo4j answers when a statement reaches a node an earlier statement of the same transaction
#: deleted (seen in a consolidation that merged, then counted, within one add: 5.26).
ENTITY_NOT_FOUND = "Neo.ClientError.Statement.EntityNotFound"


class DeletedInTransaction(RuntimeError):
    """A statement of the one transaction reached what the transaction had deleted: the work was
    rolled back whole, and is to be done again in several transactions, each seeing what the last
    committed."""

T = TypeVar("T")


class OpenTransaction(Protocol):
    """One explicit write transaction, as a gateway opens it (:meth:`Neo4jGateway.open_transaction`)."""

    def run(self, name: str, params: dict[str, Any]) -> list[Row]: ...

    def commit(self) -> None: ...

    def close(self) -> None:
        """Ends it: rolled back unless committed. Quiet: a rollback that fails (the server gone)
        is the server's to finish, and the error that led here is the one to report."""


class SyncTransaction:
    """:class:`OpenTransaction` on the synchronous driver, each statement bounded by ``within``."""

    def __init__(self, gateway: Neo4jGateway):
        self.gateway = gateway
        self.session = gateway.session()
        try:
            self.tx = within(gateway.timeout_s, "begin", self.session.begin_transaction, gateway.still_there)
        except Neo4jTimeoutError:
            raise  # abandoned with its connection
        except BaseException:
            self.session.close()
            raise

    def run(self, name: str, params: dict[str, Any]) -> list[Row]:
        return within(self.gateway.timeout_s, name, lambda: run_named(self.tx, name, params), self.gateway.still_there)

    def commit(self) -> None:
        def flushed_commit() -> None:
            flush_notes(self.tx)  # the change feed's entry (kbgraph.store.change_feed)
            self.tx.commit()

        within(self.gateway.timeout_s, "commit", flushed_commit, self.gateway.still_there)

    def close(self) -> None:
        try:
            within(self.gateway.timeout_s, "rollback", self.tx.close, self.gateway.still_there)
            within(self.gateway.timeout_s, "closing a session", self.session.close, self.gateway.still_there)
        except Exception:  # see OpenTransaction.close
            pass


class TransactionGateway(Neo4jGateway):
    """The gateway's interface over one open transaction (see the module's docstring). Waiting
    and running things side by side are the outer gateway's; queries that manage their own
    transactions (``auto_commit``, schema statements) have no place in one and are refused."""

    background_reads: ClassVar[bool] = False  # one transaction, one thread

    def __init__(self, outer: Neo4jGateway, tx: OpenTransaction):  # pylint: disable=super-init-not-called
        # Not Neo4jGateway.__init__: nothing of its own to connect; the outer gateway's settings.
        self.outer, self.tx = outer, tx
        self.driver, self.database = outer.driver, outer.database
        self.timeout_s, self.bulk_timeout_s, self.retry_time_s = outer.timeout_s, outer.bulk_timeout_s, outer.retry_time_s
        self.sleep, self.clock = outer.sleep, outer.clock
        self._address = None

    def read(self, name: str, **params: Any) -> list[Row]:
        return self.tx.run(name, params)

    def _write(self, calls: Sequence[tuple[str, dict[str, Any]]], verify: Callable[[list[list[Row]]], None] | None,
               retry_time_s: float) -> list[list[Row]]:
        results = [self.tx.run(name, params) for name, params in calls]
        if verify is not None:
            verify(results)  # what it raises rolls the whole transaction back
        return results

    def auto_commit(self, name: str, **params: Any) -> list[Row]:
        raise RuntimeError(f"{name} manages its own transactions: it cannot run inside one")

    def run_statement(self, statement: str, params: dict[str, Any]) -> None:
        raise RuntimeError("a schema statement cannot run inside a transaction of writes")

    def answers(self) -> bool:
        return self.outer.answers()

    def still_there(self) -> bool:
        return self.outer.still_there()

    def pause(self, seconds: float) -> None:
        self.outer.pause(seconds)

    def every(self, seconds: float, call: Callable[[], Any]) -> Callable[[], None]:
        return self.outer.every(seconds, call)

    def spawn_pool(self, workers: int, name: str) -> Executor:
        raise RuntimeError("one transaction runs its statements one after the other, not side by side")


def in_one_transaction(gateway: Neo4jGateway, what: str, work: Callable[[TransactionGateway], T]) -> T:
    """``work(tx_gateway)``'s result, everything it wrote committed in ONE transaction (module
    docstring); ``work`` runs again from the start after an error the driver would retry."""
    def attempt() -> T:
        tx = gateway.open_transaction()
        try:
            result = work(TransactionGateway(gateway, tx))
            tx.commit()
        except Neo4jTimeoutError:
            raise  # the server stopped answering: abandoned with its connection, as a call is (deadline.py)
        except BaseException:
            tx.close()
            raise
        tx.close()
        return result

    try:
        return guarded(what, lambda: retried(attempt, gateway.retry_time_s, gateway.pause, gateway.clock),
                       gateway.driver)
    except neo4j.exceptions.ClientError as error:
        if error.code == ENTITY_NOT_FOUND:
            raise DeletedInTransaction(f"{what}: {error.message}") from error
        raise
