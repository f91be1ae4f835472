"""A request in the customer's own words, before any step, against what each workflow changes (the
intent channel, kbgraph.search.student.intent), on a real Neo4j with the real MiniLM."""

from __future__ import annotations

import pytest

from kbgraph.core.models import Experience, Step
from kbgraph.core.weights import SearchWeights
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.search.asks import split_asks
from kbgraph.search.explain import explain_results
from kbgraph.search.params import SearchQuery
from kbgraph.search.student.context import Run
from kbgraph.search.lexical import query_terms
from kbgraph.search.scoring import WordOperationCounts, ask_history_association, history_association
from kbgraph.search.student.intent import HISTORY_TERMS, INTENT_CHANNEL, IntentMatcher
from kbgraph.search.student.text_vectors import IntentVectors
from kbgraph.search.student.workflow_operations import SequenceTable

#: Template task texts, as a benchmark's gold runs have them: none of them says what a customer says.
LOOKUPS = ("find_user_id_by_email", "get_order_details")


def run(problem: str, *operations: str, source: str) -> Experience:
    actions = [*LOOKUPS, *operations]
    return Experience(problem=problem, goal="Help the customer with their request.", domain="retail",
                      steps=[Step(action=a, text=a.replace("_", " ")) for a in actions], source_ids=[source])


EXCHANGE = run("For {id}, exchange Mug {'color': 'red'} to {'color': 'blue'};", "exchange_delivered_order_items",
               source="t-exchange")
CANCEL = run("Cancel order {id} because no longer needed.", "cancel_pending_order", source="t-cancel")
RETURN = run("Return {id} via {id}: Desk Lamp;", "return_delivered_order_items", source="t-return")
CANCEL_AND_RETURN = run("Cancel order {id} because ordered by mistake. Return {id} via {id}: Kettle;",
                        "cancel_pending_order", "return_delivered_order_items", source="t-both")
# A persona story, as simulated users' instructions are: its words say nothing of what was changed.
ADDRESS = run("You are Yuki, patient and organized, and you live in Portland with two cats.",
              "modify_pending_order_address", source="t-address")
# A run that handed the customer to a human: what a request for a person asks for.
HANDOFF = run("Refund {id} outside the return window.", "transfer_to_human_agents", source="t-human")

INTENT = {"intent_weight": 0.6}


@pytest.fixture
def orders_kb(kb: KnowledgeBase) -> KnowledgeBase:
    kb.add_experiences([EXCHANGE, CANCEL, RETURN, CANCEL_AND_RETURN, ADDRESS])
    return kb


def test_a_request_without_steps_finds_the_workflow_that_makes_the_change_it_asks_for(orders_kb: KnowledgeBase) -> None:
    results = orders_kb.search("The mug I got came in the wrong colour. Can I swap it for a blue one?", domain="retail",
                               k=3, weights=INTENT)
    top = results.hits[0]
    assert top.id == EXCHANGE.key
    assert INTENT_CHANNEL in top.found_by
    assert top.breakdown.intent is not None and top.breakdown.intent > 0
    assert [a.operation for a in top.breakdown.asks or []] == ["exchange_delivered_order_items"]


def test_a_request_of_two_asks_finds_the_workflow_that_does_both_and_names_each_ask(orders_kb: KnowledgeBase) -> None:
    request = "Please cancel the order that hasn't shipped yet, and also I want to return the lamp I received."
    results = orders_kb.search(request, domain="retail", k=3, weights=INTENT)
    top = results.hits[0]
    assert top.id == CANCEL_AND_RETURN.key
    asks = top.breakdown.asks or []
    assert [a.ask for a in asks] == ["Please cancel the order that hasn't shipped yet", "I want to return the lamp I received"]
    assert [a.operation for a in asks] == ["cancel_pending_order", "return_delivered_order_items"]
    # Each single-change workflow answers one ask only: it ranks below the one that answers both.
    single = {h.id: h.breakdown.intent for h in results.hits if h.id in (CANCEL.key, RETURN.key)}
    assert all(value is not None and value < (top.breakdown.intent or 0) for value in single.values())
    text = explain_results(results)
    assert "ask “Please cancel the order that hasn't shipped yet” → cancel_pending_order" in text
    assert "→ return_delivered_order_items" in text


