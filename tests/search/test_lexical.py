"""Specification of kbgraph.search.lexical: the full-text channel's terms and Lucene query string.

A user's text is never parsed as Lucene syntax: only its word tokens become terms, each escaped
and OR-ed together. No database is needed.
"""

from __future__ import annotations

import re

import pytest

from kbgraph.search import lexical
from kbgraph.search.lexical import MAX_TERMS, bm25_ceiling, bm25_scores, lucene_query, query_terms

LUCENE_SPECIALS = '+-&|!(){}[]^"~*?:\\/'
#: A term the query may contain: only characters the tokenizer keeps (lower-cased).
SAFE_TERM = re.compile(r"[0-9a-z\u00C0-\uFFFF]+")


def terms_of(query: str) -> list[str]:
    return query.split(" OR ")


# ----------------------------------------------------------------------------- query_terms


def test_terms_are_distinct_lower_cased_words_in_order_of_first_appearance() -> None:
    assert query_terms("Reset ROUTER password, then reset the router", stop_words=False) == [
        "reset", "router", "password", "then", "the",
    ]


def test_punctuation_and_operators_split_words() -> None:
    assert query_terms("order#W123-abc/refund:now", stop_words=False) == ["order", "w123", "abc", "refund", "now"]


def test_non_ascii_letters_are_part_of_words() -> None:
    assert query_terms("Café über NAÏVE", stop_words=False) == ["café", "über", "naïve"]


def test_one_character_tokens_are_dropped() -> None:
    assert query_terms("a b 7 x1 42 db", stop_words=False) == ["x1", "42", "db"]


def test_stop_words_are_dropped_by_default() -> None:
    assert query_terms("Cancel the order and refund it to me") == ["cancel", "order", "refund"]


def test_stop_words_are_kept_when_stop_words_is_false() -> None:
    assert query_terms("Cancel the order and refund it to me", stop_words=False) == [
        "cancel", "the", "order", "and", "refund", "it", "to", "me",
    ]


def test_a_text_of_only_stop_words_has_terms_only_without_stop_word_removal() -> None:
    assert query_terms("the and of to") == []
    assert query_terms("the and of to", stop_words=False) == ["the", "and", "of", "to"]


def test_limit_caps_the_number_of_distinct_terms_keeping_the_first() -> None:
    assert query_terms("aa bb aa cc bb dd ee", limit=3) == ["aa", "bb", "cc"]


def test_default_limit_is_max_terms() -> None:
    words = [f"w{i}" for i in range(3 * MAX_TERMS)]
    assert query_terms(" ".join(words)) == words[:MAX_TERMS]


def test_a_text_without_words_has_no_terms() -> None:
    assert query_terms("") == []
    assert query_terms("  !!! ?? :-) (a) [b] ") == []


# ----------------------------------------------------------------------------- lucene_query


def test_query_or_joins_the_terms() -> None:
    assert lucene_query("Reset router password") == "reset OR router OR password"


def test_operator_laden_text_becomes_a_plain_or_of_its_words() -> None:
    text = 'title:(foo) AND bar~ "x" -y && baz* || qux^2 +must !not [a TO b] {c} path/to\\x ?'
    query = lucene_query(text, stop_words=False)
    assert query is not None
    assert not any(ch in query for ch in LUCENE_SPECIALS)  # nothing left to escape, nothing unescaped
    assert terms_of(query) == [
        "title", "foo", "and", "bar", "baz", "qux", "must", "not", "to", "path",
    ]
    # Lucene's boolean keywords are upper-case only; lower-cased they are plain words.
    assert all(SAFE_TERM.fullmatch(term) for term in terms_of(query))


def test_operator_laden_text_with_stop_words_dropped() -> None:
    assert lucene_query('title:(foo) AND bar~ "x" -y') == "title OR foo OR bar"


