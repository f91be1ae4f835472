"""The LLM path survives a model that rambles: every item it cannot answer gets the rule-based result,
counted per stage in the report, and the graph is whole — on the real Neo4j, over real HTTP to a
scripted OpenAI-compatible server, with real agent runs."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kbgraph.audit import audit_namespace
from kbgraph.core.errors import KbgraphError
from kbgraph.ingest.abstract import RuleBasedAbstractor
from kbgraph.ingest.abstract_llm import SYSTEM_PROMPT as ABSTRACT_PROMPT
from kbgraph.ingest.integrate_llm import SYSTEM_PROMPT as INTEGRATE_PROMPT
from kbgraph.ingest.pipeline import IngestPipeline, pipeline_from_settings
from kbgraph.ingest.reflect import RuleBasedReflector
from kbgraph.ingest.reflect_llm import SYSTEM_PROMPT as REFLECT_PROMPT
from kbgraph.ingest.report import IngestReport, LLMCounts
from kbgraph.kb import KnowledgeBase
from kbgraph.store.managed.server import free_port
from kbgraph.core.models import Trajectory
from kbgraph.core.settings import Settings
from tests.conftest import REAL_RUNS
from tests.fakes.openai_server import FakeOpenAI, ScriptedResponse, api_error, chat_completion, running_fake_openai

#: Four real runs of four different tasks (the fake tells them apart by their task).
RUN_IDS = ("gpt4o-airline-00-t0", "gpt4o-airline-02-t0", "gpt4o-airline-04-t0", "gpt4o-airline-06-t0")
Answer = Callable[[str, dict[str, Any], str], ScriptedResponse]  # (stage, run, prompt) -> response


def real_runs() -> list[dict[str, Any]]:
    lines = (REAL_RUNS / "airline_gpt4o.jsonl").read_text(encoding="utf-8").splitlines()
    by_id = {run["id"]: run for run in map(json.loads, lines)}
    return [by_id[i] for i in RUN_IDS]


RUNS = real_runs()


def runs_that_teach() -> int:
    """The runs the rule-based reflector learns something from: the LLM reflector asks the model to
    reword their lessons, and nothing about a run that teaches nothing."""
    trajectories = [Trajectory.model_validate(run) for run in RUNS]
    return sum(1 for t in trajectories if RuleBasedReflector().reflect(t, RuleBasedAbstractor().abstract(t)))


def stage_of(body: dict[str, Any]) -> str:
    text = body["messages"][0]["content"]
    for stage, prompt in (("abstract", ABSTRACT_PROMPT), ("reflect", REFLECT_PROMPT), ("integrate", INTEGRATE_PROMPT)):
        if text.startswith(prompt[:200]):
            return stage
    raise AssertionError(f"a request of no stage: {text[:80]!r}")


def good_abstraction(run: dict[str, Any]) -> str:
    return json.dumps({
        "problem": "A traveller wants a flight booked within a budget and with given payment methods.",
        "goal": "The reservation is booked and paid as the traveller asked.",
        "steps": [{"action": s["action"], "text": f"call {s['action']}"} for s in run["steps"]],
    })


def good_reflection(prompt: str) -> str:
    """Each lesson of the run reworded: its words kept."""
    lessons = [re.sub(r"^\d+\. \[[^\]]*\] ", "", line)
               for line in prompt.split("Lessons:\n", 1)[1].splitlines() if re.match(r"^\d+\. \[", line)]
    return json.dumps({"insights": [f"As learnt: {lesson}" for lesson in lessons]})


def good_document(prompt: str) -> str:
    """Each statement reworded: its words kept, without the evidence shown beside it."""
    statements = [re.sub(r"^\d+\. \[\w+\] ", "", line).rsplit(" (", 1)[0]
                  for line in prompt.split("Statements:\n", 1)[1].splitlines() if re.match(r"^\d+\. ", line)]
    return json.dumps({"statements": [f"In short: {s}" for s in statements]})


def rambling(prompt: str) -> ScriptedResponse:
    """A small model's answer: the prompt copied into the first field until the tokens ran out."""
    return 200, chat_completion('{"problem": "' + json.dumps(prompt)[1:2000], finish_reason="length")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai() as server:
        yield server