def test_a_workflow_whose_runs_never_say_what_it_changes_is_found_by_what_it_changes(orders_kb: KnowledgeBase) -> None:
    # One candidate per channel: neither the words of the request (semantic, full-text) nor ...
    weights = {"intent_weight": 0.8, "intent_scale": "fixed", "candidates": 1, "intent_candidates": 1}
    request = "Please change the delivery address on my order"
    top = orders_kb.search(request, domain="retail", k=1, weights=weights).hits[0]
    assert top.id == ADDRESS.key and INTENT_CHANNEL in top.found_by
    assert not {"vector:experience_pg_embedding", "fulltext:experience_text"} & set(top.found_by)
    # ... and without the intent match the words win: the cancellation comes first.
    off = orders_kb.search(request, domain="retail", k=1, weights={**weights, "intent_weight": 0.0}).hits[0]
    assert off.id != ADDRESS.key and INTENT_CHANNEL not in off.found_by and off.breakdown.intent is None


def test_a_query_with_executed_steps_keeps_its_own_path(orders_kb: KnowledgeBase) -> None:
    results = orders_kb.search("swap the mug", domain="retail", k=3, weights=INTENT,
                               steps_so_far=[{"action": "find_user_id_by_email", "arguments": {"email": "a@b.c"}}])
    assert results.hits and all(h.breakdown.intent is None and INTENT_CHANNEL not in h.found_by for h in results.hits)


# Two stored runs whose requests use a word no operation's name has: the memory's own history says
# what that word asks for.
REROUTE = [run("Reroute my parcel to my cousin's flat.", "modify_pending_order_address", source="t-reroute-1"),
           run("Reroute the parcel to the office, please.", "modify_pending_order_address", source="t-reroute-2")]


def _learnt_by_operations(results) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {", ".join(a.operation for a in h.breakdown.asks or []): h.breakdown.intent_learnt or 0.0
            for h in results.hits if h.breakdown.asks}


def test_the_memory_s_own_requests_teach_the_intent_match_what_their_words_asked_for(orders_kb: KnowledgeBase) -> None:
    orders_kb.add_experiences(REROUTE)
    request = "Can you reroute my parcel?"
    learning = {**INTENT, "intent_history_weight": 0.1}  # the default (docs/search.md)
    results = orders_kb.search(request, domain="retail", k=10, weights=learning)
    learnt = _learnt_by_operations(results)
    # The workflow the rerouting requests made gains; one they never made gains nothing.
    assert learnt["modify_pending_order_address"] > 0
    assert learnt["cancel_pending_order"] == 0
    assert "from what this memory's requests made" in explain_results(results)
    # A query never learns from its own runs: leaving those two out, the word is unknown, nothing is learnt.
    own = orders_kb.search(request, domain="retail", k=10, weights=learning, exclude=["t-reroute-1", "t-reroute-2"])
    assert own.hits and set(_learnt_by_operations(own).values()) == {0.0}
    # Weight 0: the operations' words alone.
    off = orders_kb.search(request, domain="retail", k=10, weights={**INTENT, "intent_history_weight": 0.0})
    assert off.hits and set(_learnt_by_operations(off).values()) == {0.0}


def test_a_request_to_talk_to_a_person_finds_the_workflow_that_hands_the_task_to_a_human(
        orders_kb: KnowledgeBase) -> None:
    orders_kb.add_experiences([HANDOFF])
    request = "My refund still hasn't come through after three weeks. Let me speak to someone above you."
    results = orders_kb.search(request, domain="retail", k=3, weights=INTENT)
    top = results.hits[0]
    assert top.id == HANDOFF.key
    asks = top.breakdown.asks or []
    assert [a.ask for a in asks] == ["My refund still hasn't come through after three weeks",
                                     "Let me speak to someone above you"]
    assert (asks[1].operation, asks[1].similarity) == ("transfer_to_human_agents", 1.0), "the ask for a person"
    assert top.breakdown.share == 1.0, "the handoff was asked for: its successes count in full"
    assert top.breakdown.human_asked and "as the request asked" in explain_results(results)
    off = orders_kb.search(request, domain="retail", k=5, weights={**INTENT, "intent_human_asks": False}).hits
    assert [h.id for h in off][:1] != [HANDOFF.key], "MiniLM alone reads 'someone above you' as no handoff"


