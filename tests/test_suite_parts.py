"""What ``./kb test`` runs without arguments (tests/suite.py), and the order the suite's files start in
(tests/conftest.py): every file and test they name exists, so that neither can silently stop
meaning anything when a test moves."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LONGEST_FILES
from tests.suite import NOT_ON_THE_OTHER_LINE, OTHER_LINE_SUBSET, other_line, parts

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("named", [*OTHER_LINE_SUBSET, *NOT_ON_THE_OTHER_LINE, *LONGEST_FILES])
def test_every_file_and_test_named_exists(named: str) -> None:
    path, _, test = named.partition("::")
    assert (REPO / path).exists(), f"{path} is gone: name its new place"
    if test:
        assert f"def {test}(" in (REPO / path).read_text(), f"{path} has no {test}"


def test_what_is_left_out_of_the_other_line_lies_inside_the_subset_and_says_why() -> None:
    for named, why in NOT_ON_THE_OTHER_LINE.items():
        assert any(named.startswith(folder + "/") for folder in OTHER_LINE_SUBSET), named
        assert len(why) > 40, named


@pytest.mark.parametrize("configured", ["5.26", "2026.09"])
def test_the_whole_suite_runs_on_the_configured_line_and_its_server_tests_of_the_subset_on_the_other(
    configured: str,
) -> None:
    whole, subset = parts(configured)  # type: ignore[arg-type]
    assert (whole.line, whole.arguments) == (configured, ())
    assert subset.line == other_line(configured) != configured  # type: ignore[arg-type]
    arguments = list(subset.arguments)
    assert arguments[:2] == ["-m", "neo4j"]
    assert [a for a in arguments if not a.startswith("-") and a != "neo4j"] == list(OTHER_LINE_SUBSET)
    assert {a.removeprefix("--deselect=") for a in arguments if a.startswith("--deselect=")} == set(NOT_ON_THE_OTHER_LINE)
