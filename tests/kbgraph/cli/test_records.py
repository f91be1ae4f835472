"""How `kbgraph add` reports bad files (kbgraph/cli/records.py): every problem at once, by file
and then line, ordered by the file and line each record came from — never by reading them back
out of the problems' text."""

from __future__ import annotations

from pathlib import Path

from kbgraph.cli.records import _read_experience_files
from kbgraph.core.errors import Problem


def test_problems_are_ordered_by_file_and_line_whatever_order_they_were_found_in(tmp_path: Path) -> None:
    first, second = tmp_path / "a:1: odd.jsonl", tmp_path / "b.jsonl"
    first.write_text('{"problem": "p"}\n\n' + "{oops\n" * 9 + '{"problem": "q"}\n')
    second.write_text("[1]\n")
    read = _read_experience_files([second, tmp_path / "missing.jsonl", first, tmp_path / "missing.jsonl"])
    assert read.labels == [f"{first}:1", f"{first}:12"]
    # What validation finds comes after what reading found; the report puts each in its place.
    found = read.problems + [Problem(f"{first}:12", "Field required", "goal"), Problem(f"{first}:1", "bad", "goal")]
    ordered = read.in_file_and_line_order(found)
    assert [(p.where, p.field) for p in ordered if isinstance(p, Problem)][:4] == [
        (f"{first}:1", "goal"), (f"{first}:3", None), (f"{first}:4", None), (f"{first}:5", None)]
    assert ordered[-5:] == [f"{first}:11: invalid JSON at column 2: Expecting property name enclosed in double quotes",
                            f"{first}:12: goal: Field required", f"{second}:1: expected a JSON object, got list",
                            f"{tmp_path / 'missing.jsonl'}: no such file", f"{tmp_path / 'missing.jsonl'}: no such file"]
