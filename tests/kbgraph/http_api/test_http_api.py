"""``kbgraph serve``: the HTTP API, called over real HTTP (httpx) while uvicorn serves it on a free
loopback port, against the session's real Neo4j and the real MiniLM.

One keyed server serves the module, over a KnowledgeBase of the module's namespace; the tests share
what ``added`` ingested through it. The other servers here (no key, Neo4j down, a bug) start in a
moment: they share the session's embedder. ``kbgraph serve`` runs as a subprocess where its process
is what is checked (serving until SIGINT, a refusal's exit status and one line, the missing extra);
its other refusals run through the CLI's main in this process (tests/cli_in_process.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import neo4j
import pytest
import uvicorn
from fastapi import FastAPI

from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.http_api import (NAMESPACE_HEADER, READ_TIMEOUT_S, check_bind, close_after_warm, create_app,
                              is_loopback, listen, server_config)
from kbgraph.kb import KnowledgeBase
from kbgraph.tools import RefineStepsArgs, refine_steps
from kbgraph.store.managed.server import free_port
from kbgraph.core.settings import Settings
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget

pytestmark = [pytest.mark.neo4j, pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "http.md"
SAMPLES = ROOT / "kbgraph" / "samples" / "trajectories.jsonl"
TRAJECTORIES = {record["id"]: record for record in map(json.loads, SAMPLES.read_text().splitlines())}
# A return that went smoothly, one whose email lookup failed and was recovered, a failed airline
# cancellation: enough for search, refine and the counters.
ADDED = ("sample-retail-001", "sample-retail-002", "sample-airline-006")
API_KEY = "test-key-" + uuid.uuid4().hex
RETURN_TASK = "A customer wants to return wireless earbuds that stopped charging and get a refund"


@contextmanager
def serving(app: FastAPI, read_timeout_s: float = READ_TIMEOUT_S) -> Iterator[str]:
    """``app`` served by uvicorn as ``kbgraph serve`` serves it, on a free loopback port, in a
    thread; yields its base URL."""
    sock = listen("127.0.0.1", 0)
    server = uvicorn.Server(server_config(app, log_level="warning", read_timeout_s=read_timeout_s))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:  # bounded by the module's timeout
            assert thread.is_alive(), "uvicorn stopped before it started"
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


@pytest.fixture(scope="module")
def http_namespace() -> str:
    return f"test-http-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def other_namespace() -> str:
    return f"test-http-other-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def direct_kb(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget,
              http_namespace: str) -> Iterator[KnowledgeBase]:
    """The server's namespace: served, and read directly to check what the calls changed."""
    knowledge_base = KnowledgeBase(driver, embedder, namespace=http_namespace, database=neo4j_target.database)
    yield knowledge_base
    knowledge_base.clear()


@pytest.fixture(scope="module")
def other_kb(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget,
             other_namespace: str) -> Iterator[KnowledgeBase]:
    """A second namespace, reached through the server by its header."""
    knowledge_base = KnowledgeBase(driver, embedder, namespace=other_namespace, database=neo4j_target.database)
    yield knowledge_base
    knowledge_base.clear()


@pytest.fixture(scope="module")
def base_url(direct_kb: KnowledgeBase) -> Iterator[str]:
    with serving(create_app(direct_kb, API_KEY)) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=240) as http:
        yield http


@pytest.fixture(scope="module")
def added(client: httpx.Client) -> dict[str, Any]:
    """The answer to adding the sample trajectories."""
    answer = client.post("/v1/trajectories", json=[TRAJECTORIES[tid] for tid in ADDED])
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def experience_of(added: dict[str, Any], trajectory_id: str) -> str:
    [entry] = [t for t in added["trajectories"] if t["trajectory_id"] == trajectory_id]
    [experience_id] = entry["experience_ids"]
    return str(experience_id)


def detail(answer: httpx.Response) -> str:
    """The one-line message of an error answer."""
    body = answer.json()
    assert set(body) == {"detail"} and isinstance(body["detail"], str), body
    assert "\n" not in body["detail"] and "Traceback" not in body["detail"], body["detail"]
    return str(body["detail"])


# -- the happy path ----------------------------------------------------------------------------------


