"""kbgraph's English stop words are scikit-learn's, without importing scikit-learn to search."""

from __future__ import annotations

import subprocess
import sys

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as SKLEARN_STOP_WORDS

from kbgraph.search.stop_words import ENGLISH_STOP_WORDS


def test_the_list_is_scikit_learns() -> None:
    assert ENGLISH_STOP_WORDS == SKLEARN_STOP_WORDS


def test_searching_does_not_import_scikit_learn() -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, kbgraph.search.lexical, kbgraph.search.student; print('sklearn' in sys.modules)"],
        capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "False"
