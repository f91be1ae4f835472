"""The held-out corpus of a set: the corpus without the runs its queries were written from, so a
leave-one-out figure cannot come from the source's own text."""

from __future__ import annotations

import json
from pathlib import Path

from kbgraph.search.eval.held_out import without_runs


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    (folder / "a.jsonl").write_text("".join(json.dumps({"id": f"a-{i}", "task": "t"}) + "\n" for i in range(3)) + "\n")
    (folder / "b.jsonl").write_text(json.dumps({"id": "b-0", "task": "t"}) + "\nnot json\n")
    return folder


def test_the_runs_left_out_are_gone_and_everything_else_is_kept_as_it_was(tmp_path: Path) -> None:
    source = _corpus(tmp_path / "corpus")
    held = without_runs(source, ["a-1", "b-0"], tmp_path / "cache")
    assert held.parent == tmp_path / "cache" / "dev-corpora"
    assert [json.loads(line)["id"] for line in (held / "a.jsonl").read_text().splitlines()] == ["a-0", "a-2"]
    # A line that is no record stays, for ingestion to report where it is.
    assert (held / "b.jsonl").read_text() == "not json\n"


def test_the_same_runs_of_the_same_files_reuse_one_folder_and_others_get_their_own(tmp_path: Path) -> None:
    source = _corpus(tmp_path / "corpus")
    first = without_runs(source, ["a-1"], tmp_path / "cache")
    assert without_runs(source, ["a-1", "a-1"], tmp_path / "cache") == first
    assert without_runs(source, ["a-2"], tmp_path / "cache") != first
    (source / "a.jsonl").write_text(json.dumps({"id": "a-9", "task": "t"}) + "\n")
    assert without_runs(source, ["a-1"], tmp_path / "cache") != first
    assert not list((tmp_path / "cache" / "dev-corpora").glob(".*")), "no half-built folder is left behind"
