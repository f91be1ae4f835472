"""A LangGraph long-term memory store on kbgraph's Neo4j: ``KbgraphStore`` is a complete
``langgraph.store.base.BaseStore``, so ``builder.compile(store=KbgraphStore(kb))``, LangGraph's
injected-store tools and langmem's memory tools keep their memories in the same database as
kbgraph's experiences, isolated per kbgraph namespace, visible in Cypher and the Browser::

    MATCH (i:StoreItem {kb: 'default'}) RETURN i.namespace, i.key, i.value

An item is a ``(:StoreItem {kb, path, key, namespace, value, created_at, updated_at,
ttl_minutes, expires_at})`` node (``value`` is its JSON text; ``path`` the namespace encoded so a
namespace prefix is a string prefix); each indexed field of it is a ``(:StoreVector {embedding})``
behind ``HAS_VECTOR``, in the ``store_vector_embedding`` vector index, embedded by kbgraph's
embedder (or the ``embed`` of ``index``).

Two namespaces are reserved (root ``"kbgraph"``) and make the store more than a key-value store:

* ``("kbgraph", "trajectories")``: putting a trajectory (a dict of kbgraph's trajectory format,
  validated the same way as ``kb.add_trajectories``) ingests it into kbgraph's memory; the item
  itself is kept like any other.
* ``("kbgraph", "experiences")``: read-only. Searching it runs kbgraph's search (the ``query`` is
  the task; ``filter`` may hold ``domain`` and ``agent``) and returns the ranked experiences as
  ``SearchItem`` s whose value is the experience as a plan (problem, goal, steps, pitfalls with
  their recoveries), the score and the explanation; getting a key returns that experience.

Search without a query lists the newest items first (``InMemoryStore`` keeps insertion order;
the order is not part of ``BaseStore``'s contract). Filters apply in kbgraph after the items under
the prefix are read, so a filtered search reads the whole prefix; a query over more than
``exact_scan_max`` items asks the vector index first (on Neo4j 2026 for this knowledge base's
vectors only) and falls back to the exact scan when the index cannot fill the page
(:mod:`kbgraph.search.candidates`; both limits default to the knowledge base's search settings).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from kbgraph.integrations.store_sweeper import TtlSweeper
from kbgraph.integrations.store_rows import PlannedPut, item_of, now as _now
from kbgraph.integrations.store_values import (
    check_address,
    check_filter,
    check_query,
    check_ttl,
    check_vectors,
    encode_path,
    item_id,
    list_namespaces,
    matches_filter,
    value_text,
)
from kbgraph.search.candidates import index_query, nearest
from kbgraph.search.scoring import neo4j_to_cosine

from kbgraph.async_kb import AsyncKnowledgeBase
from kbgraph.kb import KnowledgeBase

if TYPE_CHECKING:
    from kbgraph.core.models import Trajectory

RESERVED_ROOT = "kbgraph"
TRAJECTORIES: tuple[str, ...] = (RESERVED_ROOT, "trajectories")
EXPERIENCES: tuple[str, ...] = (RESERVED_ROOT, "experiences")

__all__ = ["EXPERIENCES", "TRAJECTORIES", "KbgraphStore"]

_ASYNC_ONLY = ("KbgraphStore over an AsyncKnowledgeBase answers the async methods only (aget, aput, asearch, "
               "adelete, alist_namespaces, abatch): pass a KnowledgeBase for the synchronous ones")


class KbgraphStore(BaseStore):
    """LangGraph's ``BaseStore`` over an open :class:`~kbgraph.kb.KnowledgeBase` (its namespace,
    driver and embedder); see the module docstring. Over an :class:`~kbgraph.AsyncKnowledgeBase`
    the async methods (``aget``, ``aput``, ``asearch``, ``abatch`` …) run on the event loop and
    the synchronous ones are refused.

    ``index``: LangGraph's ``IndexConfig`` — ``fields`` (JSON paths of the value to embed, default
    the whole value), ``dims`` (must equal the embedder's) and optionally ``embed`` (any embedder
    LangGraph accepts; default kbgraph's). Without it, searches ignore ``query``.
    ``ttl``: LangGraph's ``TTLConfig`` (``default_ttl`` in minutes, ``refresh_on_read``,
    ``sweep_interval_minutes`` for :meth:`start_ttl_sweeper`).
    """

    supports_ttl = True

    def __init__(self, kb: KnowledgeBase | AsyncKnowledgeBase, *, index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None, exact_scan_max: int | None = None, overfetch_limit: int | None = None):
        self._async = kb if isinstance(kb, AsyncKnowledgeBase) else None
        self._kb = kb if isinstance(kb, KnowledgeBase) else None
        self.ttl_config = ttl
        #: The knowledge base's scan limits (``[search]``), with this store's own where it gives them.
        self.scan = kb.settings.search.scan.overridden(exact_scan_max, overfetch_limit)
        self.index_config = dict(index) if index is not None else None
        self._embeddings: Any = None
        self._fields: list[tuple[str, Any]] = []
        if index is not None:
            dims = index.get("dims", kb.embedder.dimension)
            if dims != kb.embedder.dimension:
                raise ValueError(f"index dims {dims} differ from the {kb.embedder.dimension} of kbgraph's vector index "
                                 f"(its embedder {kb.embedder.name})")
            embed = index.get("embed")
            self._embeddings = ensure_embeddings(embed) if embed is not None else None
            self._fields = [(p, tokenize_path(p) if p != "$" else p) for p in (index.get("fields") or ["$"])]
        self._sweeper = TtlSweeper(self.sweep_ttl)

    # -- BaseStore -------------------------------------------------------------------------------

    @property
    def kb(self) -> KnowledgeBase:
        if self._kb is None:
            raise TypeError(_ASYNC_ONLY)
        return self._kb

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs the operations in order; as in LangGraph's stores, reads see the state before this
        batch's puts, and of two puts to one item the last wins. Every put is checked (namespace,
        value, TTL, trajectory) before anything is written."""
        if self._async is not None:
            raise TypeError(_ASYNC_ONLY)
        return self._batch(list(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if self._async is None:
            # A KnowledgeBase's driver and embedder are synchronous: the batch runs in a worker
            # thread so the event loop stays free.
            return await asyncio.get_running_loop().run_in_executor(None, self._batch, ops)
        ingests = any(isinstance(op, PutOp) and tuple(op.namespace) == TRAJECTORIES for op in ops)
        return await (self._async.run_ingesting if ingests else self._async.run)(self._batch_over, ops)

    def _batch_over(self, kb: KnowledgeBase, ops: list[Op]) -> list[Result]:
        # The AsyncKnowledgeBase's own KnowledgeBase: its queries go through the AsyncDriver, so
        # it answers inside AsyncKnowledgeBase.run only (which batch refuses to leave).
        self._kb = kb
        return self._batch(ops)

    def _batch(self, ops: list[Op]) -> list[Result]:
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            self._check(op)
            if isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = op
        planned = self._plan_puts(list(puts.values()))
        results: list[Result] = [None] * len(ops)
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            for (i, _), item in zip(gets, self._get([op for _, op in gets]), strict=True):
                results[i] = item
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list_namespaces(op)
        self._write(planned)
        return results

    # -- checks ----------------------------------------------------------------------------------

    @staticmethod
    def _check(op: Op) -> None:
        if not isinstance(op, (GetOp, SearchOp, PutOp, ListNamespacesOp)):
            raise ValueError(f"Unknown operation type: {type(op)}")
        validate_op_namespace(op)  # LangGraph's own rules for labels (strings, no periods, …)
        if isinstance(op, (GetOp, PutOp)):
            check_address(op.namespace, op.key if isinstance(op.key, str) else None)
        elif isinstance(op, SearchOp):
            check_address(op.namespace_prefix)
            check_query(op.query)
        if isinstance(op, PutOp):
            namespace = tuple(op.namespace)
            if not namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if namespace[0] == "langgraph":
                raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
            if namespace == EXPERIENCES:
                raise InvalidNamespaceError(f"{EXPERIENCES} is read-only: kbgraph's experiences come from ingested "
                                            f"trajectories (put them in {TRAJECTORIES})")
            if namespace[0] == RESERVED_ROOT and namespace != TRAJECTORIES:
                raise InvalidNamespaceError(f"the root label {RESERVED_ROOT!r} is reserved for {TRAJECTORIES} and "
                                            f"{EXPERIENCES}; got {namespace}")
            if not isinstance(op.key, str) or not op.key:
                raise InvalidNamespaceError(f"item keys are non-empty strings; got {op.key!r} in {namespace}")
            if op.value is not None and not isinstance(op.value, Mapping):
                raise TypeError(f"an item's value is a dict, not {type(op.value).__name__} ({namespace}, {op.key!r})")
        elif isinstance(op, SearchOp):
            check_filter(op.filter)
            if op.limit < 0 or op.offset < 0:
                raise ValueError(f"limit and offset are not negative (limit {op.limit}, offset {op.offset})")

    def _plan_puts(self, puts: list[PutOp]) -> list[PlannedPut]:
        """Everything a put writes, computed (and checked) before the first write."""
        planned: list[PlannedPut] = []
        texts: list[tuple[PlannedPut, str, str]] = []
        for op in puts:
            where = f"{tuple(op.namespace)}/{op.key}"
            plan = PlannedPut(op, item_id(op.namespace, op.key))
            if op.value is not None:
                plan.value = value_text(op.value, where)
                plan.ttl = check_ttl(op.ttl, where)
                if tuple(op.namespace) == TRAJECTORIES:
                    from kbgraph.tools import parse_trajectory
                    plan.trajectory = parse_trajectory(dict(op.value))  # InvalidInputError names the field
                if self.index_config is not None and op.index is not False:
                    fields = self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
                    for path, tokens in fields:
                        found = get_text_at_path(op.value, tokens)
                        for n, text in enumerate(found):
                            texts.append((plan, f"{path}.{n}" if len(found) > 1 else path, text))
            planned.append(plan)
        if texts:
            vectors = self._embed([t for *_, t in texts])
            check_vectors(vectors, [f"{tuple(p.op.namespace)}/{p.op.key}: {path}" for p, path, _ in texts],
                          self.kb.embedder.dimension)
            for (plan, path, _), vector in zip(texts, vectors, strict=True):
                plan.vectors.append({"id": f"{plan.id}#{path}", "field": path, "embedding": vector})
        return planned

    # -- reads -----------------------------------------------------------------------------------

    def _get(self, ops: list[GetOp]) -> list[Item | None]:
        found: dict[str, Item] = {}
        plain = [op for op in ops if tuple(op.namespace) != EXPERIENCES]
        if plain:
            wanted = sorted({item_id(op.namespace, op.key) for op in plain})
            rows = self.kb.gateway.read("store_get", kb=self.kb.namespace, wanted=wanted, now=_now())
            found.update((row["id"], item_of(row)) for row in rows)
            refreshed = {item_id(op.namespace, op.key) for op in plain if op.refresh_ttl}
            self._refresh([row["id"] for row in rows if row["ttl"] is not None and row["id"] in refreshed])
        for op in ops:
            if tuple(op.namespace) == EXPERIENCES and (experience := self.kb.get(op.key)) is not None:
                from kbgraph.tools import experience_details
                value = experience_details(experience, None).model_dump(mode="json")
                found[item_id(EXPERIENCES, op.key)] = Item(namespace=EXPERIENCES, key=op.key, value=value,
                                                           created_at=experience.created_at, updated_at=experience.created_at)
        return [found.get(item_id(op.namespace, op.key)) for op in ops]

    def _refresh(self, expiring: Sequence[str]) -> None:
        """Items with a TTL read with ``refresh_ttl`` expire a TTL after now again (one write;
        none when no item read has a TTL)."""
        if expiring:
            self.kb.gateway.write("store_refresh_ttl", kb=self.kb.namespace, now=_now(), wanted=list(expiring))

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if prefix == EXPERIENCES:
            return self._search_experiences(op)
        if op.limit == 0:
            return []
        path = encode_path(prefix)
        vector = self._embed_query(op.query) if op.query and self.index_config is not None else None
        params = {"kb": self.kb.namespace, "prefix": path, "now": _now()}
        if vector is not None:
            rows = self._nearest(op, vector, params)
        elif op.filter:
            rows = self._scan(op, None, params)[op.offset: op.offset + op.limit]
        else:
            rows = self._scan(op, None, params)  # read as the page itself
        items = [item_of(row, score=neo4j_to_cosine(row["score"]) if row.get("score") is not None else None)
                 for row in rows]
        if op.refresh_ttl:
            self._refresh([r["id"] for r in rows if r["ttl"] is not None])
        return items

    def _nearest(self, op: SearchOp, vector: list[float], params: dict[str, Any]) -> list[dict[str, Any]]:
        """The page, best first: the exact scan of the prefix when it holds at most
        ``exact_scan_max`` items, else the vector index, falling back to the scan when the index
        cannot fill the page (other namespaces' items, or a filter that keeps too few)."""
        wanted = op.offset + op.limit
        query = index_query(self.kb.gateway, "store_search_vectors", "store_vector_embedding")

        def fetch(n: int) -> tuple[int, list[dict[str, Any]]]:
            row = self.kb.gateway.read(query, fetch=n, vector=vector, **params)[0]
            return int(row["fetched"]), [r for r in row["rows"] if matches_filter(json.loads(r["value"]), op.filter)]

        rows = nearest(self.scan, self._count(params["prefix"]), wanted,
                       scan=lambda: self._scan(op, vector, params), fetch=fetch, first=max(wanted * 4, 40),
                       fall_back=True).rows
        return list(rows[op.offset: wanted])

    def _scan(self, op: SearchOp, vector: list[float] | None, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Every item under the prefix that passes the filter, best first for a query (stable: ties
        stay newest first; items without vectors last), newest first without one. Without a query or
        a filter, only the page is read."""
        paged = vector is None and not op.filter
        rows: list[dict[str, Any]] = self.kb.gateway.read(
            "store_search_scan", vector=vector, skip=op.offset if paged else 0, limit=op.limit if paged else None,
            **params)
        rows = [r for r in rows if matches_filter(json.loads(r["value"]), op.filter)]
        if vector is not None:
            scored = sorted((r for r in rows if r["score"] is not None), key=lambda r: -float(r["score"]))
            rows = scored + [r for r in rows if r["score"] is None]
        return rows

    def _count(self, path: str) -> int:
        return int(self.kb.gateway.read("store_count", kb=self.kb.namespace, prefix=path)[0]["items"])

    def _search_experiences(self, op: SearchOp) -> list[SearchItem]:
        if not op.query or op.limit == 0:
            return []
        conditions = dict(op.filter or {})
        unknown = set(conditions) - {"domain", "agent"}
        if unknown:
            from kbgraph.core.errors import InvalidInputError
            raise InvalidInputError([f"filter: {key}: searching {EXPERIENCES} filters on domain and agent only"
                                     for key in sorted(unknown)], "invalid search filter")
        from kbgraph.tools import search_result
        results = self.kb.search(op.query, domain=conditions.get("domain"), agent=conditions.get("agent"),
                                 k=op.offset + op.limit)
        now = _now()
        return [
            SearchItem(namespace=EXPERIENCES, key=hit.id, value=hit.model_dump(mode="json"),
                       created_at=now, updated_at=now, score=hit.score)
            for hit in search_result(results).experiences[op.offset:]
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        rows = self.kb.gateway.read("store_namespaces", kb=self.kb.namespace, now=_now())
        namespaces = [tuple(r["namespace"]) for r in rows]
        if self.kb.count() > 0:
            namespaces.append(EXPERIENCES)
        conditions = [(c.match_type, tuple(c.path)) for c in op.match_conditions or ()]
        return list_namespaces(namespaces, conditions, op.max_depth, op.limit, op.offset)

    # -- writes ----------------------------------------------------------------------------------

    def _write(self, planned: list[PlannedPut]) -> None:
        if not planned:
            return
        trajectories = [p.trajectory for p in planned if p.trajectory is not None]
        if trajectories:
            self.kb.add_trajectories(trajectories)
        now = _now()
        items = [{"id": p.id, "path": encode_path(p.op.namespace), "key": p.op.key, "namespace": list(p.op.namespace),
                  "value": p.value, "ttl": p.ttl, "vectors": p.vectors} for p in planned if p.value is not None]
        deleted = [p.id for p in planned if p.value is None]
        calls: list[tuple[str, dict[str, Any]]] = []
        if items:
            calls.append(("store_put", {"kb": self.kb.namespace, "items": items, "now": now}))
        if deleted:
            calls.append(("store_delete", {"kb": self.kb.namespace, "wanted": deleted}))
        self.kb.gateway.write_all(calls)

    # -- embedding ------------------------------------------------------------------------------

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if self._embeddings is not None:
            return [list(map(float, v)) for v in self._embeddings.embed_documents(texts)]
        return [list(map(float, v)) for v in self.kb.embedder.embed(texts)]

    def _embed_query(self, text: str) -> list[float]:
        if self._embeddings is None:
            return self._embed([text])[0]
        vector = [float(x) for x in self._embeddings.embed_query(text)]
        check_vectors([vector], ["query"], self.kb.embedder.dimension)
        return vector

    # -- TTL -------------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Deletes the items whose TTL has run out; returns how many (they are already invisible)."""
        if self._async is not None:
            raise TypeError(_ASYNC_ONLY)
        return int(self.kb.gateway.write("store_sweep", kb=self.kb.namespace, now=_now())[0]["swept"])

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> threading.Thread:
        """Sweeps expired items every ``sweep_interval_minutes`` (default: the TTL config's, else
        5) in a daemon thread until :meth:`stop_ttl_sweeper`."""
        if self._async is not None:
            raise TypeError(_ASYNC_ONLY)
        return self._sweeper.start(sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the sweeper; True when it has stopped within ``timeout`` seconds."""
        return self._sweeper.stop(timeout)

