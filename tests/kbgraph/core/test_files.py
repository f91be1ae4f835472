"""Writing a file whole, only over a regular file, and saying so when the disk refuses."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.core.files import target_problem, write_whole


def non_regular(tmp_path: Path, kind: str) -> Path:
    """A FIFO, a socket, a character device (made with /dev/full's numbers) or a folder."""
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 7))
        except PermissionError:
            pytest.skip("making a device node needs CAP_MKNOD")
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "folder"])
def test_a_target_that_is_not_a_regular_file_is_refused_and_left_as_it_was(tmp_path: Path, kind: str) -> None:
    target = non_regular(tmp_path, kind)
    before = target.lstat()
    assert target_problem(target) is not None
    with pytest.raises(InvalidInputError, match="not a regular file|is a folder"):
        write_whole(target, lambda file: file.write("x"), what="the export")
    after = target.lstat()
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    assert sorted(p.name for p in tmp_path.iterdir()) == [kind]  # no partial file left behind


def test_a_link_to_a_device_is_refused_too(tmp_path: Path) -> None:
    link = tmp_path / "full"
    link.symlink_to("/dev/full")
    assert "is a symbolic link (to /dev/full)" in (target_problem(link) or "")


@pytest.mark.parametrize("points_at", ["file", "missing"])
def test_a_symbolic_link_is_refused_and_neither_it_nor_its_target_changes(tmp_path: Path, points_at: str) -> None:
    # The rename replaced the link itself with the file: refused, as export and report say.
    pointed = tmp_path / "real.jsonl"
    if points_at == "file":
        pointed.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(pointed)
    assert "is a symbolic link" in (target_problem(link) or "")
    with pytest.raises(InvalidInputError, match=f"{link}: is a symbolic link \\(to {pointed}\\)"):
        write_whole(link, lambda file: file.write("new\n"), what="the export")
    assert link.is_symlink() and os.readlink(link) == str(pointed)
    assert (pointed.read_text() if points_at == "file" else None) == ("old\n" if points_at == "file" else None)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["link.jsonl"] + (["real.jsonl"] if points_at == "file" else []))


def test_a_regular_file_is_replaced_whole_with_the_mode_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    assert write_whole(target, lambda file: file.write("new\n"), what="the export", mode=0o600) == 4
    assert target.read_text() == "new\n" and target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_a_write_the_file_system_refuses_is_a_one_line_failure_and_the_old_file_stays(tmp_path: Path) -> None:
    # A real refusal, not a simulated one: the file-size limit (EFBIG) of a child process.
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    code = ("import resource, signal, sys\n"
            "from pathlib import Path\n"
            "from kbgraph.core.errors import KbgraphError\n"
            "from kbgraph.core.files import write_whole\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
            "try:\n"
            "    write_whole(Path(sys.argv[1]), lambda f: f.write('x' * 1_000_000), what='the export')\n"
            "except KbgraphError as error:\n"
            "    print(error)\n"
            "    sys.exit(1)\n")
    result = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"cannot write the export to {target}: File too large")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_an_error_inside_the_writer_leaves_no_partial_file(tmp_path: Path) -> None:
    def failing(file: object) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(KbgraphError, match="No space left on device"):
        write_whole(tmp_path / "out", failing, what="the report")
    assert list(tmp_path.iterdir()) == []


def test_a_source_that_is_a_device_is_named_as_one_not_as_missing(tmp_path: Path) -> None:
    from kbgraph.core.files import source_problem

    assert source_problem(Path("/dev/zero")) == "/dev/zero: is a character device, not a regular file"
    assert source_problem(tmp_path / "none") == f"{tmp_path / 'none'}: no such file"
    assert source_problem(tmp_path) == f"{tmp_path}: is a folder"
    os.mkfifo(tmp_path / "fifo")
    assert source_problem(tmp_path / "fifo") == f"{tmp_path / 'fifo'}: is a FIFO, not a regular file"
    (tmp_path / "file").write_text("x")
    assert source_problem(tmp_path / "file") is None
