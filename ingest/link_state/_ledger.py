"""The ledger of a link plan's parts: which relations each part (one workflow's ABSTRACTION, one
shape's ADAPTATION, one chooser's ALTERNATIVE, …) contributes, and the plan's relations that
follow from all contributions. Re-planning a part replaces its contribution; :meth:`PartLedger.delta`
then says which relations to write or delete."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kbgraph.ingest.link import Row
from kbgraph.core.models import Experience

RelationKey = tuple[str, str, str]  # (type, source id, target id)
# Parts, in the order their rows win when two give the same relation (declared provenance over
# the shape-based adaptation, as written last in a full plan).
ABSTRACTION, COMPOSITION, ADAPTATION, DECLARED, ALTERNATIVE = range(5)
PartKey = tuple[int, Any]


@dataclass
class LinkDelta:
    """What an update changed: relations to write or delete, workflows to write or dissolve."""
    upserted: list[Row] = field(default_factory=list)
    deleted: list[RelationKey] = field(default_factory=list)
    abstracts: list[Experience] = field(default_factory=list)  # new or changed
    dissolved: list[str] = field(default_factory=list)  # abstract ids whose workflow is no longer shared


def relation_key(row: Row) -> RelationKey:
    return row["type"], row["source_id"], row["target_id"]


class PartLedger:
    """Each part's rows by relation key, each relation's contributing parts, and the relations."""

    def __init__(self) -> None:
        self.relations: dict[RelationKey, Row] = {}
        self._parts: dict[PartKey, dict[RelationKey, Row]] = {}
        self._contributions: dict[RelationKey, dict[PartKey, Row]] = defaultdict(dict)

    def keys_of(self, part: PartKey) -> set[RelationKey]:
        """The relations ``part`` contributes now."""
        return set(self._parts.get(part, {}))

    def set_part(self, part: PartKey, rows: list[Row], touched: set[Any]) -> None:
        """Replaces what one part contributes; adds the relation keys involved to ``touched``."""
        before = self._parts.pop(part, {})
        for key in before:
            contributions = self._contributions[key]
            contributions.pop(part, None)
            if not contributions:
                del self._contributions[key]
            touched.add(key)
        now: dict[RelationKey, Row] = {}
        for row in rows:
            now[relation_key(row)] = row  # within a part, the last row for a relation wins (as in a full plan)
        if now:
            self._parts[part] = now
        for key, row in now.items():
            self._contributions[key][part] = row
            touched.add(key)

    def delta(self, touched: set[RelationKey]) -> LinkDelta:
        """Brings the relations in line with the contributions for the ``touched`` keys; returns
        what changed (its ``abstracts`` and ``dissolved`` are the caller's to fill)."""
        delta = LinkDelta()
        for key in sorted(touched):
            contributions = self._contributions.get(key)
            before = self.relations.get(key)
            if not contributions:
                if before is not None:
                    del self.relations[key]
                    delta.deleted.append(key)
                continue
            # Two choosers of one pair give the same row; declared provenance wins over a shape.
            row = contributions[max(contributions, key=lambda p: (p[0], repr(p[1])))]
            if before != row:
                self.relations[key] = row
                delta.upserted.append(row)
        return delta
