"""One KnowledgeBase per namespace (the ``X-Kbgraph-Namespace`` header), over one shared driver and embedder."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from kbgraph.core.settings import checked_namespace
from kbgraph.kb import KnowledgeBase
from kbgraph.store.step_texts import open_namespace

#: Namespaces whose KnowledgeBase is kept open; the least recently used one beyond is dropped
#: (opening one again is cheap: it shares the driver and the embedder).
MAX_OPEN_NAMESPACES = 256


class NamespacePool:
    """One KnowledgeBase per namespace, all over the driver and embedder of the first one.

    ``base`` is that first KnowledgeBase (its owner closes it), or a factory that opens it on the
    first call (Neo4j down: tried again on the next call; the pool then closes it). Other
    namespaces get a KnowledgeBase of their own (their own caches and namespace filter) sharing
    its driver, embedder, database and settings; the schema is database-wide, so it is not applied
    again. KnowledgeBase calls are thread-safe (concurrent ingests of one namespace queue on its lease).
    """

    def __init__(self, base: KnowledgeBase | Callable[[], KnowledgeBase], max_open: int = MAX_OPEN_NAMESPACES):
        if isinstance(base, KnowledgeBase):
            self._base: KnowledgeBase | None = base
            self._factory: Callable[[], KnowledgeBase] = lambda: base
            self._owns = False
        else:
            self._base = None
            self._factory = base
            self._owns = True
        self._others: OrderedDict[str, KnowledgeBase] = OrderedDict()
        self._max_open = max_open
        self._lock = threading.Lock()

    def base(self) -> KnowledgeBase:
        with self._lock:
            if self._base is None:
                self._base = self._factory()
            return self._base

    def get(self, namespace: str | None) -> KnowledgeBase:
        """The KnowledgeBase of ``namespace`` (None: the base's). A namespace is checked before
        anything is opened: an empty or malformed one never falls back to the default."""
        if namespace is not None:
            checked_namespace(namespace)
        base = self.base()
        if namespace is None or namespace == base.namespace:
            return base
        with self._lock:
            kb = self._others.get(namespace)
            if kb is None:
                kb = KnowledgeBase(
                    base.driver, base.embedder, namespace=namespace, database=base.gateway.database,
                    settings=base.settings.model_copy(update={"namespace": namespace}), ensure_schema=False,
                    browser_url=base.browser_url)
                self._others[namespace] = kb
                if len(self._others) > self._max_open:
                    # Dropped, not closed: a request may still be using it (it owns no driver).
                    self._others.popitem(last=False)
            else:
                self._others.move_to_end(namespace)
        # Outside the lock (a gateway call): a namespace written before gets one vector per step
        # text the first time this process opens it (the schema is the base's).
        open_namespace(kb.gateway, kb.embedder.dimension, namespace, schema=False)
        return kb

    def close(self) -> None:
        with self._lock:
            self._others.clear()
            if self._base is not None and self._owns:
                self._base.close()
                self._base = None
