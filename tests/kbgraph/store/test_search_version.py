"""The namespace's search version (kbgraph.store.search_version): every named write that can change
what a search reads of a namespace as a whole bumps it in its own transaction, once per transaction;
a write rolled back leaves it; the other writes are named with the reason they leave it."""

from __future__ import annotations

import re

import neo4j
import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.store.gateway import run_named
from kbgraph.store.queries import query, query_names
from kbgraph.store.search_version import BUMP, CHANGE_SEPARATOR, CHANGES_SEARCHED, LEAVES_SEARCHED, bump_first, changed_ids

#: A clause that writes.
WRITES = re.compile(r"\b(SET|MERGE|CREATE|DELETE|REMOVE)\b|setNodeVectorProperty")
#: What a search reads of a namespace as a whole: experiences, their ABSTRACTION and HAS_STEP edges,
#: the meta-concept documents and who exhibits them.
REACHES_SEARCHED = re.compile(r":Experience\b|ABSTRACTION|HAS_STEP|:MetaConcept\b|EXHIBITS|MATCH \(n\)|MATCH \(a\)-\[r\]")


def test_every_named_write_that_reaches_experiences_says_whether_it_changes_what_is_searched() -> None:
    unnamed = [name for name in query_names()
               if WRITES.search(query(name)) and REACHES_SEARCHED.search(query(name))
               and not name.startswith(("search_", "kb_state_"))
               and name not in CHANGES_SEARCHED and name not in LEAVES_SEARCHED]
    assert unnamed == [], "add each to CHANGES_SEARCHED or LEAVES_SEARCHED (kbgraph.store.search_version)"
    assert set(CHANGES_SEARCHED) <= set(query_names()) and set(LEAVES_SEARCHED) <= set(query_names())
    assert not CHANGES_SEARCHED & set(LEAVES_SEARCHED)


class Runner:
    """Stands for a driver's transaction or session (bump_first only keeps it by identity)."""


def test_a_transaction_bumps_each_namespace_once_and_a_session_every_time() -> None:
    tx, other = Runner(), Runner()
    assert bump_first(tx, "experience_upsert", {"kb": "a"}, transaction=True) == "a"
    assert bump_first(tx, "step_upsert", {"kb": "a"}, transaction=True) is None
    assert bump_first(tx, "experience_upsert", {"kb": "b"}, transaction=True) == "b"
    assert bump_first(other, "experience_upsert", {"kb": "a"}, transaction=True) == "a"
    assert bump_first(tx, "feedback_used", {"kb": "c"}, transaction=True) is None
    session = Runner()
    assert bump_first(session, "namespace_delete", {"kb": "a"}, transaction=False) == "a"
    assert bump_first(session, "namespace_delete", {"kb": "a"}, transaction=False) == "a"


def version(driver: neo4j.Driver, kb: KnowledgeBase) -> str | None:
    with driver.session() as session:
        record = session.run("MATCH (s:KbState {kb: $kb}) RETURN s.search_version AS v", kb=kb.namespace).single()
    return None if record is None else record["v"]


def test_a_write_bumps_the_version_in_its_own_transaction_and_a_rollback_leaves_it(kb: KnowledgeBase,
                                                                                   driver: neo4j.Driver) -> None:
    kb.gateway.write(BUMP, kb=kb.namespace)
    before = version(driver, kb)
    assert before is not None

    def refused(_: object) -> None:
        raise RuntimeError("refused before the commit")

    with pytest.raises(RuntimeError):
        kb.gateway.write_all([("experience_delete", {"kb": kb.namespace, "ids": ["none"]})], verify=refused)
    assert version(driver, kb) == before
    kb.gateway.write("experience_delete", kb=kb.namespace, ids=["none"])
    assert version(driver, kb) not in (before, None)
    with driver.session() as session:  # a write in a transaction of the caller's own
        with session.begin_transaction() as tx:
            run_named(tx, "experience_delete", {"kb": kb.namespace, "ids": ["none"]})
            inside = tx.run("MATCH (s:KbState {kb: $kb}) RETURN s.search_version AS v", kb=kb.namespace).single()
            tx.commit()
    assert inside is not None and version(driver, kb) == inside["v"]


