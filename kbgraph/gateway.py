"""Runs kbgraph's named Cypher queries against one database. Knows nothing about experiences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import neo4j

from kbgraph.cypher_files import query

Row = dict[str, Any]


class Neo4jGateway:
    def __init__(self, driver: neo4j.Driver, database: str = "neo4j"):
        self.driver = driver
        self.database = database

    def read(self, name: str, **params: Any) -> list[Row]:
        """Runs a named query in READ access mode (retried on transient errors by the driver)."""
        records, _, _ = self.driver.execute_query(
            query(name), params, database_=self.database, routing_=neo4j.RoutingControl.READ
        )
        return [record.data() for record in records]

    def write(self, name: str, **params: Any) -> list[Row]:
        """Runs a named query in its own write transaction."""
        return self.write_all([(name, params)])[-1]

    def write_all(
        self, calls: Sequence[tuple[str, dict[str, Any]]],
        verify: Callable[[list[list[Row]]], None] | None = None,
    ) -> list[list[Row]]:
        """Runs several named queries in ONE write transaction: all of them land, or none.
        ``verify`` sees the results before the commit; whatever it raises rolls everything back."""

        def work(tx: neo4j.ManagedTransaction) -> list[list[Row]]:
            results = [[record.data() for record in tx.run(query(name), params)] for name, params in calls]
            if verify is not None:
                verify(results)
            return results

        with self.driver.session(database=self.database) as session:
            return session.execute_write(work)

    def auto_commit(self, name: str, **params: Any) -> list[Row]:
        """For queries that manage their own transactions (``CALL … IN TRANSACTIONS``)."""
        with self.driver.session(database=self.database) as session:
            return [record.data() for record in session.run(query(name), params)]
