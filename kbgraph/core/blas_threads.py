"""The process's BLAS thread pools, limited when a knowledge base opens (``Settings.blas_threads``).

kbgraph's own products are small: a query against the kept vectors, an add's step vectors against
the run's, the hits against each other. NumPy's OpenBLAS splits a product of that size over every
core and then keeps its idle threads spinning for a while, waiting for the next one. On a machine
whose cores Neo4j shares, that spin is CPU the server and the client's other threads lose: adding
one run to 10,000 experiences cost 44 ms of the client's CPU, 28 ms of them in OpenBLAS's idle
thread, and 17 ms on one BLAS thread, in less wall time (docs/performance.md).
"""

from __future__ import annotations

import threading

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
#: The limit last set in this process (None: none yet): looking the libraries up costs ~9 ms,
#: and a process opens knowledge bases often (a test suite, a worker per request).
_limited: int | None = None


def limit_blas_threads(threads: int) -> None:
    """Limits every BLAS library loaded in this process to ``threads`` threads; 0 leaves them as
    they are. Libraries loaded later (SciPy's, when a recluster imports it) keep their own."""
    global _limited
    if threads <= 0:
        return
    with _lock:
        if _limited == threads:
            return
        ThreadpoolController().limit(limits=threads, user_api="blas")
        _limited = threads