def test_each_write_says_what_it_changes_from_its_parameters_or_what_it_returned_or_that_it_cannot() -> None:
    assert changed_ids("experience_upsert", {"rows": [{"id": "a"}, {"id": "b"}]}) == (["a", "b"], [])
    assert changed_ids("maintenance_archive", {"rows": [{"id": "a"}]}) == (["a"], ["a"]), "its members' rows too"
    assert changed_ids("maintenance_restore", {"ids": ["a"], "run": None}) == (["a"], ["a"])
    assert changed_ids("maintenance_restore", {"ids": [], "run": "r1"}) is None, "a run's: the query finds them"
    refresh = {"rows": [{"id": "x"}, {"id": "y"}]}
    assert changed_ids("abstract_experiences_refresh", refresh) == ([], []), "noted after it ran"
    assert changed_ids("abstract_experiences_refresh", refresh, [{"id": "x", "back": True}, {"id": "y", "back": False}]) \
        == (["x", "y"], ["x"]), "one that came back changes its members' rows"
    assert changed_ids("relations_inferred_delete", {"kb": "k"}) is None
    assert changed_ids("experience_upsert", {"rows": [{"no id": 1}]}) is None, "another shape: cannot say"


def feed(driver: neo4j.Driver, kb: KnowledgeBase, since: str, inclusive: bool = False) -> list[str] | None:
    with driver.session() as session:
        record = session.run(query("search_changes_since"), kb=kb.namespace, since=since, inclusive=inclusive,
                             separator=CHANGE_SEPARATOR).single()
    assert record is not None
    return None if record["changed"] is None else list(record["changed"])


def test_the_feed_keeps_the_last_32_versions_and_tells_nothing_past_them(kb: KnowledgeBase, driver: neo4j.Driver) -> None:
    kb.gateway.write(BUMP, kb=kb.namespace)
    versions = [version(driver, kb)]
    for n in range(40):
        kb.gateway.write("experience_delete", kb=kb.namespace, ids=[f"gone-{n}"])
        versions.append(version(driver, kb))
    with driver.session() as session:
        record = session.run("MATCH (s:KbState {kb: $kb}) RETURN s.change_versions AS v", kb=kb.namespace).single()
    assert record is not None and record["v"] == versions[-32:]
    assert feed(driver, kb, str(versions[-3])) == ["gone-38", "gone-39"]
    assert feed(driver, kb, str(versions[-1])) == []
    assert feed(driver, kb, str(versions[0])) is None, "older than the feed holds"
    # Inclusive: what the write that made the version changed too (a whole read at it may have seen
    # part of its commit).
    assert feed(driver, kb, str(versions[-3]), inclusive=True) == ["gone-37", "gone-38", "gone-39"]
    assert feed(driver, kb, str(versions[-1]), inclusive=True) == ["gone-39"]
    assert feed(driver, kb, str(versions[-32]), inclusive=True) == [f"gone-{n}" for n in range(8, 40)]


def test_a_version_that_is_the_one_now_has_nothing_changed_since_even_with_no_feed(kb: KnowledgeBase,
                                                                                   driver: neo4j.Driver) -> None:
    # A namespace written before the feed existed (or last by an import) holds a version and no feed:
    # a search that kept its rows at that version must not be told "cannot say" (a whole read).
    kb.gateway.write(BUMP, kb=kb.namespace)
    with driver.session() as session:
        session.run("MATCH (s:KbState {kb: $kb}) REMOVE s.change_versions, s.change_ids, s.change_pending",
                    kb=kb.namespace).consume()
    now = str(version(driver, kb))
    assert feed(driver, kb, now) == []
    assert feed(driver, kb, now, inclusive=True) is None, "what made the version now is not held"
    assert feed(driver, kb, "an-older-version") is None, "the feed cannot say what changed since another version"
    kb.gateway.write("experience_delete", kb=kb.namespace, ids=["gone"])
    assert feed(driver, kb, now) == ["gone"], "the feed starts at the next write, from the version before it"
    assert feed(driver, kb, now, inclusive=True) is None, "but what made its first version is not held"
    assert feed(driver, kb, str(version(driver, kb))) == []