def test_adding_trajectories_ingests_them_once_and_names_the_experiences_that_stand_for_them(
    client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase
) -> None:
    assert [t["trajectory_id"] for t in added["trajectories"]] == list(ADDED)
    assert added["experiences_new"] == 3 and added["already_ingested"] == 0
    assert added["new_experiences"] == 3, "the name /v1 answered with before, deprecated, kept until kbgraph 0.2"
    assert added["report"]["records_read"] == 3
    stored = direct_kb.get(experience_of(added, "sample-retail-001"))
    assert stored is not None and "sample-retail-001" in stored.source_ids
    count = direct_kb.count()

    again = client.post("/v1/trajectories", json=[TRAJECTORIES["sample-retail-001"]]).json()
    assert again["already_ingested"] == 1 and again["experiences_new"] == again["new_experiences"] == 0
    assert again["trajectories"] == [t for t in added["trajectories"] if t["trajectory_id"] == "sample-retail-001"]
    assert direct_kb.count() == count


@pytest.mark.parametrize("query", [
    {"task": RETURN_TASK, "domain": "retail", "k": 3},
    {"task": "return an item", "domain": "retail",
     "steps_so_far": [{"action": "find_user_by_email", "arguments": {"email": "a@b.c"}},
                      {"action": "get_order_details", "arguments": {"order_id": "#W1"}}]},
    {"task": "cancel my flight", "k": 2, "filters": {"domains": ["airline"]}, "weights": {"alpha": 0.2}},
], ids=["task", "steps-so-far", "filters-and-weights"])
def test_search_answers_what_kb_search_finds(
    client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase, query: dict[str, Any]
) -> None:
    found = client.post("/v1/search", json=query)
    assert found.status_code == 200, found.text
    expected = direct_kb.search(**query)
    hits = found.json()["experiences"]
    assert [hit["id"] for hit in hits] == expected.ids() and expected.ids()
    assert [hit["score"] for hit in hits] == pytest.approx([hit.score for hit in expected.hits], abs=1e-4)
    assert found.json()["retrieved_ids"] == expected.ids()
    for hit in hits:
        assert hit["steps"] and hit["explanation"].startswith("matched on semantic")
    if "steps_so_far" in query:
        assert "steps so far" in hits[0]["explanation"]
    if "filters" in query:
        assert {hit["domain"] for hit in hits} == {"airline"}


def test_concurrent_searches_each_get_the_same_answer(client: httpx.Client, added: dict[str, Any]) -> None:
    def search(_: int) -> list[str]:
        return [hit["id"] for hit in client.post("/v1/search", json={"task": RETURN_TASK}).json()["experiences"]]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(search, range(16)))
    assert answers[0] and all(answer == answers[0] for answer in answers)


def test_refine_gives_the_next_step_and_failures_like_the_one_going_wrong_with_their_recovery(
    client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase
) -> None:
    request = {"task": RETURN_TASK, "domain": "retail", "steps_taken": [
        {"action": "find_user_by_email", "arguments": {"email": "someone@example.org"},
         "error": "UserNotFound: no user with email someone@example.org"}]}
    found = client.post("/v1/refine", json=request)
    assert found.status_code == 200, found.text
    recovered_by = experience_of(added, "sample-retail-002")
    assert any(r["experience_id"] == recovered_by and r["recovery"] for r in found.json()["recoveries"])
    assert found.json() == refine_steps(direct_kb, RefineStepsArgs.model_validate(request)).model_dump(mode="json")


def test_steps_search_answers_what_kb_search_steps_finds(
    client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase
) -> None:
    request = {"action": "get_order_details", "arguments": {"order_id": "#W2"}, "k": 3}
    found = client.post("/v1/steps/search", json=request)
    assert found.status_code == 200, found.text
    expected = direct_kb.search_steps("get_order_details", {"order_id": "#W2"}, k=3)
    assert [(s["experience_id"], s["order"]) for s in found.json()["steps"]] == [(s.experience_id, s.order)
                                                                                for s in expected]
    assert "get_order_details" in [s["action"] for s in found.json()["steps"]]


def test_feedback_updates_the_counters_and_quality(
    client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase
) -> None:
    used = experience_of(added, "sample-retail-001")
    shown = experience_of(added, "sample-airline-006")
    before = {s.id: s for s in direct_kb.learning_state([used, shown])}

    answer = client.post("/v1/feedback", json={
        "retrieved": [used, shown], "used": [used], "outcome": True, "agent": "agent-http", "domain": "retail",
        "step_rewards": [{"experience_id": used, "order": 0, "reward": 1.0}], "task": "Return a delivered item",
    })
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["used"] == 1 and report["retrieved"] == 2 and report["outcome"] == 1.0
    after = {s.id: s for s in direct_kb.learning_state([used, shown])}
    assert (after[used].retrieved, after[used].used, after[used].succeeded) == (
        before[used].retrieved + 1, before[used].used + 1, before[used].succeeded + 1)
    assert after[used].quality > before[used].quality
    assert (after[shown].retrieved, after[shown].used) == (before[shown].retrieved + 1, before[shown].used)


