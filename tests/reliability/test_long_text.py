"""Long repetitive text through the ingest rules: a task of up to 100,000 characters and an error or
observation as long, made of one short unit repeated (``a.a.a.…`` once took 207 s in the e-mail
pattern, holding the namespace's ingest lease). Every pattern must be linear, so each trajectory
gets a budget of CPU seconds — processor time, not wall-clock time, so a loaded machine does not
fail it — far above what linear work takes (well under a second) and far below what one quadratic
pattern takes on this length (minutes).

The patterns one by one, with their times: ``./kb python -m tests.reliability.regex_audit``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.reliability.test_fuzz import TRIED

#: Units that make backtracking patterns walk the rest of the text from every position.
LONG_TEXT_UNITS = [
    "a.", "a@", "a.a@", "1,", "1.", "1-", "1–", "12:", "a ", "\n", " \n", "\t", "a_1", "A1B", "Aa ", "Aa",
    "{", "{a", "[1", '"a', '\\"', "'", "#a", "$1", "P1", "I ", ". ", "you are ", "name: Aa ", "http://a",
    "reservation ABCDEF ", "error: ", "a-", "Mc", "x@y.", "\u200f",
]
LENGTH = 100_000
CPU_SECONDS_EACH = 20

CHILD = textwrap.dedent("""
    import json, resource, sys
    from kbgraph.core.models import Trajectory
    from kbgraph.ingest.abstract import RuleBasedAbstractor
    from kbgraph.ingest.reflect import RuleBasedReflector

    units, length, budget = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    for unit in units:
        text = (unit * (length // len(unit) + 1))[:length]
        task = text if text.strip() else "x" + text[1:]
        trajectory = Trajectory.model_validate({
            "id": "long", "domain": "retail", "task": task, "outcome": {"success": False},
            "steps": [{"action": "get_order", "arguments": {"q": text[:2000]}, "thought": text[:20_000], "error": text},
                      {"action": "get_order", "arguments": {"q": "b"}, "observation": text}]})
        used = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        resource.setrlimit(resource.RLIMIT_CPU, (int(used) + budget, resource.RLIM_INFINITY))
        print(json.dumps(unit), flush=True)  # the unit under way, should the budget run out
        experience = RuleBasedAbstractor().abstract(trajectory)
        RuleBasedReflector().reflect(trajectory, experience)
    print("done", flush=True)
""")


def test_long_repetitive_text_is_abstracted_and_reflected_within_a_cpu_budget() -> None:
    TRIED["long repetitive text"] = TRIED.get("long repetitive text", 0) + len(LONG_TEXT_UNITS)
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(LONG_TEXT_UNITS), str(LENGTH), str(CPU_SECONDS_EACH)],
                          capture_output=True, text=True, timeout=3600)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[-1:] == ["done"], (
        f"over {CPU_SECONDS_EACH} CPU seconds (or failed) on {LENGTH:,} characters of "
        f"{json.loads(lines[-1]) if lines else '?'!r} repeated: {done.stderr[-2000:]}")


AUDIT_CHILD = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, sys.argv[2])
    from kbgraph.audit import audit_skill
    from tests.kbgraph.audit.test_audit_checks import cancel_skill

    from dataclasses import replace

    skill, files, shows = cancel_skill()
    quotes = "\\u201c" * int(sys.argv[1])  # opening quotes that no closing one follows
    # The tasks a skill quotes are what its text showed between quotes: the audit reads them as data.
    shows = replace(shows, tasks=tuple(replace(task, problem=task.problem + quotes) for task in shows.tasks))
    used = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    resource.setrlimit(resource.RLIMIT_CPU, (int(used) + 5, resource.RLIM_INFINITY))
    audit_skill(skill, shows, [])
    print("done", flush=True)
""")


def test_a_skill_file_with_a_long_line_of_quotes_is_audited_within_a_cpu_budget() -> None:
    """The skill audit's quote pattern read such a line from every “ to its end: ~43 CPU seconds
    for 100,000 of them. The audit now reads what the skill shows as data, never SKILL.md: a quoted
    task of 100,000 unclosed quotes is audited in milliseconds (the budget is 5 CPU seconds)."""
    TRIED["long repetitive text"] = TRIED.get("long repetitive text", 0) + 1
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", AUDIT_CHILD, str(LENGTH), root], capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0 and done.stdout.splitlines()[-1:] == ["done"], done.stderr[-2000:]
