"""Values that broke a door once: embeddings cosine cannot use, integers too long for Python to
read, and long repetitive text. Each is refused cleanly, saying where (or, for text, handled in
time), and the namespace keeps working: its searches still answer afterwards."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget
from tests.reliability.test_fuzz import (
    EXPERIENCE, FUZZ_SEED, TRAJECTORY, TRIED, accepted_or_refused_cleanly, dumps, fuzz_settings,
)

DIM = 384


def _vector(kind: str, scale: float) -> list[float]:
    ramp = [((i % 7) - 3) * scale for i in range(DIM)]
    return {"zero": [0.0] * DIM, "nan": [float("nan")] + ramp[1:], "inf": [float("inf")] + ramp[1:],
            "huge": [1e308] * DIM, "overflowing": [scale * 1e20] * DIM, "tiny": [1e-30] * DIM,
            "short": ramp[:-1], "long": ramp + [1.0], "one value": [1.0]}[kind]


#: Vectors a cosine similarity cannot use, or of the wrong dimension.
BAD_VECTORS = st.builds(_vector, st.sampled_from(["zero", "nan", "inf", "huge", "overflowing", "tiny", "short",
                                                  "long", "one value"]), st.floats(1.0, 1e6))
VECTOR_FIELDS = st.sampled_from(["pg_embedding", "structure_embedding", "context_embedding", "steps.0.embedding"])
#: Digit counts past what Python converts to an integer (4,300).
LONG_DIGITS = st.integers(4_301, 30_000).map(lambda n: "7" * n)


def with_vector(record: dict[str, Any], field: str, vector: list[float]) -> dict[str, Any]:
    record = copy.deepcopy(record)
    if field.startswith("steps."):
        record["steps"][0]["embedding"] = vector
    else:
        record[field] = vector
    return record


def searches_still_work(kb: KnowledgeBase) -> None:
    kb.search("cancel a pending order", k=3)
    kb.search_steps("look up the order", k=3)


@fuzz_settings(25)
@seed(FUZZ_SEED)
@given(field=VECTOR_FIELDS, vector=BAD_VECTORS)
def test_an_unusable_embedding_through_the_api_is_refused_and_searches_keep_working(
    kb: KnowledgeBase, field: str, vector: list[float]
) -> None:
    if kb.get("fuzz-1") is None:
        assert kb.add_experiences([EXPERIENCE]).new == 1
    record = with_vector(EXPERIENCE | {"id": "fuzz-vector"}, field, vector)
    TRIED["bad vector (add)"] = TRIED.get("bad vector (add)", 0) + 1
    assert accepted_or_refused_cleanly(kb, "bad vector", lambda: kb.add_experiences([record])) == "refused"
    searches_still_work(kb)


@fuzz_settings(10)
@seed(FUZZ_SEED)
@given(vector=BAD_VECTORS)
def test_an_unusable_embedding_in_an_import_is_refused_by_line_and_field(
    kb: KnowledgeBase, tmp_path_factory: pytest.TempPathFactory, vector: list[float]
) -> None:
    folder = tmp_path_factory.mktemp("import")
    if kb.get("fuzz-1") is None:
        kb.add_experiences([EXPERIENCE])
    kb.export(folder / "good.jsonl")
    lines = [json.loads(line) for line in (folder / "good.jsonl").read_text().splitlines()]
    number, node = next((n, line) for n, line in enumerate(lines, 1) if line.get("label") == "Experience")
    node["key"] = "fuzz-imported"
    node["vectors"]["pg_embedding"] = vector
    (folder / "edited.jsonl").write_text("".join(dumps(line) + "\n" for line in lines))
    TRIED["bad vector (import)"] = TRIED.get("bad vector (import)", 0) + 1
    with pytest.raises(InvalidInputError, match=rf"edited.jsonl:{number}: .*vectors.*pg_embedding"):
        kb.import_file(folder / "edited.jsonl")
    assert kb.get("fuzz-imported") is None
    searches_still_work(kb)


@fuzz_settings(10)
@seed(FUZZ_SEED)
@given(digits=LONG_DIGITS, kind=st.sampled_from(["trajectory", "experience"]), field=st.sampled_from(["id", "quality", "extra"]))
def test_an_integer_too_long_to_read_in_a_file_is_refused_with_its_line_and_column(
    kb: KnowledgeBase, tmp_path_factory: pytest.TempPathFactory, digits: str, kind: str, field: str
) -> None:
    base = TRAJECTORY if kind == "trajectory" else EXPERIENCE
    text = dumps(base | {field: 0})
    column = text.index(f'"{field}": 0') + len(f'"{field}": ') + 1
    path = tmp_path_factory.mktemp("digits") / "runs.jsonl"
    path.write_text(dumps(base | {"id": "fine"}) + "\n" + text.replace(f'"{field}": 0', f'"{field}": {digits}') + "\n")
    TRIED["long integer (file)"] = TRIED.get("long integer (file)", 0) + 1
    before = kb.stats()
    with pytest.raises(InvalidInputError) as refused:
        kb.ingest([path])
    assert f"runs.jsonl:2: invalid JSON at column {column}: an integer of {len(digits):,} digits" in str(refused.value)
    assert kb.stats() == before


def kbgraph(target: Neo4jTarget, kb: KnowledgeBase, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` on ``kb``'s namespace in this process (tests/cli_in_process.py), with its MiniLM."""
    return run_kbgraph(target.env(kb.namespace), *args, embedder=kb.embedder, stdin=stdin)


def test_an_integer_too_long_to_read_is_a_clear_error_at_every_command(
    neo4j_target: Neo4jTarget, kb: KnowledgeBase, tmp_path: Path
) -> None:
    digits = "7" * 5000
    line = dumps(TRAJECTORY).replace('"id": ', f'"n": {digits}, "id": ', 1)
    column = line.index(digits) + 1
    export = tmp_path / "export.jsonl"
    kb.add_experiences([EXPERIENCE])
    kb.export(export)
    lines = export.read_text().splitlines()
    node = json.loads(lines[1])
    node["properties"]["n"] = "@digits@"
    lines[1] = json.dumps(node).replace('"@digits@"', digits)
    (tmp_path / "edited.jsonl").write_text("\n".join(lines) + "\n")
    edited_column = lines[1].index(digits) + 1
    step = f'{{"action": "a", "arguments": {{"x": {digits}}}}}'
    runs = {
        "stdin ingest": (kbgraph(neo4j_target, kb, "ingest", "-", stdin=line + "\n"),
                         f"<stdin>:1: invalid JSON at column {column}: an integer of 5,000 digits"),
        "refine": (kbgraph(neo4j_target, kb, "refine", step),
                   f"step 1: invalid JSON at column {step.index(digits) + 1}: an integer of 5,000 digits"),
        "import": (kbgraph(neo4j_target, kb, "import", str(tmp_path / "edited.jsonl")),
                   f"edited.jsonl:2: invalid JSON at column {edited_column}: an integer of 5,000 digits"),
    }
    for door, (result, message) in runs.items():
        TRIED["long integer (cli)"] = TRIED.get("long integer (cli)", 0) + 1
        assert result.returncode == 2, (door, result.stderr)
        assert message in result.stderr and "internal error" not in result.stderr, (door, result.stderr)
    assert kb.count() == 1