def test_an_experience_is_read_in_full_without_embeddings(client: httpx.Client, added: dict[str, Any]) -> None:
    experience_id = experience_of(added, "sample-retail-002")
    answer = client.get(f"/v1/experiences/{experience_id}")
    assert answer.status_code == 200, answer.text
    details = answer.json()
    assert details["id"] == experience_id and details["domain"] == "retail"
    assert "sample-retail-002" in details["source_ids"] and details["failure_modes"]
    assert "embedding" not in answer.text


def test_an_unknown_experience_is_404_naming_it_and_the_namespace(
    client: httpx.Client, http_namespace: str
) -> None:
    answer = client.get("/v1/experiences/exp-does-not-exist")
    assert answer.status_code == 404
    assert detail(answer) == f"no experience 'exp-does-not-exist' in namespace '{http_namespace}'"


def test_stats_are_the_namespace_counts(client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase) -> None:
    answer = client.get("/v1/stats")
    assert answer.status_code == 200
    assert answer.json() == direct_kb.stats().model_dump(mode="json")


def test_health_says_neo4j_answers(base_url: str, http_namespace: str) -> None:
    answer = httpx.get(f"{base_url}/v1/health")  # no key needed
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "neo4j": True, "namespace": http_namespace, "detail": None}


# -- namespaces ---------------------------------------------------------------------------------------


def test_namespaces_are_isolated(
    client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase, other_kb: KnowledgeBase,
    other_namespace: str,
) -> None:
    other = {NAMESPACE_HEADER: other_namespace}
    assert client.get("/v1/stats", headers=other).json()["experiences"] == 0
    assert client.post("/v1/search", json={"task": RETURN_TASK}, headers=other).json()["experiences"] == []
    seen_here = experience_of(added, "sample-retail-001")
    missing = client.get(f"/v1/experiences/{seen_here}", headers=other)
    assert missing.status_code == 404 and other_namespace in detail(missing)

    count_here = direct_kb.count()
    there = client.post("/v1/trajectories", json=[TRAJECTORIES["sample-airline-001"]], headers=other).json()
    [new_id] = there["trajectories"][0]["experience_ids"]
    assert other_kb.get(new_id) is not None and direct_kb.get(new_id) is None
    assert direct_kb.count() == count_here
    assert client.get("/v1/stats", headers=other).json() == other_kb.stats().model_dump(mode="json")
    assert new_id not in [hit["id"] for hit in client.post("/v1/search", json={"task": "cancel my flight"}).json()[
        "experiences"]]
    assert new_id in client.post("/v1/search", json={"task": "cancel my flight"}, headers=other).json()[
        "retrieved_ids"]


@pytest.mark.parametrize("namespace", ["", "bad namespace!", "../other", "x" * 65])
def test_a_malformed_namespace_is_422_and_never_the_default(client: httpx.Client, namespace: str) -> None:
    answer = client.get("/v1/stats", headers={NAMESPACE_HEADER: namespace})
    assert answer.status_code == 422
    assert "namespace: " in detail(answer) and "is not a namespace" in detail(answer)


# -- authentication -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), [
    ("GET", "/v1/stats", None),
    ("POST", "/v1/search", {"task": "return an item"}),
    ("POST", "/v1/trajectories", "[not json"),  # refused for the key before the body is read
    ("GET", "/v1/no-such-endpoint", None),
])
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-key", f"Basic {API_KEY}", "Bearer"],
                         ids=["none", "wrong-key", "basic-scheme", "no-key"])  # ids without the random key
