"""A statement record in words: the one sentence an insight is stored under and a document
shows (:func:`sentence`). Only this module words a record; nothing reads a sentence back.

- before: "Before cancel reservation, get reservation details."
- how: "To cancel reservation, call cancel_reservation with reservation_id."
- recovery: "When book reservation fails with “payment amount does not add up …”, the agent
  retried it with changed payment_methods[].amount" — or "… repeated it unchanged", "… switched
  to transfer to human agents", "… nothing was tried after it"; a statement standing for several
  retries of one failure: "…, the agent retried it with changed arguments (a; b, c)". It says
  what was done, never how it went (that is the evidence, counted per run);
- rule: "Rule the agent applied: …"; lesson: its sentence.
"""

from __future__ import annotations

from kbgraph.core.generalise import humanise_action
from kbgraph.core.models import StatementRecord

__all__ = ["RULE_PREFIX", "changed_arguments", "sentence"]

RULE_PREFIX = "Rule the agent applied: "
#: Argument paths a retry names at most; the rest are "and more".
SHOWN_PATHS = 4


def changed_arguments(paths: tuple[str, ...]) -> str:
    """The arguments a retry changed, as a sentence names them."""
    return ", ".join(paths[:SHOWN_PATHS]) + (" and more" if len(paths) > SHOWN_PATHS else "")


def _next(record: StatementRecord) -> str:
    if record.recovery == "retry":
        variants = list(dict.fromkeys(changed_arguments(paths) for paths in record.changed if paths))
        if record.merged:
            return "the agent retried it" + (f" with changed arguments ({'; '.join(variants)})" if variants else "")
        return f"the agent retried it with changed {variants[0]}" if variants else "the agent retried it"
    if record.recovery == "repeat":
        return "the agent repeated it unchanged"
    if record.recovery == "switch" and record.action:
        return f"the agent switched to {humanise_action(record.action)}"
    return "nothing was tried after it"


def sentence(record: StatementRecord) -> str:
    """The sentence that says ``record`` (module docstring)."""
    if record.kind == "before":
        return f"Before {record.operation}, {humanise_action(record.action)}."
    if record.kind == "how":
        return f"To {record.operation}, call {record.action} with {', '.join(record.arguments) or 'no arguments'}."
    if record.kind == "recovery":
        return f"When {record.operation} fails with “{record.error}”, {_next(record)}."
    if record.kind == "rule":
        return f"{RULE_PREFIX}{record.text}"
    return record.text
