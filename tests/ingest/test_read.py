"""Reading trajectories: every problem is `file:line: field: reason`; odd input never crashes."""

from __future__ import annotations

import json
from pathlib import Path

from kbgraph.ingest.read import read_records
from kbgraph.core.models import Experience, Trajectory


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


def test_trajectories_and_experiences_are_told_apart(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "mixed.jsonl", [
        json.dumps({"id": "t1", "task": "do it", "steps": [{"action": "a"}]}),
        json.dumps({"problem": "ready-made", "goal": "g"}),
    ])
    items = [r.item for r in read_records([path])]
    assert isinstance(items[0], Trajectory) and isinstance(items[1], Experience)


def test_each_bad_line_is_named_with_its_field(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "bad.jsonl", [
        json.dumps({"id": "t1", "task": "ok"}),
        json.dumps({"id": "t2"}),
        json.dumps({"id": "t3", "task": "x", "steps": [{"arguments": {}}]}),
        json.dumps({"id": "t4", "task": "x", "outcome": {"success": "yes"}}),
        b"\xff\xfe not utf-8",
        "{broken",
    ])
    problems = [p for r in read_records([path]) for p in r.problems]
    assert f"{path}:2: task: Field required" in problems
    assert f"{path}:3: steps.0.action: Field required" in problems
    assert any(p.startswith(f"{path}:4: outcome.success:") for p in problems)
    assert any(p.startswith(f"{path}:5: not UTF-8") for p in problems)
    assert any(p.startswith(f"{path}:6: invalid JSON") for p in problems)


def test_an_empty_file_is_reported(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "empty.jsonl", [])
    [record] = list(read_records([path]))
    assert record.problems == (f"{path}: empty file, nothing to ingest",)


def test_ten_thousand_steps_are_accepted(tmp_path: Path) -> None:
    steps = [{"action": "click", "arguments": {"x": i}} for i in range(10_000)]
    path = write_lines(tmp_path / "long.jsonl", [json.dumps({"id": "long", "task": "click a lot", "steps": steps})])
    [record] = list(read_records([path]))
    assert isinstance(record.item, Trajectory) and len(record.item.steps) == 10_000


def test_a_one_megabyte_task_is_rejected_with_a_reason(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "huge.jsonl", [json.dumps({"id": "huge", "task": "x" * 1_000_000})])
    [record] = list(read_records([path]))
    assert record.item is None
    assert record.problems[0].startswith(f"{path}:1: task: String should have at most 100000 characters")


def test_untidy_real_steps_are_accepted_and_wrong_types_are_named(tmp_path: Path) -> None:
    """What real agents write: tool arguments as JSON text (or text that is not JSON), blank
    thoughts, results that are JSON or plain text, calls with no result. Each is accepted and
    represented; a field of the wrong type is named with its file and line."""
    untidy = {"id": "real-1", "task": "Book a flight", "outcome": {"success": False}, "steps": [
        {"action": "search_direct_flight", "arguments": "{\"origin\": \"JFK\"}", "thought": " ",
         "observation": [{"flight_number": "HAT1"}]},
        {"action": "book_reservation", "arguments": "{flight_number: HAT1", "error": "Error: bad arguments"},
        {"action": "think", "arguments": {"thought": ""}, "observation": "plain text"},
        {"action": "transfer_to_human_agents"},
    ]}
    path = write_lines(tmp_path / "real.jsonl", [
        json.dumps(untidy),
        json.dumps({"id": "real-2", "task": "x", "steps": [{"action": "a", "arguments": 5}]}),
        json.dumps({"id": "real-3", "task": "x", "steps": [{"action": "a", "observation": 7}]}),
    ])
    first, second, third = read_records([path])
    assert isinstance(first.item, Trajectory) and not first.problems
    steps = first.item.steps
    assert steps[0].arguments == {"origin": "JFK"} and steps[0].thought is None
    assert steps[0].observation == '[{"flight_number": "HAT1"}]'
    assert steps[1].arguments == {"_raw": "{flight_number: HAT1"} and steps[3].observation is None
    assert second.item is None and second.problems[0].startswith(f"{path}:2: steps.0.arguments:")
    assert third.item is None and third.problems[0].startswith(f"{path}:3: steps.0.observation:")


def test_a_folder_stands_for_its_jsonl_files_in_name_order(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    write_lines(folder / "b.jsonl", [json.dumps({"id": "t2", "task": "second"})])
    write_lines(folder / "a.jsonl", [json.dumps({"id": "t1", "task": "first"})])
    (folder / "notes.txt").write_text("not a run")
    assert [r.where for r in read_records([folder])] == [f"{folder / 'a.jsonl'}:1", f"{folder / 'b.jsonl'}:1"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert [r.problems for r in read_records([empty])] == [(f"{empty}: a folder without .jsonl files, nothing to ingest",)]