@pytest.mark.parametrize("request_text", [
    "The mug I got came in the wrong colour. Can I swap it for a blue one?",
    "Please cancel the order that hasn't shipped yet, and also I want to return the lamp I received.",
    "My refund never arrived. I want to talk to a real person!",
    "Please cancel the order that hasn't shipped yet. If you can't, put me through to a supervisor.",
])
@pytest.mark.parametrize("changes", [{}, {"intent.order_penalty": 0.2}, {"intent.repeat_penalty": 1.0}])
def test_the_channel_ranks_every_workflow_with_the_scores_each_candidate_gets(embedder: CachedEmbedder,
                                                                              request_text: str, changes: dict[str, float]) -> None:
    # The channel scores all the namespace's sequences at once; each must be the score a candidate
    # with that sequence gets on its own.
    query = SearchQuery(task=request_text, domain="retail")
    weights = SearchWeights().merged(changes)
    run = Run(query, weights, 5, {}, list(embedder.embed([query.full_text()])[0]), None, [], [])  # type: ignore[arg-type]
    matcher = IntentMatcher(run, IntentVectors(embedder), split_asks(query.full_text()))
    sequences = [(tuple(e.steps[i].action for i in range(len(LOOKUPS), len(e.steps))), domain)
                 for e in (EXCHANGE, CANCEL, RETURN, CANCEL_AND_RETURN, ADDRESS, HANDOFF) for domain in ("retail", None)]
    sequences += [((), "retail"), (("cancel_pending_order", "transfer_to_human_agents"), "retail"),
                  (("return_delivered_order_items", "cancel_pending_order"), "retail"),
                  (("cancel_pending_order", "cancel_pending_order", "return_delivered_order_items"), "retail")]
    matcher.know([(op, d) for ops, d in sequences for op in ops])
    together = matcher.ranking_scores(sequences)
    one_by_one = [matcher.score(ops, d).score for ops, d in sequences]
    assert together == pytest.approx(one_by_one, abs=1e-12)
    # The candidates' scores, worked out all at once (the asks only for the hits): the same.
    candidates = matcher.candidate_scores([*sequences, None])
    assert candidates[-1] is None
    assert [c[0] for c in candidates[:-1] if c is not None] == pytest.approx(one_by_one, abs=1e-12)
    assert [matcher.asks_of(ops, d) for ops, d in sequences] == [list(matcher.score(ops, d).asks) for ops, d in sequences]
    if changes and len(matcher.asks) > 1 and "return the lamp" in request_text:
        # Asked "cancel …, and also return …": the workflow that returns first is the one inverted.
        assert one_by_one[-2] < one_by_one[sequences.index((("cancel_pending_order", "return_delivered_order_items"), "retail"))]
    if changes.get("intent.repeat_penalty"):
        # Cancelling twice makes a change nobody asked for: the workflow that cancels once is nearer.
        assert one_by_one[-1] < one_by_one[sequences.index((("cancel_pending_order", "return_delivered_order_items"), "retail"))]


@pytest.mark.parametrize("request_text", [
    "Can you reroute my parcel to the office?",
    "Please cancel the order that hasn't shipped yet, and also I want to return the lamp I received.",
])
def test_what_the_history_adds_is_each_workflow_s_own_association_whether_ranked_together_or_alone(
        embedder: CachedEmbedder, request_text: str) -> None:
    query = SearchQuery(task=request_text, domain="retail")
    run = Run(query, SearchWeights(), 5, {}, list(embedder.embed([query.full_text()])[0]), None, [], [])  # type: ignore[arg-type]
    asks = split_asks(query.full_text())
    matcher = IntentMatcher(run, IntentVectors(embedder), asks)
    stored = [*(e for e in (EXCHANGE, CANCEL, RETURN, CANCEL_AND_RETURN, ADDRESS)), *REROUTE]
    sequences = [(tuple(e.steps[i].action for i in range(len(LOOKUPS), len(e.steps))), "retail") for e in stored]
    history = WordOperationCounts.of((query_terms(e.problem, HISTORY_TERMS), ops)
                                     for e, (ops, _) in zip(stored, sequences, strict=True))
    sequences.append(((), "retail"))
    matcher.know([(op, d) for ops, d in sequences for op in ops])
    matcher.learn(history)
    η = SearchWeights().intent_history_weight
    ask_words = [query_terms(ask, HISTORY_TERMS) for ask in asks]
    for ops, domain in sequences:
        distinct = list(dict.fromkeys(ops))
        association = (ask_history_association(ask_words, distinct, history) if len(asks) > 1
                       else history_association(query_terms(query.full_text(), HISTORY_TERMS), distinct, history))
        assert matcher.score(ops, domain).learnt == (η * association if association is not None else 0.0)
        assert matcher.learnt(distinct) == matcher.score(ops, domain).learnt, "the channel's, exactly"
    assert any(matcher.score(ops, d).learnt > 0 for ops, d in sequences)
    table = SequenceTable(sequences, IntentVectors(embedder))
    sets, _ = table.distinct_sets()
    assert matcher.table_learnt(table).tolist() == [matcher.learnt(d) for d in sets], "set by set, the same floats"
    together = matcher.ranking_scores(sequences)
    assert together == pytest.approx([matcher.score(ops, d).score for ops, d in sequences], abs=1e-12)
    candidates = [c for c in matcher.candidate_scores(sequences) if c is not None]
    assert [learnt for _, learnt in candidates] == [matcher.score(ops, d).learnt for ops, d in sequences]
    assert [score for score, _ in candidates] == pytest.approx([matcher.score(ops, d).score for ops, d in sequences],
                                                                abs=1e-12)