def script(fake: FakeOpenAI, answer: Answer) -> None:
    """Answers every chat request with ``answer(stage, run, prompt)``."""
    def respond(path: str, body: dict[str, Any]) -> ScriptedResponse:
        with fake._lock:  # noqa: SLF001 — the fake's own request log
            fake.requests.append({"path": path, "body": body})
        prompt = body["messages"][-1]["content"]
        run = next((r for r in RUNS if r["task"][:60] in prompt), RUNS[0])
        return answer(stage_of(body), run, prompt)

    fake.answer = respond  # type: ignore[method-assign]


def llm_pipeline(kb: KnowledgeBase, base_url: str) -> IngestPipeline:
    kb.settings = Settings(namespace=kb.namespace, neo4j_database=kb.gateway.database, abstractor="llm",
                           reflector="llm", llm_base_url=base_url, llm_api_key="test", llm_model="fake",
                           llm_max_attempts=2)
    pipeline = pipeline_from_settings(kb)
    assert pipeline.llm is not None
    for client in pipeline.llm.clients.values():
        client.backoff_initial_s, client.backoff_max_s = 0.01, 0.02
    return pipeline


def outcomes_add_up(report: IngestReport) -> None:
    for stage, counts in report.llm.items():
        assert counts.calls == counts.valid_first_try + counts.repaired + counts.retried + counts.fell_back, stage


def assert_whole(kb: KnowledgeBase, report: IngestReport) -> None:
    """Every run is in some experience's provenance, pass 2 ran, and ingesting again changes nothing."""
    sources = {s for e in kb.get_many(list(kb.store.iter_ids())) for s in e.source_ids}
    assert sources == set(RUN_IDS)
    assert report.consolidated and report.meta_concepts > 0
    before = kb.stats()
    again = kb.add_trajectories(RUNS)
    assert again.records_already_ingested == len(RUNS) and again.experiences_new == 0
    assert (kb.stats().nodes, kb.stats().relationships) == (before.nodes, before.relationships)


def ingest(pipeline: IngestPipeline) -> IngestReport:
    from kbgraph.ingest.read import records_from_items

    return pipeline.ingest_records(lambda: records_from_items(RUNS, None))


def test_a_model_that_only_rambles_leaves_the_graph_the_rules_would_have_written(
    kb: KnowledgeBase, fake: FakeOpenAI,
) -> None:
    script(fake, lambda stage, run, prompt: rambling(prompt))
    report = ingest(llm_pipeline(kb, fake.base_url))

    outcomes_add_up(report)
    assert report.llm["abstract"].calls == report.llm["abstract"].fell_back == 4
    assert report.llm["reflect"].calls == report.llm["reflect"].fell_back == runs_that_teach() > 0
    assert report.llm["integrate"].calls == report.llm["integrate"].fell_back >= 1
    assert "cut off at the token limit" in report.llm["abstract"].last_fallback_reason
    assert Counter(stage_of(body) for body in fake.chat_requests)["abstract"] == 8  # each run asked twice

    rules = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-rules", database=kb.gateway.database)
    try:
        rules.add_trajectories(RUNS)

        def contents(target: KnowledgeBase) -> tuple[set[str], list[str]]:
            documents = target.gateway.read("meta_concepts_top", kb=target.namespace, limit=100)
            return set(target.store.iter_ids()), sorted(d["document"] for d in documents)

        assert contents(kb) == contents(rules)
        assert (kb.stats().nodes, kb.stats().relationships) == (rules.stats().nodes, rules.stats().relationships)
    finally:
        rules.clear()
    script(fake, lambda stage, run, prompt: (200, chat_completion("{}")))
    assert_whole(kb, report)


