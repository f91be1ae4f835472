"""The held-out corpus of a set: the corpus without the runs its queries were written from, so a
leave-one-out figure cannot come from the source's own text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph.search.eval.held_out import kept_in_fraction, without_runs


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


def test_a_share_of_the_runs_is_the_same_runs_everywhere_and_grows_by_adding_runs_never_swapping_them() -> None:
    runs = [f"run-{i}" for i in range(2000)]
    shares = {f: {r for r in runs if kept_in_fraction(r, f)} for f in (0.1, 0.25, 0.5, 1.0)}
    assert shares[0.1] <= shares[0.25] <= shares[0.5] <= shares[1.0] == set(runs)
    for fraction, kept in shares.items():
        assert abs(len(kept) / len(runs) - fraction) < 0.04


def test_the_held_out_corpus_of_a_share_of_the_runs_leaves_out_both_the_sources_and_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "corpus"
    source.mkdir()
    ids = [f"r-{i}" for i in range(200)]
    (source / "a.jsonl").write_text("".join(json.dumps({"id": i, "task": "t"}) + "\n" for i in ids))
    half = without_runs(source, ["r-0"], tmp_path / "cache", fraction=0.5)
    kept = [json.loads(line)["id"] for line in (half / "a.jsonl").read_text().splitlines()]
    assert kept == [i for i in ids if i != "r-0" and kept_in_fraction(i, 0.5)]
    assert half != without_runs(source, ["r-0"], tmp_path / "cache")
    with pytest.raises(ValueError, match="fraction 0"):
        without_runs(source, ["r-0"], tmp_path / "cache", fraction=0.0)