def test_a_missing_or_wrong_key_is_401_with_a_clear_message(
    base_url: str, method: str, path: str, body: Any, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    content = body if isinstance(body, str) else json.dumps(body) if body is not None else None
    answer = httpx.request(method, f"{base_url}{path}", headers={**headers, "Content-Type": "application/json"},
                           content=content)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    expected = "wrong API key" if authorization == "Bearer wrong-key" else "missing API key"
    assert detail(answer).startswith(expected) and "Authorization: Bearer <key>" in detail(answer)


def test_the_right_key_is_let_in_and_health_and_the_schema_need_none(base_url: str) -> None:
    assert httpx.get(f"{base_url}/v1/stats", headers={"Authorization": f"Bearer {API_KEY}"}).status_code == 200
    assert httpx.get(f"{base_url}/v1/health").status_code == 200
    assert httpx.get(f"{base_url}/openapi.json").status_code == 200


def test_on_loopback_a_server_without_a_key_asks_for_none(direct_kb: KnowledgeBase, added: dict[str, Any]) -> None:
    with serving(create_app(direct_kb, None)) as url:
        answer = httpx.get(f"{url}/v1/stats")
        assert answer.status_code == 200 and answer.json()["experiences"] == direct_kb.count()
        assert "securitySchemes" not in httpx.get(f"{url}/openapi.json").json().get("components", {})


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io", "0.0.0.0", ""])
def test_without_a_key_a_request_to_another_host_name_is_refused(direct_kb: KnowledgeBase, host: str) -> None:
    # DNS rebinding: a page at evil.example whose name now resolves to 127.0.0.1 sends its own name.
    with serving(create_app(direct_kb, None)) as url:
        refused = [httpx.get(f"{url}{path}", headers={"Host": host}) for path in ("/v1/stats", "/v1/health", "/docs")]
        answered = [httpx.get(f"{url}/v1/stats", headers={"Host": name})
                    for name in ("localhost", "localhost:8000", "127.0.0.1", "[::1]:8000")]
    for answer in refused:
        assert answer.status_code == 403 and "is not this machine" in detail(answer)
    assert [answer.status_code for answer in answered] == [200] * 4


def test_with_a_key_any_host_name_is_answered(base_url: str) -> None:
    answer = httpx.get(f"{base_url}/v1/stats", headers={"Host": "kb.example.org", "Authorization": f"Bearer {API_KEY}"})
    assert answer.status_code == 200


def test_a_404_names_a_very_long_id_by_its_start_and_length(client: httpx.Client) -> None:
    answer = client.get(f"/v1/experiences/{'x' * 10_000}")  # under uvicorn's 16 KB request line
    assert answer.status_code == 404
    assert detail(answer).startswith(f"no experience '{'x' * 40}'… (10,000 characters) in namespace")


def test_an_integer_too_long_to_read_is_422_saying_where(client: httpx.Client, direct_kb: KnowledgeBase) -> None:
    experiences = direct_kb.count()
    body = '{"task": "return an item",\n "k": ' + "7" * 5000 + "}"
    answer = client.post("/v1/search", content=body.encode(), headers={"Content-Type": JSON})
    assert answer.status_code == 422, answer.text
    assert detail(answer) == ("invalid request body, nothing was done: the body is not valid JSON: an integer of "
                              "5,000 digits (at most 4,300 are read) at line 2, column 7")
    assert direct_kb.count() == experiences


def test_a_body_that_is_not_utf8_is_422_naming_the_byte(client: httpx.Client, direct_kb: KnowledgeBase) -> None:
    experiences = direct_kb.count()
    answer = client.post("/v1/search", content=b'{"task": "caf\xe9"}', headers={"Content-Type": JSON})
    assert answer.status_code == 422, answer.text
    assert detail(answer) == ("invalid request body, nothing was done: the body is not UTF-8 text (byte 14 is 0xe9); "
                              "send JSON encoded as UTF-8")
    assert direct_kb.count() == experiences


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("", False), ("192.168.1.20", False), ("example.org", False),
])
def test_listening_beyond_loopback_needs_a_key(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    check_bind(host, "a-key")
    if loopback:
        check_bind(host, None)
    else:
        with pytest.raises(InvalidInputError, match="an API key is required: set KBGRAPH_API_KEY or pass --api-key-file"):
            check_bind(host, None)


def test_an_empty_key_is_refused_rather_than_meaning_none() -> None:
    with pytest.raises(InvalidInputError, match="api key: empty"):
        check_bind("0.0.0.0", "  ")
    with pytest.raises(InvalidInputError, match="api_key: empty"):
        create_app(lambda: pytest.fail("must not open"), "")


def without_a_key(target: Neo4jTarget, namespace: str, **env: str) -> dict[str, str]:
    """The environment of a `kbgraph` command on ``target``, with ``env`` and without KBGRAPH_API_KEY."""
    environment = {**target.env(namespace), **env}
    environment.pop("KBGRAPH_API_KEY", None)
    return environment


def test_kbgraph_serve_refuses_to_listen_beyond_loopback_without_a_key(neo4j_target: Neo4jTarget) -> None:
    host = "0.0.0.0"  # the other addresses: test_listening_beyond_loopback_needs_a_key
    # An unreachable Neo4j: the refusal comes before anything is connected or loaded. The process
    # itself: its exit status and a stderr of one message, no traceback.
    done = subprocess.run([sys.executable, "-m", "kbgraph.cli", "serve", "--host", host, "--port", "0"],
                          env=without_a_key(neo4j_target, "unused", NEO4J_URI=f"bolt://127.0.0.1:{free_port()}"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[0] == "kbgraph: error: cannot serve:"
    assert f"host: '{host}' is reachable beyond this machine, so an API key is required" in lines[1]
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_kbgraph_serve_refuses_a_key_on_the_command_line_and_reads_one_from_a_file(
    neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    unreachable = without_a_key(neo4j_target, "unused", NEO4J_URI=f"bolt://127.0.0.1:{free_port()}")
    shown = run_kbgraph(unreachable, "serve", "--host", "0.0.0.0", "--api-key", "s3cret")
    assert shown.returncode == 2, shown.stderr
    assert "--api-key: a key on the command line is visible to every user of this machine" in shown.stderr
    assert "s3cret" not in shown.stderr and "Traceback" not in shown.stderr
    missing = run_kbgraph(unreachable, "serve", "--api-key-file", str(tmp_path / "none"))
    assert missing.returncode == 2 and f"--api-key-file {tmp_path / 'none'}: cannot read it" in missing.stderr
    (tmp_path / "empty").write_text("\n")
    empty = run_kbgraph(unreachable, "serve", "--host", "0.0.0.0", "--api-key-file", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "api key: empty" in empty.stderr


def test_kbgraph_serve_serves_the_api_until_it_is_stopped(neo4j_target: Neo4jTarget, http_namespace: str,
                                                          added: dict[str, Any]) -> None:
    port = free_port()
    environment = {**neo4j_target.env(http_namespace), "KBGRAPH_API_KEY": "cli-key"}
    process = subprocess.Popen([sys.executable, "-m", "kbgraph.cli", "serve", "--port", str(port)],
                               env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []  # stderr read while it serves
    try:
        url = f"http://127.0.0.1:{port}"
        while True:  # the model loads first; bounded by the module's timeout
            assert process.poll() is None, process.communicate()
            try:
                if httpx.get(f"{url}/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        stats = httpx.get(f"{url}/v1/stats", headers={"Authorization": "Bearer cli-key"})
        assert stats.status_code == 200 and stats.json()["namespace"] == http_namespace
        assert httpx.get(f"{url}/v1/stats").status_code == 401
        assert process.stderr is not None
        while not any(" warmed in " in line for line in lines):  # bounded by the module's timeout
            lines.append(process.stderr.readline())  # what its searches keep, read in a thread at start
            assert lines[-1], "stderr closed before the namespace was warmed"
    finally:
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    stderr = "".join(lines) + stderr
    assert process.returncode == 0, stderr  # a stop asked for and done
    assert f"kbgraph serve: http://127.0.0.1:{port} (OpenAPI at /docs), namespace '{http_namespace}'" in stderr
    assert "API key required" in stderr and "cli-key" not in stderr + stdout
    assert f"kbgraph serve: namespace '{http_namespace}' warmed in" in stderr
    assert "Traceback" not in stderr


def test_a_stopping_server_closes_its_knowledge_base_only_once_its_warm_is_over(kb: KnowledgeBase) -> None:
    # Closing the driver while the warm thread still reads on one of its connections breaks that
    # connection mid-message (the BufferError a test's teardown met in CI).
    said: list[str] = []
    release = threading.Event()
    stuck = threading.Thread(target=release.wait, args=(10,), daemon=True)
    stuck.start()
    assert close_after_warm(kb, stuck, said.append, wait_s=0.2) is False, "still warming: left to the exit"
    assert said == ["kbgraph serve: waiting for the warm under way to end (at most 0 s)",
                    "kbgraph serve: the warm is still reading; left to the process's exit"]
    release.set()
    ending = threading.Thread(target=time.sleep, args=(0.3,), daemon=True)
    ending.start()
    assert close_after_warm(kb, ending, said.append) is True and not ending.is_alive(), "closed once it ended"
    assert close_after_warm(kb, None, said.append) is True, "nothing warming (Neo4j was down at start)"


def test_kbgraph_imports_without_fastapi_and_serve_names_the_extra() -> None:
    # One process without the extra: first the imports (an AssertionError there is a traceback on
    # stderr, which the last assertion shows), then `kbgraph serve`.
    blocked = "import sys; sys.modules['fastapi'] = None; sys.modules['uvicorn'] = None; "
    served = subprocess.run([sys.executable, "-c", blocked + (
        "import kbgraph, kbgraph.cli, kbgraph.cli.serve; "
        "assert 'kbgraph.http_api' not in sys.modules, 'importing kbgraph.cli imported kbgraph.http_api'; "
        "sys.argv = ['kbgraph', 'serve']; from kbgraph.cli import main; main()")],
        capture_output=True, text=True, timeout=120)
    assert served.returncode == 1, served.stderr
    assert served.stderr.strip() == ("kbgraph: error: kbgraph serve needs the 'http' extra (fastapi is not installed): "
                                     "pip install 'kbgraph[http]'")


# -- bad input ----------------------------------------------------------------------------------------

JSON = "application/json"


@pytest.mark.parametrize(("path", "content", "content_type", "message"), [
    ("/v1/search", '{"task": "return an item",\n "k": }', JSON,
     "invalid request body, nothing was done: the body is not valid JSON: Expecting value at line 2, column 7"),
    ("/v1/search", '{"task": "x"', JSON, "the body is not valid JSON: Expecting ',' delimiter at line 1, column 13"),
    ("/v1/search", '{"task": "return an item"}', None,
     "the body must be JSON, sent with 'Content-Type: application/json' (Content-Type: none)"),
    ("/v1/search", "task=x", "application/x-www-form-urlencoded",
     "the body must be JSON, sent with 'Content-Type: application/json' "
     "(Content-Type: application/x-www-form-urlencoded)"),
    ("/v1/search", "", JSON, "the body is missing: send a JSON object"),
    ("/v1/search", "[1, 2]", JSON, "body: expected a JSON object (got a list)"),
    ("/v1/search", '{"task": "return an item", "k": "10"}', JSON,
     "invalid request body, nothing was done: k: Input should be a valid integer (got a string)"),
    ("/v1/search", '{"task": "return an item", "k": 0}', JSON, "k: Input should be greater than or equal to 1"),
    ("/v1/search", '{"task": "return an item", "kk": 3}', JSON, "kk: Extra inputs are not permitted"),
    ("/v1/search", '{"task": "return an item", "steps_so_far": [{"arguments": {}}]}', JSON,
     "steps_so_far.0.action: Field required"),
    ("/v1/search", '{"task": "\\ud800"}', JSON, "task: contains a lone surrogate"),
    ("/v1/search", "[" * 100_000 + "]" * 100_000, JSON, "the body is nested too deeply"),
    ("/v1/search", '{"task": ""}', JSON,
     "invalid request body, nothing was done: task is blank: give the task in words, or steps_so_far"),
    ("/v1/search", '{"task": "x", "k": 101}', JSON, "k: Input should be less than or equal to 100"),
    ("/v1/steps/search", '{"action": "x", "k": 101}', JSON, "k: Input should be less than or equal to 100"),
    ("/v1/search", '{"task": "x", "filters": {"kinds": ["weird"]}}', JSON, "filters.kinds.0: Input should be"),
    ("/v1/refine", '{"problematic_steps": []}', JSON, "problematic_steps is now steps_taken (with task)"),
    ("/v1/refine", '{"task": "x", "k": 101}', JSON, "k: Input should be less than or equal to 100"),
    ("/v1/trajectory", '{"trajectory": {"id": "t-1", "task": "   "}}', JSON,
     "invalid trajectory, nothing was written: trajectory: task: must not be blank"),
    ("/v1/steps/search", '{"action": "x", "alpha": 2}', JSON, "alpha: Input should be less than or equal to 1"),
    ("/v1/feedback", '{"used": ["exp-x"], "outcome": "yes"}', JSON,
     "outcome: Input should be a valid boolean, or a valid number, or a valid integer (got a string)"),
    ("/v1/feedback", '{"used": ["exp-does-not-exist"], "outcome": true}', JSON,
     "invalid input, nothing was written: feedback: experience 'exp-does-not-exist': not in namespace"),
    ("/v1/trajectories", '{"id": "t-1", "task": "x"}', JSON,
     "body: expected a JSON list of trajectories (got an object)"),
    ("/v1/trajectories", "[]", JSON, "invalid input, nothing was written: trajectories: empty list, nothing to ingest"),
    ("/v1/trajectories", '[{"id": "t-1", "task": "x", "steps": [{"thought": "no action"}]}]', JSON,
     "invalid request body, nothing was done: trajectories.0.steps.0.action: Field required"),
    ("/v1/trajectories", '[{"id": "t-1", "task": "x", "outcome": {"success": "yes"}}]', JSON,
     "trajectories.0.outcome.success: Input should be a valid boolean (got a string)"),
    ("/v1/trajectories", '[{"id": "t-ok", "task": "fine"}, {"id": "bad id!", "task": "x"}]', JSON,
     "invalid input, nothing was written: trajectories[1]: id: String should match pattern"),
    ("/v1/trajectories", '[{"id": "t-1", "task": "   "}]', JSON, "trajectories[0]: task: Value error, must not be blank"),
])
def test_a_refused_body_is_422_saying_where_and_nothing_is_written(
    client: httpx.Client, added: dict[str, Any], direct_kb: KnowledgeBase, path: str, content: str,
    content_type: str | None, message: str,
) -> None:
    experiences = direct_kb.count()
    headers = {"Content-Type": content_type} if content_type else {}
    answer = client.post(path, content=content.encode("utf-8"), headers=headers)
    assert answer.status_code == 422, answer.text
    assert message in detail(answer)
    assert direct_kb.count() == experiences


def test_a_body_over_the_limit_is_413_whether_its_length_is_declared_or_not(direct_kb: KnowledgeBase) -> None:
    json_headers = {"Content-Type": JSON}
    with serving(create_app(direct_kb, None, max_body_bytes=1000)) as url:
        declared = httpx.post(f"{url}/v1/search", json={"task": "x" * 2000})
        streamed = httpx.post(f"{url}/v1/search", content=iter([b'{"task": "', b"x" * 2000, b'"}']),
                              headers=json_headers)  # chunked: no Content-Length
        within = httpx.post(f"{url}/v1/search", json={"task": "return an item"})
        runs = httpx.post(f"{url}/v1/trajectories", json=[{"id": "t-1", "task": "x" * 2000}])
    for answer in (declared, streamed):
        assert answer.status_code == 413
        assert detail(answer) == ("the request body is over the limit of 1,000 bytes: send a shorter body (a task, "
                                  "steps and ids fit in far less)")
    assert runs.status_code == 413
    assert detail(runs) == "the request body is over the limit of 1,000 bytes: send fewer trajectories at once"
    assert within.status_code == 200


# -- failures behind the API --------------------------------------------------------------------------


def test_a_neo4j_that_is_down_is_503_for_every_call_and_for_health(embedder: CachedEmbedder) -> None:
    # A driver to a closed port: every query fails to connect (no retries, so at once).
    port = free_port()
    dead = neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{port}", auth=("neo4j", "x"), connection_timeout=2,
                                      max_transaction_retry_time=0)
    try:
        knowledge_base = KnowledgeBase(dead, embedder, namespace="unreachable", ensure_schema=False)
        with serving(create_app(knowledge_base, None)) as url:
            calls: list[Callable[[], httpx.Response]] = [
                lambda: httpx.get(f"{url}/v1/stats"),
                lambda: httpx.post(f"{url}/v1/search", json={"task": "return an item"}, timeout=120),
                lambda: httpx.post(f"{url}/v1/trajectories", json=[TRAJECTORIES["sample-retail-001"]], timeout=120),
                lambda: httpx.get(f"{url}/v1/experiences/exp-x"),
                # Feedback about an experience: one about none writes nothing, and asks Neo4j nothing
                # (a statement with an empty list to unwind is not sent: kbgraph.store.queries).
                lambda: httpx.post(f"{url}/v1/feedback", json={"used": ["exp-x"], "outcome": True}),
            ]
            for call in calls:
                answer = call()
                assert answer.status_code == 503, answer.text
                assert "Neo4j" in detail(answer) and f"127.0.0.1:{port}" in detail(answer)
            health = httpx.get(f"{url}/v1/health")
            assert health.status_code == 503
            assert health.json() == {"status": "unavailable", "neo4j": False, "namespace": "unreachable",
                                     "detail": "Neo4j did not answer a trivial query"}
    finally:
        dead.close()


def test_a_neo4j_not_up_at_start_is_503_and_each_call_tries_again() -> None:
    settings = Settings(neo4j_uri=f"bolt://127.0.0.1:{free_port()}", connect_timeout_s=2, namespace="unused")
    opened: list[int] = []

    def open_knowledge_base() -> KnowledgeBase:
        opened.append(1)
        return KnowledgeBase.from_settings(settings)

    with serving(create_app(open_knowledge_base, "the-key")) as url:
        keyed = {"Authorization": "Bearer the-key"}
        for _ in range(2):
            answer = httpx.get(f"{url}/v1/stats", headers=keyed)
            assert answer.status_code == 503 and detail(answer).startswith("cannot reach Neo4j at bolt://127.0.0.1:")
        assert len(opened) == 2
        anonymous, holder = httpx.get(f"{url}/v1/health"), httpx.get(f"{url}/v1/health", headers=keyed)
        assert anonymous.status_code == holder.status_code == 503
        assert anonymous.json()["detail"] is None  # where Neo4j lives is for key holders only
        assert holder.json()["detail"].startswith("cannot reach Neo4j at bolt://127.0.0.1:")


def test_a_bug_is_a_500_line_without_its_text_and_the_server_keeps_serving() -> None:
    def broken() -> KnowledgeBase:
        raise RuntimeError("internal detail\nTraceback (most recent call last): …")

    with serving(create_app(broken, None)) as url:
        for _ in range(2):
            answer = httpx.get(f"{url}/v1/stats")
            assert answer.status_code == 500
            assert detail(answer) == ("stats failed with an internal error (RuntimeError); the details are in the "
                                      "server's log and the server keeps serving")


# -- the schema ---------------------------------------------------------------------------------------


def test_the_openapi_schema_is_generated_from_kbgraphs_models(base_url: str) -> None:
    schema = httpx.get(f"{base_url}/openapi.json").json()
    models = set(schema["components"]["schemas"])
    assert {"SearchExperiencesRequest", "SearchExperiencesResult", "ExperienceHit", "RefineStepsArgs",
            "RefineStepsResult", "StepSearchRequest", "StepSearchResult", "RecordOutcomeArgs", "FeedbackReport",
            "TrajectoryInput", "AddTrajectoriesResult", "IngestReport", "ExperienceDetails", "KbStats",
            "HealthReport", "ErrorResponse"} <= models
    assert "HTTPValidationError" not in models  # refusals are ErrorResponse, one line
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    operations = {(method.upper(), path): operation for path, item in schema["paths"].items()
                  for method, operation in item.items()}
    assert set(operations) == {
        ("POST", "/v1/search"), ("POST", "/v1/refine"), ("POST", "/v1/steps/search"), ("POST", "/v1/feedback"),
        ("POST", "/v1/trajectory"), ("POST", "/v1/trajectories"), ("GET", "/v1/experiences/{id}"), ("GET", "/v1/stats"),
        ("GET", "/v1/health")}
    search = operations[("POST", "/v1/search")]
    assert search["requestBody"]["content"][JSON]["schema"] == {"$ref": "#/components/schemas/SearchExperiencesRequest"}
    assert search["responses"]["200"]["content"][JSON]["schema"] == {
        "$ref": "#/components/schemas/SearchExperiencesResult"}
    assert {"401", "422", "503"} <= set(search["responses"])
    assert "404" in operations[("GET", "/v1/experiences/{id}")]["responses"]
    assert NAMESPACE_HEADER in [p["name"] for p in search["parameters"]]
    assert operations[("POST", "/v1/trajectories")]["requestBody"]["content"][JSON]["schema"]["type"] == "array"
    assert "security" not in operations[("GET", "/v1/health")]
    for name in ("SearchExperiencesRequest", "RefineStepsArgs", "StepSearchRequest", "RecordOutcomeArgs"):
        for field, spec in schema["components"]["schemas"][name]["properties"].items():
            assert spec.get("description"), f"{name}.{field} has no description"


def test_the_docs_page_loads_swagger_ui_from_the_server_itself(direct_kb: KnowledgeBase) -> None:
    # Offline, a page loading Swagger UI from a CDN is blank: every URL it names is this server's.
    with serving(create_app(direct_kb, None)) as url:
        page = httpx.get(f"{url}/docs")
        assert page.status_code == 200
        urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*['"]([^'"]+)['"]""", page.text)
        assert len(urls) >= 4 and all(u.startswith("/") and not u.startswith("//") for u in urls), urls
        assert "http://" not in page.text and "https://" not in page.text
        for asset in urls:
            fetched = httpx.get(f"{url}{asset}")
            assert fetched.status_code == 200 and fetched.content, asset
        assert b"SwaggerUIBundle" in httpx.get(f"{url}/docs-assets/swagger-ui-bundle.js").content


# -- the documentation --------------------------------------------------------------------------------


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DOCS.read_text(), flags=re.DOTALL | re.MULTILINE)


def test_every_python_example_of_the_docs_runs_against_a_server(
    base_url: str, added: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBGRAPH_URL", base_url)
    monkeypatch.setenv("KBGRAPH_API_KEY", API_KEY)
    blocks = code_blocks("python")
    assert len(blocks) >= 8
    scope: dict[str, Any] = {"__name__": "docs_http"}
    for index, block in enumerate(blocks):
        try:
            exec(compile(block, f"docs/http.md python block {index + 1}", "exec"), scope)
        except Exception as exc:
            pytest.fail(f"python block {index + 1} of docs/http.md failed: {type(exc).__name__}: {exc}\n{block}")


def test_every_shell_example_of_the_docs_runs_against_a_server(base_url: str, added: dict[str, Any]) -> None:
    blocks = code_blocks("bash")
    assert len(blocks) >= 8
    for index, block in enumerate(blocks):
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "KBGRAPH_URL": base_url, "KBGRAPH_API_KEY": API_KEY})
        assert done.returncode == 0, f"bash block {index + 1} of docs/http.md failed:\n{block}\n{done.stderr}"