def test_each_item_ends_one_way_and_the_report_counts_them(kb: KnowledgeBase, fake: FakeOpenAI) -> None:
    """Run 00 is answered at once, 02 cut off after two complete steps, 04 after one bad answer, 06
    never: valid at the first try, repaired, retried, fell back — one of each."""
    asked: Counter[str] = Counter()

    def answer(stage: str, run: dict[str, Any], prompt: str) -> ScriptedResponse:
        if stage == "reflect":
            return 200, chat_completion(good_reflection(prompt))
        if stage == "integrate":
            return 200, chat_completion(good_document(prompt))
        asked[run["id"]] += 1
        task = run["id"][-5:-3]
        if task == "02":
            whole = good_abstraction(run)
            third = whole.index('{"action"', whole.index('{"action"', whole.index('{"action"') + 1) + 1)
            return 200, chat_completion(whole[:third] + '{"action": "' + "x" * 50, finish_reason="length")
        if task == "04" and asked[run["id"]] == 1:
            return 200, chat_completion("I think the problem is a flight booking.")
        if task == "06":
            return rambling(prompt)
        return 200, chat_completion(good_abstraction(run))

    script(fake, answer)
    report = ingest(llm_pipeline(kb, fake.base_url))

    outcomes_add_up(report)
    abstract = report.llm["abstract"]
    assert (abstract.calls, abstract.valid_first_try, abstract.repaired, abstract.retried, abstract.fell_back) == (
        4, 1, 1, 1, 1)
    taught = runs_that_teach()
    assert report.llm["reflect"] == LLMCounts(calls=taught, valid_first_try=taught)
    assert report.llm["integrate"].fell_back == 0 and report.llm["integrate"].calls >= 1

    experiences = {e.source_ids[0]: e for e in kb.get_many(list(kb.store.iter_ids()))}
    assert experiences["gpt4o-airline-00-t0"].problem.startswith("A traveller wants a flight booked")
    assert len(experiences["gpt4o-airline-02-t0"].steps) == 2  # the complete steps of the cut-off answer
    fallen = Trajectory.model_validate(RUNS[3])
    assert experiences["gpt4o-airline-06-t0"].problem == RuleBasedAbstractor().abstract(fallen).problem
    assert_whole(kb, report)


def test_the_llm_path_writes_from_the_same_evidence_and_passes_the_audit(kb: KnowledgeBase, fake: FakeOpenAI) -> None:
    """The model rewords each statement; where it stands and what backs it stay the evidence's. A
    rewording that claims an outcome ("got past it") is refused and asked again."""
    boasted: Counter[str] = Counter()

    def answer(stage: str, run: dict[str, Any], prompt: str) -> ScriptedResponse:
        if stage == "abstract":
            return 200, chat_completion(good_abstraction(run))
        if stage == "reflect":
            return 200, chat_completion(good_reflection(prompt))
        statements = json.loads(good_document(prompt))["statements"]
        if not boasted["asked"]:  # the first answer claims what the runs do not show
            boasted["asked"] += 1
            return 200, chat_completion(json.dumps({"statements": [f"{s} This got past it." for s in statements]}))
        return 200, chat_completion(json.dumps({"statements": statements}))

    script(fake, answer)
    report = ingest(llm_pipeline(kb, fake.base_url))
    assert report.llm["integrate"].retried == 1 and report.llm["integrate"].fell_back == 0
    documents = "\n".join(row["document"] for row in kb.gateway.read("meta_concepts_all", kb=kb.namespace))
    assert "got past it" not in documents and "- In short: " in documents
    # The model reworded the reflector's lessons: each insight keeps the record it says, none is a free lesson.
    metas = [row["id"] for row in kb.gateway.read("meta_concepts_all", kb=kb.namespace)]
    insights = kb.gateway.read("insight_evidence", kb=kb.namespace, concept_ids=[], meta_ids=metas)
    assert insights and all(row["text"].startswith("As learnt: ") for row in insights)
    assert all(json.loads(row["record"])["kind"] in ("before", "how", "recovery", "rule") for row in insights)
    assert audit_namespace(kb.gateway, kb.namespace, kb.embedder.embed).findings == []


def test_an_endpoint_that_is_down_falls_back_for_every_item(kb: KnowledgeBase) -> None:
    report = ingest(llm_pipeline(kb, f"http://127.0.0.1:{free_port()}/v1"))
    outcomes_add_up(report)
    assert all(c.calls == c.fell_back > 0 for c in report.llm.values()), report.llm
    assert "cannot connect" in report.llm["abstract"].last_fallback_reason
    assert set(report.llm) == {"abstract", "reflect", "integrate"}


def test_a_refused_api_key_stops_the_ingest_before_anything_is_written(kb: KnowledgeBase, fake: FakeOpenAI) -> None:
    script(fake, lambda stage, run, prompt: (401, api_error("Incorrect API key provided", code="invalid_api_key")))
    with pytest.raises(KbgraphError, match=r"abstraction failed: .*HTTP 401.*check llm_api_key"):
        ingest(llm_pipeline(kb, fake.base_url))
    assert len(fake.chat_requests) == 1
    assert list(kb.store.iter_ids()) == [] and kb.stats().nodes.get("Concept", 0) == 0


def test_the_rule_based_path_reports_no_llm_counts(kb: KnowledgeBase) -> None:
    assert kb.add_trajectories(RUNS[:1]).llm == {}
