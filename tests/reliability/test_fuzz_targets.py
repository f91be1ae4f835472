"""Where a command writes: `export` and `report -o` given something that is not a regular file
(a FIFO, a socket, a device, a link to one) refuse it and leave it as it was; a write the disk
refuses (standard output on /dev/full) is a failure, in one line, with a non-zero exit."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget
from tests.kbgraph.core.test_files import non_regular
from tests.reliability.test_fuzz import FUZZ_SEED, TRIED, fuzz_settings

SAMPLES = Path(__file__).resolve().parents[2] / "kbgraph" / "samples" / "experiences.jsonl"
TARGET_KINDS = st.sampled_from(["fifo", "socket", "device", "link to a device", "link to a fifo"])
COMMANDS = st.sampled_from([("export", "{target}"), ("report", "-o", "{target}")])


def make_target(folder: Path, kind: str) -> Path:
    if not kind.startswith("link"):
        return non_regular(folder, kind)
    link = folder / kind.replace(" ", "-")
    link.symlink_to(non_regular(folder, "fifo") if kind.endswith("fifo") else Path("/dev/full"))
    return link


def kbgraph_process(target: Neo4jTarget, namespace: str, *args: str, stdout: object = subprocess.PIPE
                    ) -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` as a separate process, for a standard output that is a file of its own."""
    return subprocess.run([sys.executable, "-m", "kbgraph.cli", *args], env=target.env(namespace),
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300)  # type: ignore[call-overload]


@fuzz_settings(6)
@seed(FUZZ_SEED)
@given(kind=TARGET_KINDS, command=COMMANDS)
def test_a_target_that_is_not_a_regular_file_is_refused_and_left_alone(
    neo4j_target: Neo4jTarget, namespace: str, embedder: CachedEmbedder, tmp_path_factory: pytest.TempPathFactory,
    kind: str, command: tuple[str, ...],
) -> None:
    folder = tmp_path_factory.mktemp("targets")
    target = make_target(folder, kind)
    before = {p.name: (stat.S_IFMT(p.lstat().st_mode), p.lstat().st_ino) for p in folder.iterdir()}
    TRIED["write target"] = TRIED.get("write target", 0) + 1
    # In this process (tests/cli_in_process.py): the refusal, not the process, is what is checked.
    result = run_kbgraph(neo4j_target.env(namespace), *(part.format(target=target) for part in command),
                         embedder=embedder)
    assert result.returncode == 2, result.stderr
    # A link is refused as a link, whatever it points at: the rename would replace it.
    expected = "is a symbolic link" if kind.startswith("link") else "not a regular file"
    assert expected in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 2  # the headline and the one problem
    after = {p.name: (stat.S_IFMT(p.lstat().st_mode), p.lstat().st_ino) for p in folder.iterdir()}
    assert after == before


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_export_to_a_full_disk_fails_in_one_line(neo4j_target: Neo4jTarget, kb: KnowledgeBase) -> None:
    kb.ingest([SAMPLES])
    with open("/dev/full", "w") as full:
        result = kbgraph_process(neo4j_target, kb.namespace, "export", "-", stdout=full)
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == "kbgraph: error: cannot write the export to standard output: No space left on device"
