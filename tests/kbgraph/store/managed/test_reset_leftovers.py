"""A ``kbgraph server reset-password`` killed midway (kill -9) leaves what it set aside in
``run/before-reset-password.*``; the next start or reset finishes it: undone when the server is
stopped (the old password comes back), cleared when the server runs on the new one, and said.
The folders are laid out as a reset leaves them; starting Neo4j is test_managed_server's part."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.store.managed.reset import RESET_ASIDE_PREFIX, finish_interrupted_resets, reset_parts


def a_home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "instance"
    for folder in ("data/databases/system", "data/databases/neo4j", "data/transactions/system", "data/dbms", "run"):
        (home / folder).mkdir(parents=True)
    (home / "data/databases/system/store").write_text("old users")
    (home / "data/transactions/system/log").write_text("old log")
    (home / "data/dbms/auth.ini").write_text("old auth")
    (home / "data/databases/neo4j/store").write_text("the data")
    password_file = home / "password"
    password_file.write_text("old-password")
    return home, password_file


def set_aside(home: Path, password_file: Path, how_many: int) -> Path:
    """As reset_password does, up to the kill: the first ``how_many`` parts moved aside."""
    aside = home / "run" / f"{RESET_ASIDE_PREFIX}0badcafe"
    aside.mkdir(mode=0o700)
    for part in reset_parts(home, password_file)[:how_many]:
        kept = aside / part.relative_to(home)
        kept.parent.mkdir(parents=True, exist_ok=True)
        part.rename(kept)
    return aside


@pytest.mark.parametrize("killed", ["while setting aside", "during the new start"])
def test_a_reset_killed_midway_is_undone_by_the_next_start_of_a_stopped_server(
    tmp_path: Path, killed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    home, password_file = a_home(tmp_path)
    aside = set_aside(home, password_file, 2 if killed == "while setting aside" else 4)
    if killed == "during the new start":  # the new start had made a system database and a password
        (home / "data/databases/system").mkdir()
        (home / "data/databases/system/store").write_text("half-made users")
        password_file.write_text("new-password")
    said: list[str] = []
    finish_interrupted_resets(home, password_file, running=False, say=said.append)
    assert not aside.exists() and not list((home / "run").iterdir())
    assert password_file.read_text() == "old-password"
    assert (home / "data/databases/system/store").read_text() == "old users"
    assert (home / "data/transactions/system/log").read_text() == "old log"
    assert (home / "data/dbms/auth.ini").read_text() == "old auth"
    assert (home / "data/databases/neo4j/store").read_text() == "the data"
    assert len(said) == 1 and "was undone" in said[0] and "run it again" in said[0], said


def test_a_reset_killed_after_its_server_started_is_cleared_on_the_next_start(tmp_path: Path) -> None:
    home, password_file = a_home(tmp_path)
    aside = set_aside(home, password_file, 4)
    (home / "data/databases/system").mkdir()
    password_file.write_text("new-password")
    said: list[str] = []
    finish_interrupted_resets(home, password_file, running=True, say=said.append)
    assert not aside.exists() and password_file.read_text() == "new-password"
    assert len(said) == 1 and "new password" in said[0] and "removed" in said[0], said


def test_the_reset_under_way_is_left_alone(tmp_path: Path) -> None:
    home, password_file = a_home(tmp_path)
    aside = set_aside(home, password_file, 4)
    said: list[str] = []
    finish_interrupted_resets(home, password_file, running=False, say=said.append, but=aside)
    assert aside.exists() and not password_file.exists() and not said
