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
from kbgraph.store.search_version import BUMP, CHANGES_SEARCHED, LEAVES_SEARCHED, bump_first

#: A clause that writes.
WRITES = re.compile(r"\b(SET|MERGE|CREATE|DELETE|REMOVE)\b|setNodeVectorProperty")
#: What a search reads of a namespace as a whole: experiences, their ABSTRACTION and HAS_STEP edges.
REACHES_SEARCHED = re.compile(r":Experience\b|ABSTRACTION|HAS_STEP|MATCH \(n\)|MATCH \(a\)-\[r\]")


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
