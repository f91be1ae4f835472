"""The evaluation's namespaces are kept between runs (building one takes minutes), so each is checked
before it is used again: a namespace changed by anything else (feedback, maintenance, another
ingestion) would give other figures under the same name.

When the evaluation builds a namespace it stamps it with a :class:`Fingerprint` (a property of
the namespace's ``KbState`` node): a hash of the corpus files it was built from, its nodes counted
by label (``IngestedRecord``: the runs; ``Experience``; ``Step``: the workflows' steps; …) and a
hash of every node's properties (less the vectors) and relationships. Before a later run uses the
namespace, it is fingerprinted again; when anything differs it is cleared and built again, and
:func:`ready_namespace` says so. A namespace built before fingerprints were stamped is completed
by ingestion (idempotent, as before) and stamped with what it then holds.

The stamp also says when the namespace was built (``built_at``), and :func:`ready_namespace`
answers with that day (UTC): the evaluation searches the namespace as of that day
(``StudentRetriever.today``). Utility decays per calendar day since an experience was stored, so a
kept namespace searched by the clock would rank otherwise on each day it ages, and two runs of the
same code on either side of midnight would differ. A stamp made before the build time was kept
counts the namespace as built on the day its newest experience was stored (ingestion stores them
all while it builds, and nothing else can change them without changing the fingerprint), and is
stamped again with that time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from kbgraph.store.experiences import aware_datetime
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["BuildingKb", "Fingerprint", "corpus_digest", "fingerprint_of", "ready_namespace", "stamp", "stamped"]

IngestProgress = Callable[[str, int, int | None], None]
Note = Callable[[str], None]


class BuildingKb(Protocol):
    """What building an evaluation namespace needs of an open knowledge base."""

    @property
    def gateway(self) -> Neo4jGateway: ...
    def ingest(self, paths: Sequence[str | Path], skip_invalid: bool = False,
               on_progress: IngestProgress | None = None) -> Any: ...
    def clear(self) -> None: ...


class Fingerprint(BaseModel):
    """What an evaluation namespace was built from and what it holds."""

    #: sha256 of the corpus files' names and bytes, in the order they are ingested.
    corpus: str
    #: Nodes by label.
    counts: dict[str, int]
    #: sha256 of every node's properties (less the vectors) and outgoing relationships.
    contents: str
    #: When the namespace was built (UTC): its searches count utility up to that day. None: not
    #: known (a fingerprint of what the namespace holds now, or a stamp made before it was kept).
    built_at: datetime | None = None

    def matches(self, now: Fingerprint) -> bool:
        """The namespace holds now (``now``) what it held when stamped with this: the same corpus,
        counts and contents, whenever either was taken."""
        return (now.corpus, now.counts, now.contents) == (self.corpus, self.counts, self.contents)

    def differences(self, now: Fingerprint) -> list[str]:
        """What differs from this (stamped) fingerprint in ``now``, in words."""
        out = ["its corpus files changed"] if now.corpus != self.corpus else []
        for label in sorted({*self.counts, *now.counts}):
            built, held = self.counts.get(label, 0), now.counts.get(label, 0)
            if built != held:
                out.append(f"{label} {held} now, {built} when built")
        if now.contents != self.contents and now.counts == self.counts:
            out.append("the same counts, other contents")
        return out


def corpus_digest(files: Sequence[Path]) -> str:
    """sha256 of the files' names and contents, in order."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def fingerprint_of(gateway: Neo4jGateway, namespace: str, files: Sequence[Path]) -> Fingerprint:
    """The fingerprint of ``namespace`` as it is now, built from ``files``."""
    counts: dict[str, int] = {}
    rows: list[str] = []
    for row in gateway.read("eval_namespace_contents", kb=namespace):
        counts[row["label"]] = counts.get(row["label"], 0) + 1
        rows.append(json.dumps([row["label"], row["key"], sorted(row["properties"], key=_first),
                                sorted(row["relations"], key=_canonical)], default=str))
    contents = hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()
    return Fingerprint(corpus=corpus_digest(files), counts=dict(sorted(counts.items())), contents=contents)


def _first(pair: list[Any]) -> str:
    return str(pair[0])


def _canonical(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def stamped(gateway: Neo4jGateway, namespace: str) -> Fingerprint | None:
    """The fingerprint stamped on ``namespace`` when it was built (None: none)."""
    rows = gateway.read("eval_namespace_fingerprint_get", kb=namespace)
    raw = rows[0]["fingerprint"] if rows else None
    return None if raw is None else Fingerprint.model_validate_json(raw)


def stamp(gateway: Neo4jGateway, namespace: str, fingerprint: Fingerprint) -> None:
    gateway.write("eval_namespace_fingerprint_set", kb=namespace, fingerprint=fingerprint.model_dump_json())


def ready_namespace(kb: BuildingKb, namespace: str, files: Sequence[Path], on_progress: IngestProgress | None,
                    note: Note, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> date:
    """``namespace`` holding exactly ``files``' corpus: reused when its fingerprint still matches
    the one stamped when it was built, otherwise (cleared and) built and stamped, built at
    ``clock()``; ``note`` hears why a namespace is rebuilt, or stamped for the first time. Returns
    the day (UTC) the namespace was built: the day its searches count as today (module docstring)."""
    built = stamped(kb.gateway, namespace)
    if built is not None:
        now = fingerprint_of(kb.gateway, namespace, files)
        if built.matches(now):
            if built.built_at is not None:
                return _utc_day(built.built_at)
            at = _newest_experience(kb.gateway, namespace) or clock()
            note(f"{namespace}: stamped before the build time was kept; counted as built on {_utc_day(at)}, "
                 f"the day of its newest experience, and stamped so")
            stamp(kb.gateway, namespace, built.model_copy(update={"built_at": at}))
            return _utc_day(at)
        note(f"{namespace}: changed since it was built ({'; '.join(built.differences(now))}); clearing and building it again")
        kb.clear()
    else:
        before = fingerprint_of(kb.gateway, namespace, files)
        if before.counts:
            note(f"{namespace}: built before fingerprints were kept; completed by ingestion and stamped with what it holds")
    kb.ingest(files, on_progress=on_progress)
    at = clock()
    stamp(kb.gateway, namespace, fingerprint_of(kb.gateway, namespace, files).model_copy(update={"built_at": at}))
    return _utc_day(at)


def _newest_experience(gateway: Neo4jGateway, namespace: str) -> datetime | None:
    """When the newest experience of ``namespace`` was stored (None: it holds none)."""
    rows = gateway.read("eval_namespace_newest_experience", kb=namespace)
    return aware_datetime(rows[0]["created_at"]) if rows else None


def _utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()
