"""JSON Lines reading names the file and line of every problem and never stops at one."""

from pathlib import Path

import pytest

from kbgraph.core import jsonl
from kbgraph.core.jsonl import read_jsonl


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


def test_an_overlong_line_is_refused_without_reading_it_whole_and_the_next_lines_keep_their_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 100)
    monkeypatch.setattr(jsonl, "_SKIP_CHUNK", 7)  # the rest of the line is skipped in small pieces
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n{"b": "' + "x" * 1000 + '"}\n{"c": 3}\n' + "y" * 250)
    records = list(read_jsonl(path))
    assert [r.where for r in records] == [f"{path}:{n}" for n in (1, 2, 3, 4)]
    assert records[1].problem == "line is 1,010 bytes, over the 100-byte limit"
    assert records[2].value == {"c": 3}
    assert records[3].problem == "line is 250 bytes, over the 100-byte limit"  # no newline at the end


@pytest.mark.parametrize("levels", [65, 5_000, 100_000])
def test_a_value_nested_too_deep_is_a_problem_of_its_line_not_a_recursion_error(tmp_path: Path, levels: int) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a": ' + "[" * levels + "]" * levels + "}\n" + '{"ok": ' + "[" * 60 + "]" * 60 + "}\n")
    deep, fine = list(read_jsonl(path))
    assert deep.value is None and "nested deeper than 64 levels" in (deep.problem or "")
    assert fine.value is not None


def test_a_lone_surrogate_or_an_integer_beyond_64_bits_is_named_by_field(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"steps": [{"action": "a\\udcff"}]}\n{"retrieved": 100000000000000000000}\n')
    surrogate, huge = list(read_jsonl(path))
    assert surrogate.problem is not None and surrogate.problem.startswith("steps.0.action: contains a lone surrogate")
    assert huge.problem == "retrieved: 100000000000000000000 is outside the 64-bit integer range Neo4j stores"


def test_an_integer_too_long_to_read_is_a_json_error_at_its_column(tmp_path: Path) -> None:
    from kbgraph.core.jsonl import MAX_INT_DIGITS, LongIntegerError, json_problem, loads

    assert loads('{"n": ' + "7" * MAX_INT_DIGITS + "}")["n"] == int("7" * MAX_INT_DIGITS)
    for number in ("7" * 5_000, "-" + "7" * 5_000):
        with pytest.raises(LongIntegerError) as caught:
            loads('{"a": 1,\n "n": ' + number + "}")
        assert json_problem(caught.value) == "invalid JSON at line 2 column 7: an integer of 5,000 digits (at most 4,300 are read)"
    path = tmp_path / "records.jsonl"
    path.write_text('{"a": 1}\n{"n": ' + "7" * 5_000 + "}\n")
    [_, bad] = list(read_jsonl(path))
    assert bad.problem == "invalid JSON at column 7: an integer of 5,000 digits (at most 4,300 are read)"


def test_an_unterminated_object_is_said_to_end_too_soon_not_to_fail_at_column_1(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"problem": "p", "goal": "g"\n')
    [record] = list(read_jsonl(path))
    assert record.problem == "invalid JSON: it ends after 28 characters, before the value is complete (Expecting ',' delimiter)"
