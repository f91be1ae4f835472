"""JSON Lines reading names the file and line of every problem and never stops at one."""

from pathlib import Path

from kbgraph.jsonl import read_jsonl


def test_each_problem_is_named_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{not json\n[1, 2]\n\xff\xfe{"b": 2}\n{"c": 3}\n')
    records = list(read_jsonl(path))
    assert [r.where for r in records] == [f"{path}:1", f"{path}:3", f"{path}:4", f"{path}:5", f"{path}:6"]
    assert records[0].value == {"a": 1} and records[-1].value == {"c": 3}
    assert "invalid JSON" in (records[1].problem or "")
    assert "expected a JSON object" in (records[2].problem or "")
    assert "not UTF-8" in (records[3].problem or "")


def test_an_empty_file_yields_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert list(read_jsonl(path)) == []
