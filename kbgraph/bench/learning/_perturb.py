"""Perturbed re-ingestion: the same trajectories told slightly differently (other identifiers of
the same kind, other digits, a filler word more or less), deterministic per seed, round and id."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

FILLER_WORDS = ("please", "kindly", "just", "also", "now")

ORDER_ID = re.compile(r"#W\d+")
PAYMENT_METHOD = re.compile(r"(credit_card|paypal|gift_card)_\d+")
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
ITEM_ID = re.compile(r"\d{10}")
ZIP_CODE = re.compile(r"\d{5}")
DIGITS = re.compile(r"\d+")
# Tokens also looked for in the task text (item ids and zips only count as arguments: a bare
# number in a sentence is not necessarily one).
TEXT_TOKENS = (ORDER_ID, PAYMENT_METHOD, EMAIL)


def value_kind(value: str) -> str | None:
    """What kind of identifier a value is, or None for values kept as they are (reasons, cities)."""
    if ORDER_ID.fullmatch(value):
        return "order_id"
    if payment := PAYMENT_METHOD.fullmatch(value):
        return f"payment:{payment.group(1)}"
    if EMAIL.fullmatch(value):
        return "email"
    if ITEM_ID.fullmatch(value):
        return "item_id"
    if ZIP_CODE.fullmatch(value):
        return "zip"
    if DIGITS.search(value):
        return "number"  # a street number, a suite: its digits change
    return None


def _strings(value: Any) -> Iterable[str]:
    """Every string inside an argument value (lists and objects included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _record_values(record: Mapping[str, Any]) -> Iterable[str]:
    for step in record.get("steps") or []:
        yield from _strings(step.get("arguments") or {})
    task = str(record.get("task", ""))
    for pattern in TEXT_TOKENS:
        yield from (m.group(0) for m in pattern.finditer(task))


class ValuePools(BaseModel):
    """The values of each kind the corpus holds, sorted: what a perturbation swaps in."""

    model_config = ConfigDict(frozen=True)

    by_kind: dict[str, tuple[str, ...]] = Field(default_factory=dict)


def value_pools(records: Iterable[Mapping[str, Any]]) -> ValuePools:
    """The pools of :func:`perturb_trajectory`, from a corpus of trajectory records."""
    found: dict[str, set[str]] = {}
    for record in records:
        for value in _record_values(record):
            kind = value_kind(value)
            if kind is not None and kind != "number":
                found.setdefault(kind, set()).add(value)
    return ValuePools(by_kind={kind: tuple(sorted(values)) for kind, values in sorted(found.items())})


def _redigit(value: str, rng: random.Random) -> str:
    """The value with each run of digits replaced by another number of the same length."""
    for _ in range(20):
        changed = DIGITS.sub(lambda m: "".join(rng.choice("0123456789") for _ in m.group(0)), value)
        if changed != value:
            return changed
    return value.translate(str.maketrans("0123456789", "1234567890"))  # every digit moved on by one


def _replacement(value: str, kind: str, pools: ValuePools, taken: set[str], rng: random.Random) -> str:
    """Another value of the kind, none the record already holds or was given: two orders of one
    task stay two orders."""
    others = [v for v in pools.by_kind.get(kind, ()) if v not in taken]
    if others:
        return rng.choice(others)
    for _ in range(20):
        changed = _redigit(value, rng)
        if changed not in taken:
            return changed
    return changed


def _substitute(value: Any, mapping: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [_substitute(item, mapping) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, mapping) for key, item in value.items()}
    return value


def _replace_in_text(text: str, mapping: Mapping[str, str]) -> str:
    """Every mapped value in the text replaced at once (so a swap never chains), whole values only."""
    if not mapping:
        return text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(k) for k in keys) + r")(?![A-Za-z0-9_])")
    return pattern.sub(lambda m: mapping[m.group(0)], text)


def _refill(task: str, rng: random.Random) -> str:
    """Drops a filler word the task has, or adds one at the start of a sentence."""
    words = task.split(" ")
    fillers = [i for i, w in enumerate(words) if w.lower().strip(",.;:!?") in FILLER_WORDS]
    if fillers and rng.random() < 0.5:
        index = fillers[0]
        dropped = words.pop(index)
        if dropped[:1].isupper() and index < len(words) and words[index][:1].isalpha():
            words[index] = words[index][:1].upper() + words[index][1:]
        return " ".join(words) if words else task
    starts = [0] + [i + 1 for i, w in enumerate(words[:-1]) if w.endswith((".", "!", "?"))]
    index = rng.choice(starts)
    filler = rng.choice(FILLER_WORDS)
    if index < len(words) and words[index][:1].isupper() and words[index][1:2].islower():
        words[index] = words[index][:1].lower() + words[index][1:]
    words.insert(index, filler.capitalize())
    return " ".join(words)


def perturb_trajectory(record: Mapping[str, Any], round_no: int, seed: int, pools: ValuePools) -> dict[str, Any]:
    """The same trajectory told slightly differently, under the id ``<id>-r<round_no>``.

    Every identifier (order, item, payment method, e-mail, zip) is swapped for another of the same
    kind from ``pools``, consistently in the arguments and the task text; digits of other
    argument values (street numbers, suites) change; a filler word is added or dropped. Actions
    and their order stay the same. Deterministic for (seed, round, id)."""
    rng = random.Random(f"{seed}/{round_no}/{record['id']}")
    values = list(dict.fromkeys(_record_values(record)))  # first-seen order: reproducible draws
    taken = set(values)
    mapping: dict[str, str] = {}
    for value in values:
        kind = value_kind(value)
        if kind is not None:
            mapping[value] = _replacement(value, kind, pools, taken, rng)
            taken.add(mapping[value])
    steps = [{**step, "arguments": _substitute(step.get("arguments") or {}, mapping)}
             for step in record.get("steps") or []]
    task = _refill(_replace_in_text(str(record["task"]), mapping), rng)
    return {**record, "id": f"{record['id']}-r{round_no}", "task": task, "steps": steps}


def perturb_round(records: Sequence[Mapping[str, Any]], round_no: int, seed: int, pools: ValuePools) -> list[dict[str, Any]]:
    return [perturb_trajectory(record, round_no, seed, pools) for record in records]
