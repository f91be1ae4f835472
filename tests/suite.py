"""What ``./kb test`` runs when given no arguments (and so what CI runs): the whole suite on the
configured Neo4j line, then the store-level subset on the other line.

kbgraph supports two Neo4j lines (5.26 and 2026.09, chosen by ``KBGRAPH_NEO4J_VERSION``), and what
differs between them is the store: the managed server and its Java, the schema (2026's vector
indexes declare the namespace as a filter), the candidate queries (Cypher 25 ``SEARCH … WHERE``
above ``exact_scan_max``), what a server reports about itself, and how it dies and recovers. So
the second part runs the tests of :data:`OTHER_LINE_SUBSET` that reach a server (``-m neo4j``): a
test that reaches none exercises nothing that differs between the lines, and already ran in the
first part. Each part starts its own throw-away servers of its line (tests/conftest.py and
tests/reliability's throw-away servers read the same setting).

The first part runs even when the second cannot, and the second even when the first failed, so
that one run shows both; the exit status fails when either failed. With ``NEO4J_URI`` set, the
suite runs against that server, whatever its line: the second part is skipped, saying so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

from kbgraph.core.settings import NEO4J_LINES, Neo4jLineName, Settings

#: The files whose server-reaching tests run on the other line too, and why each is there.
OTHER_LINE_SUBSET: dict[str, str] = {
    # The candidate seam and every caller of it: exact scan, index queries, over-fetch, isolation.
    "tests/search": "every search channel, the teacher, step search, explanations and the candidate seam",
    # The store: schema and its vector indexes per line, gateway, server info, connection, deadlines.
    "tests/kbgraph/store": "schema, gateway, server info and the managed server of the line",
    # The LangGraph store and LangChain retriever search through the candidate seam too.
    "tests/kbgraph/integrations": "the LangGraph store and the LangChain retriever",
    # kill -9, freezes and races against a server of the line.
    "tests/reliability": "kill -9 recovery, timeouts, merge races and fuzzing against a server of the line",
}
#: Tests of those folders that reach a server but are left out of the second part, and why.
NOT_ON_THE_OTHER_LINE: dict[str, str] = {
    "tests/kbgraph/store/managed/test_browser.py":
        "its module starts a server of the default line, whatever the setting, and the Browser it drives "
        "(5.24) is the same jar on both lines",
    "tests/reliability/test_fuzz_mcp.py":
        "fuzzes the MCP server's framing and argument checks; what gets through to the store is fuzzed "
        "through the files and the API by test_fuzz.py, which runs",
    "tests/search/eval/test_evaluate.py":
        "its corpora (1,459 trajectories) are under exact_scan_max, so both lines rank them through the same "
        "exact scan that test_student.py runs; `kbgraph eval --suite` compares the figures between lines",
    **{f"tests/reliability/test_timeouts.py::{test}":
       "what the client does when the server is dead or frozen: a killed or stopped JVM is the same to the "
       "driver whichever release it ran (the rate-limit test, the server's own answer, runs)"
       for test in ("test_a_server_killed_mid_session_fails_the_next_call_within_the_retry_bound",
                    "test_a_frozen_server_fails_each_call_within_the_query_timeout",
                    "test_the_cli_against_a_frozen_server_fails_in_one_line_within_the_connect_timeout",
                    "test_the_cli_against_a_dead_server_fails_in_one_line",
                    "test_the_mcp_server_answers_a_tool_call_with_an_error_within_the_bound_when_neo4j_dies",
                    "test_a_frozen_managed_server_is_named_at_once_with_the_way_to_resume_it",
                    "test_an_ingest_whose_server_is_killed_mid_way_waits_at_most_the_retry_time_in_all",
                    "test_a_cli_ingest_whose_server_is_killed_mid_way_fails_in_one_line")},
}

#: Exit status of pytest when it was interrupted (Ctrl-C): the next part does not start.
INTERRUPTED = 2


@dataclass(frozen=True)
class Part:
    title: str
    line: Neo4jLineName
    arguments: tuple[str, ...]


def other_line(line: Neo4jLineName) -> Neo4jLineName:
    return next(other for other in NEO4J_LINES if other != line)


def parts(configured: Neo4jLineName) -> list[Part]:
    other = other_line(configured)
    subset = ["-m", "neo4j", *OTHER_LINE_SUBSET, *(f"--deselect={test}" for test in NOT_ON_THE_OTHER_LINE)]
    return [Part(f"the whole suite on Neo4j {configured}", configured, ()),
            Part(f"the store-level subset on Neo4j {other}", other, tuple(subset))]


def banner(text: str) -> None:
    print(f"\n{'=' * 20} kb test: {text} {'=' * 20}", flush=True)


def main() -> int:
    plan = parts(Settings().neo4j_version)
    if os.environ.get("NEO4J_URI"):
        print(f"kb test: NEO4J_URI is set, so every test uses that server: {plan[1].title} is skipped "
              "(unset NEO4J_URI to run both lines on throw-away servers).", flush=True)
        plan = plan[:1]
    results: list[tuple[Part, int, float]] = []
    for part in plan:
        banner(f"{part.title} (KBGRAPH_NEO4J_VERSION={part.line})")
        started = time.monotonic()
        code = subprocess.call([sys.executable, "-m", "pytest", *part.arguments],
                               env={**os.environ, "KBGRAPH_NEO4J_VERSION": part.line})
        results.append((part, code, time.monotonic() - started))
        if code == INTERRUPTED:
            break
    banner("summary")
    for part, code, seconds in results:
        print(f"kb test: {part.title}: {'passed' if code == 0 else f'FAILED (pytest exit {code})'} "
              f"in {seconds:.0f} s", flush=True)
    return next((code for _, code, _ in results if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main())
