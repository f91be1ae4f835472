"""The corpus of the ``transient`` set: the gold runs, half of them with one call that failed for the
moment and was retried."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbgraph.search.eval.transient import TRANSIENT_ERROR, transient_corpus, with_transient_error


def run(run_id: str, domain: str = "retail", steps: int = 3) -> dict[str, Any]:
    return {"id": run_id, "domain": domain, "task": "t", "outcome": {"success": True},
            "steps": [{"action": f"act_{i}", "arguments": {"n": i}, "observation": "ok"} for i in range(steps)]}


def test_half_the_runs_retry_one_call_after_a_transient_error() -> None:
    records = [run(f"r-{i}") for i in range(400)]
    changed = [(before, after) for before in records if (after := with_transient_error(before)) != before]
    assert 160 <= len(changed) <= 240
    for before, after in changed:
        steps = after["steps"]
        assert isinstance(steps, list) and len(steps) == 4
        at = next(i for i, step in enumerate(steps) if "error" in step)
        failed, retried = steps[at], steps[at + 1]
        # The failed copy is the call it precedes, with the error and without a result.
        assert failed == {"action": retried["action"], "arguments": retried["arguments"], "error": TRANSIENT_ERROR}
        assert [s for s in steps if "error" not in s] == before["steps"]


def test_which_run_fails_and_where_follows_from_its_id_alone() -> None:
    once = [with_transient_error(run(f"r-{i}")) for i in range(50)]
    assert once == [with_transient_error(run(f"r-{i}")) for i in range(50)]
    # Not always the same call: the position comes from the id too.
    positions = {next(i for i, s in enumerate(r["steps"]) if "error" in s) for r in once if r != run(r["id"])}
    assert positions == {0, 1, 2}


def test_runs_without_calls_and_webarena_intents_are_left_as_they_are() -> None:
    for i in range(20):
        assert with_transient_error(run(f"w-{i}", domain="webarena")) == run(f"w-{i}", domain="webarena")
        assert with_transient_error(run(f"e-{i}", steps=0)) == run(f"e-{i}", steps=0)


def test_the_corpus_is_made_once_in_the_cache_and_named_by_the_source_content(tmp_path: Path) -> None:
    source = tmp_path / "gold"
    source.mkdir()
    (source / "retail.jsonl").write_text("".join(json.dumps(run(f"r-{i}")) + "\n" for i in range(10)))
    cache = tmp_path / "cache"
    made = transient_corpus(source, cache)
    lines = (made / "retail.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [with_transient_error(run(f"r-{i}")) for i in range(10)]
    assert transient_corpus(source, cache) == made  # reused
    (source / "retail.jsonl").write_text(json.dumps(run("other")) + "\n")
    assert transient_corpus(source, cache) != made  # the gold files changed: made again
    assert not [p for p in made.parent.iterdir() if p.name.startswith(".")]  # nothing half-made left
