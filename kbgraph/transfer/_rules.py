"""What each property kbgraph reads back may hold, for the values an import brings in.

An export is a backup a person can edit, so an import is input like any other: a `quality` of 99,
a negative `retrieved`, a `status` of "pwned" or a `success_rate` of "high" would be written as
given and break `get`, search and feedback later. Each property the code reads has a rule here,
the same ranges and enumerations as the models (kbgraph.core.models); properties kbgraph does not know
(from a newer version, say) are kept as the file gives them, since nothing reads them, and
properties starting with "_" (transaction-internal marks) are never imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kbgraph.core.models import MAX_NAME_CHARS, MAX_TEXT_CHARS, STORED_OUTCOME_TASK_CHARS
from kbgraph.core.value_bounds import MAX_COUNT, MAX_STORE_VALUE_CHARS

Rule = Callable[[Any], str | None]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def between(low: float, high: float) -> Rule:
    def rule(value: Any) -> str | None:
        if not _is_number(value) or not low <= value <= high:
            return f"{value!r:.60} is not a number in [{low:g}, {high:g}]"
        return None
    return rule


def count(value: Any) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
        return f"{value!r:.60} is not a count (a whole number from 0 to {MAX_COUNT:,}, so that it can still grow)"
    return None


def number(value: Any) -> str | None:
    return None if _is_number(value) else f"{value!r:.60} is not a number"


def one_of(*allowed: str) -> Rule:
    def rule(value: Any) -> str | None:
        return None if value in allowed else f"{value!r:.60} is not one of {', '.join(allowed)}"
    return rule


def text(min_length: int = 0, max_length: int | None = None) -> Rule:
    def rule(value: Any) -> str | None:
        if not isinstance(value, str) or len(value.strip()) < min_length:
            return f"{value!r:.60} is not {'a non-empty ' if min_length else 'a '}string"
        if max_length is not None and len(value) > max_length:
            return f"{value!r:.60} is {len(value):,} characters long, over the {max_length:,} the models allow"
        return None
    return rule


def flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"{value!r:.60} is not true or false"


def texts(value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return f"{value!r:.60} is not a list of strings"
    return None


def datetime_value(value: Any) -> str | None:
    # The export writes a datetime as {"datetime": "…"}; _values._value_problem checks its text.
    if not (isinstance(value, dict) and set(value) == {"datetime"} and isinstance(value["datetime"], str)):
        return f"{value!r:.60} is not a datetime (written as {{\"datetime\": \"2026-01-01T00:00:00Z\"}})"
    return None


UNIT = between(0.0, 1.0)
REWARD = between(-1.0, 1.0)

NODE_RULES: Final[dict[str, dict[str, Rule]]] = {
    "Experience": {
        "problem": text(1), "goal": text(), "domain": text(1), "kind": one_of("concrete", "abstract"),
        "difficulty": one_of("easy", "medium", "hard"), "status": one_of("active", "archived", "rejected"),
        "scope": one_of("shared", "private"), "success_rate": UNIT, "quality": UNIT, "efficiency": UNIT,
        "generalizability": UNIT, "retrieved": count, "used": count, "succeeded": count,
        "usage_impact": number, "created_at": datetime_value, "last_used_at": datetime_value,
        "usage_impact_at": datetime_value, "archived_at": datetime_value, "restored_at": datetime_value,
        "source_ids": texts, "failed_source_ids": texts, "merged_ids": texts, "adapted_from": texts,
        "approved_by": texts, "rejected_by": texts, "actions": texts, "operations": texts,
        "dissolved": flag, "archived_score": number, "content_id": text(1), "unlinked": text(1),
    },
    "Step": {
        "action": text(1), "tool": text(1), "text": text(), "order": count, "experience_id": text(1), "reward": REWARD,
        "reward_count": count, "observation_chars": count, "resolution_effectiveness": UNIT,
    },
    "FailureMode": {
        "action": text(), "description": text(), "experience_id": text(1), "step_order": count,
        "recovered": flag, "run_succeeded": flag, "concrete": flag, "looked_up": flag, "record": text(),
        "signature_action": text(), "signature_error": text(),
    },
    "MetaConcept": {"name": text(1), "size": count, "version": count, "how": texts, "why": texts,
                    "pitfalls": texts, "when_to_use": texts, "statements": text(), "verbs": texts},
    "Insight": {"text": text(1), "runs": texts, "tasks": texts, "succeeded": texts, "worked": texts},
    # What feedback stores: the start of its task, its agent's name (kbgraph.learning.feedback).
    "Outcome": {"outcome": UNIT, "at": datetime_value, "task": text(1, STORED_OUTCOME_TASK_CHARS),
                "agent": text(1, MAX_NAME_CHARS)},
    "IngestedRecord": {"ingested_at": datetime_value, "fingerprint": text(1)},
    "StoreItem": {"path": text(1), "key": text(1), "namespace": texts, "value": text(max_length=MAX_STORE_VALUE_CHARS),
                  "created_at": datetime_value, "updated_at": datetime_value, "expires_at": datetime_value,
                  "ttl_minutes": number},
    "StoreVector": {"field": text(1)},
    "KbState": {"added_total": count, "growth_checked": count, "maintenance_runs": count,
                "last_maintenance_archived": count, "last_maintenance_merged": count,
                "last_maintenance_at": datetime_value, "relink_pending": text(1),
                "ingest_owner": text(1), "ingest_lease_until": datetime_value,
                "facts_version": text(1),
                # What the last consolidations changed, for processes behind them (ingest/link_state/_log.py).
                "facts_log": texts,
                # What the evaluation stamps on a namespace it built (kbgraph.search.eval.cached_namespace).
                "eval_fingerprint": text(1)},
}

RELATIONSHIP_RULES: Final[dict[str, dict[str, Rule]]] = {
    "PERFORMED": {"attempts": count, "successes": count, "last_at": datetime_value},
    # The reason of a relation is the models' ShortText (kbgraph.core.models.Relation.reason).
    **{kind: {"weight": UNIT, "inferred": flag, "reason": text(max_length=MAX_TEXT_CHARS)}
       for kind in ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE")},
}


def property_problems(rules: dict[str, Rule], properties: dict[str, Any]) -> list[str]:
    """``name: reason`` for every property that breaks its rule."""
    problems = []
    for name, value in properties.items():
        if name.startswith("_"):
            problems.append(f"{name}: internal properties (starting with '_') are not imported")
        elif (rule := rules.get(name)) is not None and value is not None and (problem := rule(value)):
            problems.append(f"{name}: {problem}")
    return problems


def counter_problems(properties: dict[str, Any]) -> list[str]:
    """Counters that contradict each other: an experience cannot succeed more often than it was
    used (feedback would then report a success rate above 1)."""
    used, succeeded = properties.get("used"), properties.get("succeeded")
    if isinstance(used, int) and isinstance(succeeded, int) and succeeded > used:
        return [f"succeeded: {succeeded} is more than used ({used})"]
    return []
