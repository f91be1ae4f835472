"""Property-based fuzz of every door data comes in by: trajectory and experience files, the Python
API (`add_experiences`, `record_feedback`) and imports of edited exports. Whatever the input, the
answer is either "accepted" or a clear kbgraph error — and then nothing was written. Any other
exception (RecursionError, OverflowError, a driver error, …) fails the property.

Examples are derandomised so CI explores the same inputs each run; set KBGRAPH_FUZZ_EXAMPLES to
explore more (and KBGRAPH_FUZZ_SEED for other inputs) locally.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kbgraph.core.errors import KbgraphError
from kbgraph.kb import KnowledgeBase
from tests.conftest import REAL_RUNS

EXAMPLES = int(os.environ.get("KBGRAPH_FUZZ_EXAMPLES", "0"))
FUZZ_SEED = int(os.environ.get("KBGRAPH_FUZZ_SEED", "20261124"))
TRIED: dict[str, int] = {}


def fuzz_settings(default_examples: int) -> Any:
    return settings(max_examples=EXAMPLES or default_examples, deadline=None, database=None,
                    derandomize=not os.environ.get("KBGRAPH_FUZZ_SEED"), print_blob=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


# Strings an attacker or a broken agent sends: control codes, lone surrogates, markup, huge ones.
NASTY_TEXT = st.sampled_from([
    "", " ", "\x00", "\x1b]0;pwned\x07", "\x1b[31mred", "\udcff", "\ud800x", "[bold red]x[/]", "\u202eevil",
    "a" * 100_000, "😀" * 1000, "p-1", "../../etc/passwd", "' OR 1=1 --", "MATCH (n) DETACH DELETE n",
])
NASTY_NUMBER = st.sampled_from([0, -1, -5, 1, 2, 99, 10**20, -(10**20), 2**63, 2**63 - 1, 0.5, 1.5, -0.0,
                                float("nan"), float("inf"), float("-inf"), 1e308, True, False])
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=40),
                   NASTY_TEXT, NASTY_NUMBER)


def json_values(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    return st.recursive(LEAVES, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.text(max_size=12), NASTY_TEXT), inner, max_size=4)),
        max_leaves=max_leaves)


class Deep:
    """A value nested ``levels`` deep, made only when it is sent (copying or encoding one with
    the standard library would itself recurse too deep)."""

    def __init__(self, levels: int):
        self.levels = levels

    def __repr__(self) -> str:
        return f"Deep({self.levels})"

    def build(self) -> Any:
        value: Any = "x"
        for _ in range(self.levels):
            value = {"a": value}
        return value

    def text(self) -> str:
        return '{"a": ' * self.levels + '"x"' + "}" * self.levels


VALUES = st.one_of(json_values(), NASTY_TEXT, NASTY_NUMBER, st.sampled_from([200, 5000]).map(Deep))


def materialise(value: Any) -> Any:
    """The value as the Python API receives it: Deep placeholders become real nested dicts."""
    if isinstance(value, Deep):
        return value.build()
    if isinstance(value, dict):
        return {k: materialise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialise(v) for v in value]
    return value


def paths_of(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value a mutation can land."""
    found = [prefix]
    if len(prefix) > 30:  # inside a deliberately deep value: deeper edits add nothing
        return found
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths_of(child, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with one to three edits: a value replaced, a key removed or an unknown one added."""
    record = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p in paths_of(record) if p]
        path = draw(st.sampled_from(places))
        parent = record
        for part in path[:-1]:
            parent = parent[part]
        edit = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if edit == "replace":
            parent[path[-1]] = draw(VALUES)
        elif edit == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.one_of(st.text(max_size=8), NASTY_TEXT))] = draw(VALUES)
    return record


def first_record(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        record: dict[str, Any] = json.loads(handle.readline())
    # Keep examples small (and failure reports readable): three steps, observations cut short.
    record["steps"] = [step | {"observation": step["observation"][:120]} if isinstance(step.get("observation"), str)
                       else step for step in record["steps"][:3]]
    return record


TRAJECTORY = first_record(REAL_RUNS / "airline_gpt4o.jsonl")
EXPERIENCE = {"id": "fuzz-1", "problem": "A customer wants to cancel a pending order.", "goal": "Order cancelled",
              "domain": "retail", "kind": "concrete", "success_rate": 1.0, "quality": 0.5,
              "steps": [{"action": "get_order_details", "text": "look up <order_id>", "args_schema": {"order_id": "str"},
                         "reward": 0.5},
                        {"action": "cancel_pending_order", "args_schema": {"order_id": "str", "reason": "str"}}]}


def snapshot(kb: KnowledgeBase) -> dict[str, Any]:
    """What a rejected input must leave exactly as it was: counts per label and type, and every
    experience's learning state."""
    stats = kb.stats()
    ids = [row["id"] for row in kb.gateway.read("experience_ids_page", kb=kb.namespace, after="", limit=10**6)]
    counters = kb.gateway.read("feedback_counters", kb=kb.namespace, ids=ids)
    return {"nodes": stats.nodes, "relationships": stats.relationships, "counters": counters}


def accepted_or_refused_cleanly(kb: KnowledgeBase, door: str, call: Any) -> str:
    before = snapshot(kb)
    TRIED[door] = TRIED.get(door, 0) + 1
    try:
        call()
    except KbgraphError as exc:
        message = str(exc)
        assert message.strip() and "Traceback" not in message
        assert snapshot(kb) == before, f"{door}: refused ({message[:200]}) but something was written"
        return "refused"
    return "accepted"


def dumps(record: Any) -> str:
    """One JSON line as a broken or hostile client writes it: lone surrogates as \\udcff escapes
    (ensure_ascii), NaN and Infinity as Python writes them, deep values spelled out."""
    deep: dict[str, str] = {}

    def placeholder(value: Any) -> str:
        assert isinstance(value, Deep)
        token = f"@@deep{len(deep)}@@"
        deep[f'"{token}"'] = value.text()
        return token

    text = json.dumps(record, ensure_ascii=True, allow_nan=True, default=placeholder)
    for token, nested in deep.items():
        text = text.replace(token, nested)
    return text


@fuzz_settings(30)
@seed(FUZZ_SEED)
@given(record=mutated(TRAJECTORY))
def test_fuzzed_trajectory_files_are_accepted_or_refused_with_nothing_written(
    kb: KnowledgeBase, tmp_path: Path, record: dict[str, Any]
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(dumps(TRAJECTORY | {"id": "fuzz-valid"}) + "\n" + dumps(record) + "\n")
    accepted_or_refused_cleanly(kb, "trajectory file", lambda: kb.ingest([path]))


@fuzz_settings(30)
@seed(FUZZ_SEED)
@given(record=mutated(EXPERIENCE))
def test_fuzzed_experience_files_are_accepted_or_refused_with_nothing_written(
    kb: KnowledgeBase, tmp_path: Path, record: dict[str, Any]
) -> None:
    path = tmp_path / "experiences.jsonl"
    path.write_text(dumps(record) + "\n")
    accepted_or_refused_cleanly(kb, "experience file", lambda: kb.ingest([path]))


@fuzz_settings(60)
@seed(FUZZ_SEED)
@given(record=mutated(EXPERIENCE))
def test_fuzzed_experiences_through_the_api_are_accepted_or_refused_with_nothing_written(
    kb: KnowledgeBase, record: dict[str, Any]
) -> None:
    accepted_or_refused_cleanly(kb, "add_experiences", lambda: kb.add_experiences([materialise(record)]))


FEEDBACK = {"retrieved": ["fuzz-1"], "used": ["fuzz-1"], "outcome": True, "agent": "a1", "domain": "retail",
            "task": "cancel my order", "step_rewards": [{"experience_id": "fuzz-1", "order": 0, "reward": 1.0}]}


@fuzz_settings(80)
@seed(FUZZ_SEED)
@given(event=mutated(FEEDBACK))
def test_fuzzed_feedback_events_are_accepted_or_refused_with_nothing_written(
    kb: KnowledgeBase, event: dict[str, Any]
) -> None:
    if kb.get("fuzz-1") is None:
        assert kb.add_experiences([EXPERIENCE]).new == 1
    # As an MCP client or a JSON body would send it: one mapping.
    accepted_or_refused_cleanly(kb, "record_feedback", lambda: kb.record_feedback(materialise(event)))


@pytest.fixture
def export_lines(kb: KnowledgeBase, tmp_path: Path) -> list[dict[str, Any]]:
    """An export of a small real namespace, one JSON object per line."""
    path = tmp_path / "source.jsonl"
    source = tmp_path / "runs.jsonl"
    with open(REAL_RUNS / "airline_gpt4o.jsonl", encoding="utf-8") as handle:
        source.write_text("".join(handle.readline() for _ in range(4)))
    kb.ingest([source])
    kb.record_feedback(retrieved=kb.search("cancel a reservation", k=2).ids(), outcome=True, agent="a1",
                       domain="airline")
    kb.export(path)
    kb.clear()
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@fuzz_settings(40)
@seed(FUZZ_SEED)
@given(data=st.data())
def test_fuzzed_imports_of_edited_exports_are_accepted_or_refused_with_nothing_written(
    kb: KnowledgeBase, tmp_path: Path, export_lines: list[dict[str, Any]], data: st.DataObject
) -> None:
    lines = copy.deepcopy(export_lines)
    # The header line is left alone now and then too: its checks are the first line of defence.
    index = data.draw(st.integers(0, len(lines) - 1))
    lines[index] = data.draw(mutated(lines[index]))
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(dumps(line) + "\n" for line in lines))
    accepted_or_refused_cleanly(kb, "import", lambda: kb.import_file(path))
    kb.clear()


def test_zz_report_how_many_inputs_were_tried() -> None:
    print(f"\nfuzz inputs tried per door: {TRIED}")
