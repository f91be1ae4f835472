"""Generalisation over every task text of the real runs (each run with its own names and ids):
times, amounts, dates, cabin classes, counts and small numbers never become placeholders; ids,
codes, e-mails and the names the runs collected always do; identity clauses go. Writes a report of
what became a placeholder, per task, and prints a summary line with the figures."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from kbgraph.core.generalise import generalise_task
from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.models import Trajectory

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
REAL_RUNS = SHARED_DATA / "real_runs" / "airline_gpt4o.jsonl"

_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
          r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)")
# What carries meaning, found in the raw task independently of the module's own rules.
KEPT = {
    "time": re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b(?:\s+est\b)?|\b\d{1,2}:\d{2}\b", re.IGNORECASE),
    "amount": re.compile(r"\$\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s+dollars\b", re.IGNORECASE),
    "date": re.compile(rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\b|"
                       rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b"),
    "cabin": re.compile(r"\b(?:basic economy|economy|business)\b", re.IGNORECASE),
    "count": re.compile(r"\b(?:\d{1,3}|one|two|three|four|five)\s+(?:baggages?|bags?|checked bags?|passengers?|"
                        r"certificates?|days?|suitcases?|nights?|reservations?)\b", re.IGNORECASE),
    "percent": re.compile(r"\b\d{1,3}%"),
    # Small numbers on their own: "your 7447 card", "a minimum of 10".
    "number": re.compile(r"(?<![\w$.,/:#-])\d{1,4}(?![\w/:%-])"),
}
# What identifies: codes mixing letters and digits, '#' codes, e-mails; digitless codes are
# checked through the run's ids, names through the run's names.
REPLACED = {
    "code": re.compile(r"#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b"),
    "email": re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"),
}
# A letter+digit token that is a time or a measure, not a code.
NOT_CODE = re.compile(r"^\d+(?:am|pm|st|nd|rd|th)$", re.IGNORECASE)
# "You are mia_li_3668 and …", "You amelia_sanchez_4739 and …", "You are Sophia Silva (with ID: …)".
IDENTITY = re.compile(r"^\s*You(?:\s+are)?\s+['\"]?(?:[a-z]+_[a-z]+_\d+|[A-Z][a-z]+ [A-Z][a-z]+ \()")


def runs() -> list[Trajectory]:
    if not REAL_RUNS.is_file():
        pytest.skip(f"the real runs are not here: {REAL_RUNS} (shared data not checked out)")
    return [Trajectory.model_validate(json.loads(line)) for line in REAL_RUNS.read_text().splitlines() if line.strip()]


def whole_word(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w{{]){re.escape(value)}(?![\w}}])")


def replaced_spans(raw: str, general: str) -> list[tuple[str, str]]:
    """(what was there, what it became), read off a word-level diff: placeholders and drops."""
    before, after = raw.split(), general.split()
    spans = []
    for op, a0, a1, b0, b1 in SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            spans.append((" ".join(before[a0:a1]), " ".join(after[b0:b1]) or "(dropped)"))
    return spans


def test_every_real_task_keeps_its_meaning_and_loses_what_identifies(tmp_path: Path) -> None:
    kept: Counter[str] = Counter()
    replaced: Counter[str] = Counter()
    placeholders: Counter[str] = Counter()
    identity_dropped = 0
    by_task: dict[str, list[Trajectory]] = defaultdict(list)
    all_runs = runs()
    for run in all_runs:
        by_task[run.task].append(run)
    report: list[str] = []
    for task, task_runs in by_task.items():
        # Names and ids any run of the task collected: a run that never looked its user up must
        # still lose them, or the four runs of one task would not read the same.
        siblings = frozenset().union(*(names_in_trajectory(r) | ids_in_trajectory(r) for r in task_runs))
        generals = set()
        for run in task_runs:
            names, ids = names_in_trajectory(run), ids_in_trajectory(run)
            general = generalise_task(task, names, ids)
            generals.add(general)
            for kind, pattern in KEPT.items():
                for match in pattern.finditer(task):
                    assert match.group(0) in general, f"{run.id}: the {kind} {match.group(0)!r} was lost: {general}"
                    kept[kind] += 1
            for kind, pattern in REPLACED.items():
                for match in pattern.finditer(task):
                    if NOT_CODE.match(match.group(0)):
                        continue
                    assert not whole_word(match.group(0)).search(general), \
                        f"{run.id}: the {kind} {match.group(0)!r} survived: {general}"
                    replaced[kind] += 1
            for kind, values in (("name", names), ("id", ids), ("sibling's name or id", siblings)):
                for value in values:
                    if whole_word(value).search(task):
                        assert not whole_word(value).search(general), f"{run.id}: the {kind} {value!r} survived"
                        replaced[kind] += 1
            assert not re.match(r"\s*you(?: are)? ['\"]?\{", general, re.IGNORECASE), f"{run.id}: {general}"
            if IDENTITY.match(task):
                identity_dropped += 1
            placeholders.update(re.findall(r"\{\w+\}", general))
        # Runs of one task differ in what they looked up, not in what their task says.
        assert len(generals) == 1, f"{task_runs[0].id}: the runs of one task read differently: {generals}"
        spans = replaced_spans(task, min(generals))
        report.append(f"{task_runs[0].id} (and {len(task_runs) - 1} more runs of the task)\n"
                      f"  {min(generals)}\n" + "".join(f"  {a!r} -> {b}\n" for a, b in spans))

    # Cannot pass on data without what it checks: the real tasks hold all of these.
    for kind in ("time", "amount", "date", "cabin", "count", "percent", "number"):
        assert kept[kind] > 0, f"no {kind} in the real tasks: the check would be empty"
    assert replaced["code"] > 0 and replaced["name"] > 0 and replaced["id"] > 0 and identity_dropped > 0
    assert placeholders["{id}"] > 0 and placeholders["{name}"] > 0
    path = tmp_path / "placeholders.txt"
    path.write_text("\n".join(report))
    print(f"\n{len(all_runs)} runs, {len(by_task)} tasks; placeholders {dict(placeholders)}; "
          f"identity clauses dropped {identity_dropped}; kept {dict(kept)}; replaced {dict(replaced)}; report {path}")
