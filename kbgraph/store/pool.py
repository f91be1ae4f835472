"""What kbgraph says when a call found no free connection in the driver's pool (issue 55).

The driver raises the same ``ConnectionAcquisitionTimeoutError`` ("failed to obtain a connection
from the pool within 15.0s") whether every connection was in use by other calls or the wait ran
out otherwise: a connection being opened holds its place in the pool, and on a CPU-starved
machine opening one (or merely getting the pool's lock) can take the whole wait. The message is
worded from the pool as the error left it: how many of its connections were in use, of how many
it may hold.

The driver offers no public view of its pool: :func:`pool_occupancy` reads its internals, in this
one place, and answers None (a neutral message) when they are not what it knows
(tests/kbgraph/store/test_pool.py pins them for the installed driver).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import neo4j

from kbgraph.core.errors import Neo4jUnavailableError

__all__ = ["PoolOccupancy", "pool_exhausted", "pool_occupancy"]


@dataclass(frozen=True)
class PoolOccupancy:
    in_use: int  # connections handed to calls
    opening: int  # connections being opened (each holds a place)
    limit: int  # the most the pool holds (max_connection_pool_size)

    @property
    def full_of_calls(self) -> bool:
        return self.in_use >= self.limit


def pool_occupancy(driver: Any) -> PoolOccupancy | None:
    """``driver``'s pool now (sync or async driver), or None when its internals are unknown."""
    pool: Any = getattr(driver, "_pool", None)
    try:
        limit = int(pool.pool_config.max_connection_pool_size)
        with pool.lock:
            in_use = sum(1 for held in pool.connections.values() for c in list(held) if c.in_use)
            opening = sum(int(n) for n in pool.connections_reservations.values())
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return None
    return PoolOccupancy(in_use, opening, limit)


def pool_exhausted(what: str, error: neo4j.exceptions.ConnectionAcquisitionTimeoutError,
                   occupancy: PoolOccupancy | None = None) -> Neo4jUnavailableError:
    """kbgraph's error, in one line, for a call that waited the driver's connection acquisition
    timeout (KBGRAPH_CONNECT_TIMEOUT_S when kbgraph opened the driver) and got no connection;
    ``occupancy``: the pool as the error left it (module docstring)."""
    waited = re.search(r"within (\S+?)s\b", str(error))
    bound = f"{float(waited.group(1)):g} s" if waited else "the connection acquisition timeout"
    if occupancy is None:
        why = "the pool's state is unknown"
    elif occupancy.full_of_calls:
        why = f"every one of its {occupancy.limit} connections was in use by other calls"
    else:
        why = (f"only {occupancy.in_use} of its {occupancy.limit} connections were in use"
               + (f" and {occupancy.opening} being opened" if occupancy.opening else "")
               + ": the wait went on opening a connection, this machine or Neo4j too slow to do it in time")
    return Neo4jUnavailableError(
        f"Neo4j was too busy for {what}: no connection of this process's pool came free within {bound} ({why}; "
        "KBGRAPH_CONNECT_TIMEOUT_S): nothing of this call was written; run it again")
