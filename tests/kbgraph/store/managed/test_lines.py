"""The two Neo4j lines the managed server runs, and the Java each is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.core.errors import ManagedServerError
from kbgraph.core.settings import NEO4J_LINES
from kbgraph.store.managed.java import VECTOR_API_OPTION, choose_java, find_java, vector_api_options
from kbgraph.store.managed.lines import LINES
from kbgraph.store.managed.runtime import runtime_dir

OLD, NEW = LINES["5.26"], LINES["2026.09"]


def test_each_setting_value_names_a_line_pinned_to_a_release_of_it() -> None:
    assert set(LINES) == set(NEO4J_LINES)
    assert OLD.version.startswith("5.26.") and NEW.version.startswith("2026.09.")
    # 2026 renamed the entry point; the old name is not in its jar.
    assert (OLD.entry_point, NEW.entry_point) == ("org.neo4j.server.CommunityEntryPoint",
                                                  "org.neo4j.server.Neo4jCommunity")
    assert (OLD.min_java, NEW.min_java) == (17, 21)


def test_the_lines_are_cached_apart_each_by_its_release_and_pom(tmp_path: Path) -> None:
    assert runtime_dir(tmp_path, OLD).name.startswith(f"runtime-{OLD.version}-")
    assert runtime_dir(tmp_path, NEW).name.startswith(f"runtime-{NEW.version}-")
    assert runtime_dir(tmp_path, OLD).parent == runtime_dir(tmp_path, NEW).parent == tmp_path / "neo4j"


def test_lucene_gets_the_vector_api_on_the_javas_each_line_can_use_it_on() -> None:
    # 5.26's Lucene 9.11: Java 20-22. 2026.09's Lucene 10.5: Java 21-26 (its default upper bound).
    assert vector_api_options(17, OLD) == vector_api_options(25, OLD) == []
    assert vector_api_options(21, OLD) == [VECTOR_API_OPTION]
    assert vector_api_options(21, NEW) == vector_api_options(25, NEW) == [VECTOR_API_OPTION]
    assert vector_api_options(27, NEW) == vector_api_options(None, NEW) == []


def test_each_line_gets_a_java_it_supports_preferring_one_that_vectorises() -> None:
    installed = [("/usr/bin/java", 17), ("/jdk/25/bin/java", 25)]
    assert choose_java(installed, OLD) == ("/usr/bin/java", 17)
    assert choose_java(installed, NEW) == ("/jdk/25/bin/java", 25)
    assert choose_java([("/a", 17), ("/b", 21)], OLD) == ("/b", 21)  # 21 vectorises on 5.26
    assert choose_java([("/a", 25), ("/b", 21)], NEW) == ("/a", 25)  # both do: the first found
    # Newer than the release supports is used only when nothing better is installed.
    assert choose_java([("/a", 25), ("/b", 17)], OLD) == ("/b", 17)
    assert choose_java([("/a", 25)], OLD) == ("/a", 25)
    # An unreadable version is tried last; one that is too old never.
    assert choose_java([("/x", None), ("/a", 21)], NEW) == ("/a", 21)
    assert choose_java([("/x", None)], NEW) == ("/x", None)
    assert choose_java([("/usr/bin/java", 17)], NEW) is None


def test_this_machine_runs_5_26_on_java_17_and_2026_on_java_21_or_newer() -> None:
    _, old_java = find_java(OLD)
    assert old_java is not None and old_java >= 17
    try:
        _, new_java = find_java(NEW)
    except ManagedServerError as exc:
        pytest.skip(f"no Java 21+ installed here: {exc}")
    assert new_java is not None and new_java >= 21


def test_without_a_new_enough_java_the_error_lists_what_was_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kbgraph.store.managed.java.java_candidates", lambda: ["/usr/bin/java"])
    monkeypatch.setattr("kbgraph.store.managed.java.probe_java_version", lambda java: 17)
    with pytest.raises(ManagedServerError, match=r"2026\.09\.0 needs Java 21 or newer; found only /usr/bin/java "
                                                 r"\(Java 17\)\. Install a JDK 21–25 or set JAVA_HOME"):
        find_java(NEW)
