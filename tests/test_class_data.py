"""The test servers' class-data archive (tests/class_data.py): only an archive a JVM maps becomes the
shared one, so a server cut short while writing it cannot crash the servers after it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kbgraph.core.settings import Settings
from kbgraph.store.managed.lines import DEFAULT_LINE
from kbgraph.store.managed.runtime import ensure_runtime
from tests.class_data import ClassDataArchive


def test_with_no_archive_yet_a_writer_writes_its_own_file_and_a_reader_runs_without(tmp_path: Path) -> None:
    archive = ClassDataArchive(tmp_path, DEFAULT_LINE)
    assert archive.jvm_options() == ()
    (option,) = archive.jvm_options(write=True)
    assert option.startswith("-XX:ArchiveClassesAtExit=") and archive.written is not None
    assert archive.written.parent == archive.path.parent and archive.written != archive.path


def test_an_archive_cut_short_is_deleted_not_shared(tmp_path: Path) -> None:
    archive = ClassDataArchive(tmp_path, DEFAULT_LINE)
    archive.jvm_options(write=True)
    assert archive.written is not None
    written = archive.written
    written.parent.mkdir(parents=True, exist_ok=True)
    written.write_bytes(b"\0" * 4096)  # what a JVM killed while writing leaves
    archive.keep()
    assert not written.exists() and not archive.path.exists()


@pytest.mark.neo4j  # runs the Neo4j runtime's jars (fetched by Maven on a fresh machine)
def test_an_archive_written_by_a_jvm_that_exited_is_shared(tmp_path: Path) -> None:
    ensure_runtime(Settings().cache_dir, quiet=True)
    archive = ClassDataArchive(Settings().cache_dir, DEFAULT_LINE)
    archive.path = tmp_path / "shared.jsa"  # not the suite's own
    (option,) = archive.jvm_options(write=True)
    # neo4j-admin loads a few of the runtime's classes and exits (with a usage status: no home).
    subprocess.run([archive.java, option, "-cp", f"{archive.lib}/*", "org.neo4j.cli.AdminTool", "--version"],
                   capture_output=True, timeout=120)
    archive.keep()
    assert archive.path.stat().st_size > 0 and list(tmp_path.iterdir()) == [archive.path]
    assert archive.jvm_options() == (f"-XX:SharedArchiveFile={archive.path}",)


def test_a_shared_archive_is_read_by_every_server(tmp_path: Path) -> None:
    archive = ClassDataArchive(tmp_path, DEFAULT_LINE)
    archive.path.parent.mkdir(parents=True, exist_ok=True)
    archive.path.write_bytes(b"kept")
    assert archive.jvm_options() == archive.jvm_options(write=True) == (f"-XX:SharedArchiveFile={archive.path}",)
