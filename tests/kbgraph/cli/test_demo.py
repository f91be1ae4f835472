"""``kbgraph demo``: the main job, on the test server, saying what its time went to."""

from __future__ import annotations

import re

from kbgraph.kb import KnowledgeBase
from tests.conftest import Neo4jTarget
from tests.kbgraph.cli.test_cli import kbgraph


def test_the_demo_ingests_the_samples_and_tells_start_up_from_search(neo4j_target: Neo4jTarget, kb: KnowledgeBase) -> None:
    # In this process (the demo times its own stages, not the process's start).
    done = kbgraph(neo4j_target, kb.namespace, "demo", "-n", kb.namespace)
    assert done.returncode == 0, done.stderr[-3000:]
    assert kb.count() > 0
    lines = done.stdout.rstrip().splitlines()
    # The shown search ran after a first one (the model loaded, Neo4j's query plans made), which is
    # timed on its own line: a cold start is never read as the search's own time.
    assert re.fullmatch(r"start-up \d+\.\d s \(the Neo4j server and connection, the schema\), loading the embedding "
                        r"model \d+\.\d s; ingestion \d+\.\d s", lines[-3]), lines[-3]
    assert re.fullmatch(r"first search after start-up \d+ ms \(Neo4j plans each query at its first run\); "
                        r"the search shown, warm: \d+ ms", lines[-2]), lines[-2]
    assert re.fullmatch(r"done in \d+\.\d s", lines[-1])
    assert any(line.startswith("3 results from") for line in lines)
