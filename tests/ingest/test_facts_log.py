"""The facts log (ingest/link_state/_log.py): what a consolidation logs, and the chain of entries a
process whose link state is behind follows — or cannot, and plans from scratch."""

from __future__ import annotations

import json

from kbgraph.ingest.link_state import LOG_ENTRIES, changes_since, log_entry
from kbgraph.ingest.link_state._log import LOG_IDS_MAX

TOTALS = {"ABSTRACTION": 3, "ALTERNATIVE": 1, "COMPOSITION": 0, "ADAPTATION": 2}


def test_an_entry_names_the_versions_the_ids_and_the_totals_after() -> None:
    entry = log_entry("v1", "v2", ["b", "a", "c", "a"], TOTALS)
    assert entry is not None
    assert json.loads(entry) == {"from": "v1", "to": "v2", "ids": ["a", "b", "c"], "totals": dict(sorted(TOTALS.items()))}


def test_a_consolidation_without_a_version_before_or_touching_too_much_logs_nothing() -> None:
    assert log_entry(None, "v1", ["a"], TOTALS) is None
    assert log_entry("v1", "v2", [f"e{i}" for i in range(LOG_IDS_MAX + 1)], TOTALS) is None
    assert log_entry("v1", "v2", [f"e{i}" for i in range(LOG_IDS_MAX)], TOTALS) is not None


def test_a_state_at_the_current_version_follows_nothing() -> None:
    changes = changes_since([], "v1", "v1")
    assert changes is not None and changes.ids == () and changes.consolidations == 0


def test_a_chain_of_entries_gives_every_id_it_touched_and_the_last_totals() -> None:
    later = {**TOTALS, "ALTERNATIVE": 5}
    log = [log_entry("v0", "v1", ["x"], TOTALS), log_entry("v1", "v2", ["a", "b"], TOTALS),
           log_entry("v2", "v3", ["b", "c"], later)]
    changes = changes_since([e for e in log if e], "v1", "v3")
    assert changes is not None
    assert set(changes.ids) == {"a", "b", "c"} and len(changes.ids) == 3
    assert changes.totals == later and changes.consolidations == 2


def test_a_version_no_entry_leads_to_cannot_be_followed() -> None:
    log = [e for e in (log_entry("v1", "v2", ["a"], TOTALS), log_entry("v3", "v4", ["b"], TOTALS)) if e]
    # v2 → v3 was another writer's (a delete, maintenance, an import): it logs nothing.
    assert changes_since(log, "v1", "v4") is None
    # A state remembered at a version older than the kept entries.
    assert changes_since(log, "v0", "v2") is None
    # Entries that do not reach the current version.
    assert changes_since(log, "v1", "v9") is None


def test_entries_that_are_not_json_are_passed_over_and_a_cycle_ends() -> None:
    looped = [e for e in (log_entry("v1", "v2", ["a"], TOTALS), log_entry("v2", "v1", ["b"], TOTALS)) if e]
    assert changes_since(["{not json", *looped], "v1", "v9") is None
    assert LOG_ENTRIES >= 2
