"""Generalisation over every task text of the real runs: what became a placeholder, and that times,
amounts, dates, cabin classes and counts never did, while ids, codes, e-mails and names always did."""

from __future__ import annotations

import json
import re
from collections import Counter
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from kbgraph.ingest.generalise import generalise_task, ids_in_trajectory, names_in_trajectory
from kbgraph.models import Trajectory
from tests.conftest import SHARED_DATA

REAL_RUNS = SHARED_DATA / "real_runs" / "airline_gpt4o.jsonl"

KEPT = {
    "time": re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE),
    "amount": re.compile(r"\$\d[\d,]*(?:\.\d+)?"),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b(?:January|February|March|April|May|June|July|August|September|"
                       r"October|November|December)\s+\d{1,2}(?:st|nd|rd|th)?\b"),
    "cabin": re.compile(r"\b(?:basic economy|economy|business)\b", re.IGNORECASE),
    "count": re.compile(r"\b\d{1,3}\s+(?:baggages?|bags?|checked bags?|passengers?|certificates?|days?|suitcases?|"
                        r"nights?|reservations?)\b", re.IGNORECASE),
    "percent": re.compile(r"\b\d{1,3}%"),
}
REPLACED = {
    "code": re.compile(r"#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b"),
    "email": re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
}


def runs() -> list[Trajectory]:
    if not REAL_RUNS.is_file():
        pytest.skip(f"the real runs are not here: {REAL_RUNS}")
    return [Trajectory.model_validate(json.loads(line)) for line in REAL_RUNS.read_text().splitlines() if line.strip()]


def replaced_spans(raw: str, general: str) -> list[tuple[str, str]]:
    """(what was there, the placeholder it became), read off a word-level diff."""
    before, after = raw.split(), general.split()
    spans = []
    for op, a0, a1, b0, b1 in SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op == "replace" and any("{" in word for word in after[b0:b1]):
            spans.append((" ".join(before[a0:a1]), " ".join(after[b0:b1])))
        elif op == "delete":
            spans.append((" ".join(before[a0:a1]), "(dropped)"))
    return spans


def test_every_real_task_keeps_its_meaning_and_loses_what_identifies(tmp_path: Path) -> None:
    kept: Counter[str] = Counter()
    replaced: Counter[str] = Counter()
    placeholders: Counter[str] = Counter()
    report: list[str] = []
    tasks: dict[str, Trajectory] = {}
    for run in runs():
        tasks.setdefault(run.task, run)  # four runs share a task; names and ids come from the first
    for task, run in tasks.items():
        names, ids = names_in_trajectory(run), ids_in_trajectory(run)
        general = generalise_task(task, names, ids)
        for kind, pattern in KEPT.items():
            for match in pattern.finditer(task):
                assert match.group(0) in general, f"{run.id}: the {kind} {match.group(0)!r} was lost: {general}"
                kept[kind] += 1
        for kind, pattern in REPLACED.items():
            for match in pattern.finditer(task):
                if KEPT["time"].fullmatch(match.group(0)):
                    continue
                assert match.group(0) not in general, f"{run.id}: the {kind} {match.group(0)!r} survived: {general}"
                replaced[kind] += 1
        for name in names:
            if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", task):
                assert not re.search(rf"(?<!\w){re.escape(name)}(?!\w)", general), f"{run.id}: the name {name!r} survived"
                replaced["name"] += 1
        assert "You are {" not in general and not general.startswith("You {")
        spans = replaced_spans(task, general)
        placeholders.update(p for _, p in spans)
        report.append(f"{run.id}\n  {general}\n" + "".join(f"  {a!r} -> {b}\n" for a, b in spans))
    # Cannot pass on data without what it checks: the real tasks hold all of these.
    assert kept["time"] > 0 and kept["amount"] > 0 and kept["date"] > 0 and kept["cabin"] > 0 and kept["count"] > 0
    assert replaced["code"] > 0 and replaced["name"] > 0
    (tmp_path / "placeholders.txt").write_text("\n".join(report))
    print(f"\n{len(tasks)} tasks; kept {dict(kept)}; replaced {dict(replaced)}; "
          f"spans {sum(placeholders.values())} ({dict(placeholders.most_common(6))}); report {tmp_path / 'placeholders.txt'}")