@pytest.mark.parametrize("special", list(LUCENE_SPECIALS))
def test_every_lucene_special_character_inside_a_term_is_escaped(
    special: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tokenizer never keeps these characters; widen it so the escaping step itself is checked.
    monkeypatch.setattr(lexical, "_TOKEN", re.compile(r"\S+"))
    assert lucene_query(f"ab{special}cd", stop_words=False) == f"ab\\{special}cd"


def test_escaping_covers_every_occurrence_and_doubled_operators(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "_TOKEN", re.compile(r"\S+"))
    assert lucene_query('x:(y) a&&b c||d "q"', stop_words=False) == (
        'x\\:\\(y\\) OR a\\&\\&b OR c\\|\\|d OR \\"q\\"'
    )


def test_the_term_limit_caps_the_query() -> None:
    text = " ".join(f"term{i}" for i in range(1000))
    query = lucene_query(text)
    assert query is not None
    assert terms_of(query) == [f"term{i}" for i in range(MAX_TERMS)]
    assert lucene_query(text, limit=5) == "term0 OR term1 OR term2 OR term3 OR term4"


@pytest.mark.parametrize("text", ["", "   ", "!!! ??? :-) && ||", "a b c 1 2", "(x) [y] {z}"])
def test_a_text_with_no_words_gives_none(text: str) -> None:
    assert lucene_query(text) is None
    assert lucene_query(text, stop_words=False) is None


def test_a_text_of_stop_words_gives_none_only_when_stop_words_are_dropped() -> None:
    assert lucene_query("the and of") is None
    assert lucene_query("the and of", stop_words=False) == "the OR and OR of"


# --- BM25 over the candidates ----------------------------------------------------------------------


def test_bm25_weighs_a_rare_term_above_a_common_one() -> None:
    docs = ["cancel flight reservation", "change flight date", "flight baggage allowance", "refund flight insurance"]
    scores = lexical.bm25_scores(["flight", "insurance"], docs)
    assert scores.index(max(scores)) == 3  # 'insurance' singles it out; 'flight' is everywhere
    assert scores[0] == scores[1] == scores[2] > 0


def test_bm25_gives_zero_without_a_shared_term_and_nothing_for_no_documents() -> None:
    assert lexical.bm25_scores(["cancel"], ["book a flight", "cancel a booking"]) == [0.0, pytest.approx(0.6931, abs=1e-3)]
    assert lexical.bm25_scores(["cancel"], []) == []
    assert lexical.bm25_scores([], ["anything"]) == [0.0]


def test_bm25_depends_only_on_the_documents_given() -> None:
    """The same candidates score the same whatever else a database holds (the index's own BM25
    does not: its statistics span every namespace)."""
    docs = ["return delivered order items", "exchange delivered order items"]
    assert lexical.bm25_scores(["return", "items"], docs) == lexical.bm25_scores(["return", "items"], list(docs))
    longer = lexical.bm25_scores(["return"], ["return item", "return item and then wait for the refund to arrive"])
    assert longer[0] > longer[1] > 0  # a longer text matching once matches less


def test_the_ceiling_is_what_a_document_holding_every_query_word_once_would_score() -> None:
    documents = ["return delivered order items", "cancel pending order", "exchange delivered order items",
                 "modify pending order address"]
    ceiling = bm25_ceiling(["cancel", "exchange"], documents)
    scores = bm25_scores(["cancel", "exchange"], documents)
    assert ceiling > max(scores) > 0, "no candidate holds both words: none covers the request"
    # A word no document uses counts at its full idf: the request is covered less.
    assert bm25_ceiling(["cancel", "swap"], documents) > bm25_ceiling(["cancel"], documents)
    assert bm25_ceiling(["cancel"], []) == 0.0


def test_coverage_of_a_request_in_the_memorys_words_is_high_and_of_an_intent_only_one_low() -> None:
    documents = ["Cancel order because ordered by mistake", "Return items via credit card",
                 "Exchange keyboard for a clicky one", "Change the address of the order"]
    specific = ["cancel", "order", "mistake"]
    vague = ["swap", "arrived", "colour"]
    covered = max(bm25_scores(specific, documents)) / bm25_ceiling(specific, documents)
    uncovered = max(bm25_scores(vague, documents), default=0.0) / bm25_ceiling(vague, documents)
    assert covered > 0.8 and uncovered == 0.0


# --- the namespace's own index (LexicalCorpus) ----------------------------------------------------

FLIGHTS = ["cancel flight reservation", "change flight date", "flight baggage allowance", "refund flight insurance"]


def test_a_corpus_of_one_field_scores_as_bm25_over_the_same_documents() -> None:
    corpus = lexical.LexicalCorpus([(text,) for text in FLIGHTS])
    expected = lexical.bm25_scores(["flight", "insurance"], FLIGHTS)
    assert corpus.scores(["flight", "insurance"]) == {i: pytest.approx(s) for i, s in enumerate(expected)}


def test_a_corpus_of_fields_sums_each_fields_bm25_with_that_fields_statistics() -> None:
    problems = ["Cancel my flight", "Return the lamp", "Cancel the order"]
    domains = ["airline", "retail", "retail"]
    corpus = lexical.LexicalCorpus(list(zip(problems, domains, strict=True)))
    terms = ["cancel", "retail"]
    by_field = [lexical.bm25_scores(terms, problems), lexical.bm25_scores(terms, domains)]
    assert corpus.scores(terms) == {i: pytest.approx(by_field[0][i] + by_field[1][i]) for i in range(3)}


def test_only_documents_holding_a_term_are_scored() -> None:
    corpus = lexical.LexicalCorpus([(text,) for text in FLIGHTS])
    assert set(corpus.scores(["refund", "hotel"])) == {3}
    assert corpus.scores(["hotel"]) == {}
    assert lexical.LexicalCorpus([]).scores(["flight"]) == {}


def test_an_empty_field_takes_no_part_in_that_fields_statistics() -> None:
    """Lucene counts a field's documents among those that have it: a goal left empty neither
    shortens the average goal nor counts as a goal without the term."""
    with_empty = lexical.LexicalCorpus([("cancel flight", "get a refund"), ("change date", ""), ("book seat", "")])
    without = lexical.LexicalCorpus([("cancel flight", "get a refund")])
    assert with_empty.scores(["refund"])[0] == pytest.approx(without.scores(["refund"])[0])


DOCUMENTS = [("Cancel my reservation", "refund the flight", "airline"),
             ("Return the lamp", "refund to the card", "retail"),
             ("Change the flight date", "rebook", "airline"),
             ("Exchange the lamp for a blue one", "exchange", "retail")]


def test_a_patched_corpus_scores_every_document_as_a_corpus_built_of_them() -> None:
    before = lexical.LexicalCorpus(DOCUMENTS)
    added = [("Return the blue lamp", "refund", "retail"), ("Cancel the order", "refund the card", "retail")]
    patched = before.patched([0, 2], added)  # two taken out (one of them changed: added again below)
    kept = [DOCUMENTS[1], DOCUMENTS[3], *added]
    built = lexical.LexicalCorpus(kept)
    at = [1, 3, 4, 5]  # where the kept documents are in the patched corpus
    for terms in (["refund"], ["lamp", "blue"], ["cancel", "flight", "refund"], ["airline"], ["nothing"]):
        scores = patched.score_array(terms)
        assert scores[at].tolist() == built.score_array(terms).tolist(), terms  # the same floats
        assert scores[[0, 2]].tolist() == [0.0, 0.0], "a document taken out is found by nothing"
    assert before.score_array(["flight"]).tolist() == lexical.LexicalCorpus(DOCUMENTS).score_array(["flight"]).tolist(), \
        "the corpus patched is left as it was"
