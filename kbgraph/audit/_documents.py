"""The checks of a meta-concept's document: each statement against the insights behind it, whose
evidence is recounted here from the graph's rows — not taken from what the document says.

A statement stands for the insight sentences its ``sources`` name (a document written before
statements kept them stands for its own sentence, in no particular domain). Its evidence is theirs,
in its domain's runs. What a statement says is its record, and the counts its document shows are
the evidence it was stored with (the document is rendered from both): the audit holds those counts
against the recount, and reads no rendered line.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kbgraph.audit._findings import NEAR_IDENTICAL_SIMILARITY, Check, Finding
from kbgraph.ingest.integrate import EmbedFn, sentence_key
from kbgraph.ingest.integrate_evidence import (
    DUPLICATE_RULE_SIMILARITY,
    Evidence,
    EvidencedDocument,
    Statement,
    evidence_rows,
)

__all__ = ["DocumentInput", "audit_document", "plain_evidence"]

#: (the count a document shows, how to count it, what it claims). A statement's line shows its runs
#: and the runs that succeeded; a recovery's, how often the next call went through (``describe``
#: of :class:`~kbgraph.ingest.integrate_evidence.Evidence`).
_COUNTS: tuple[tuple[str, Callable[[Evidence], int], str], ...] = (
    ("runs", lambda e: len(e.runs), "counts the runs behind it"),
    ("succeeded", lambda e: len(e.succeeded & e.runs), "counts runs that succeeded"),
    ("went_through", lambda e: len(e.went_through & e.runs), "counts calls that went through"),
)


def _claims(statement: Statement) -> tuple[tuple[str, Callable[[Evidence], int], str], ...]:
    """The counts ``statement``'s line shows: none without runs; how often the next call went
    through only for a recovery that retried, repeated or switched."""
    if not statement.evidence.runs:
        return ()
    shows_calls = statement.kind == "recovery" and statement.said.recovery in ("retry", "repeat", "switch")
    return tuple(c for c in _COUNTS if c[0] != "went_through" or shows_calls)


@dataclass(frozen=True)
class DocumentInput:
    """A stored document: its meta-concept's name, its statements, the text an agent reads (held
    whole against the rendering of its statements, never read) and the rows of the insights of its
    concepts (as the query ``insight_evidence`` reads them)."""

    name: str
    statements: Sequence[Statement]
    rendered: str
    insights: Sequence[Mapping[str, Any]]


def plain_evidence(evidence: Evidence, domains: Sequence[str] = ()) -> str:
    """Evidence as a finding states it: every count, whatever the statement says."""
    text = (f"{len(evidence.runs)} runs, {len(evidence.tasks)} tasks, {len(evidence.succeeded & evidence.runs)} "
            f"succeeded, the next call went through in {len(evidence.went_through & evidence.runs)}")
    return text + (f"; runs of {', '.join(domains)}" if domains else "")


class _Recount:
    """The evidence of each insight sentence, per domain, from the rows."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]):
        self.by_key: dict[str, dict[str, Evidence]] = defaultdict(dict)
        for row in rows:
            for part in evidence_rows(row):
                known = self.by_key[sentence_key(part.text)]
                known[part.domain] = known.get(part.domain, Evidence()) | part.evidence

    def per_domain(self, statement: Statement) -> dict[str, Evidence]:
        result: dict[str, Evidence] = {}
        for key in statement.sources or (sentence_key(statement.text),):
            for domain, evidence in self.by_key.get(key, {}).items():
                result[domain] = result.get(domain, Evidence()) | evidence
        return result

    def of(self, statement: Statement) -> Evidence:
        parts = self.per_domain(statement)
        if statement.domain:
            return parts.get(statement.domain, Evidence())
        total = Evidence()
        for evidence in parts.values():
            total = total | evidence
        return total


def audit_document(document: DocumentInput, embed: EmbedFn | None,
                   threshold: float = DUPLICATE_RULE_SIMILARITY) -> list[Finding]:
    """What in ``document`` its evidence does not bear out (see :data:`kbgraph.audit.CHECKS`)."""
    where = f"document “{document.name}”"
    recount = _Recount(document.insights)
    findings: list[Finding] = []

    def found(check: Check, statement: Statement, detail: str) -> None:
        findings.append(Finding(check=check, where=where, statement=statement.text, detail=detail,
                                about=(statement.text,),
                                evidence=plain_evidence(recount.of(statement), sorted(recount.per_domain(statement)))))

    for statement in document.statements:
        evidence = recount.of(statement)
        if statement.section != "pitfalls" and not evidence.succeeded & evidence.runs:
            found("how-from-failed-runs", statement,
                  f"stands under {statement.section.replace('_', ' ')}, but no run that succeeded backs it")
        for _, count, claim in _claims(statement):
            shown, recounted = count(statement.evidence), count(evidence)
            if shown != recounted:
                found("outcome-wording", statement, f"the document {claim} ({shown}); its runs give {recounted}")
    _cross_domain(document, recount, found)
    findings += _same_recovery(document, recount, where)
    if embed is not None:
        findings += _duplicates(document, recount, embed, threshold, where)
        findings += _near_identical(document, recount, embed, where)
    return findings


#: The reflector's kinds of statement that name a call (a look-up before it, the call, an error of it).
_TEMPLATED = frozenset({"before", "how", "recovery"})


def _same_recovery(document: DocumentInput, recount: _Recount, where: str) -> list[Finding]:
    """Two statements of one domain about one failure and one kind of recovery (retries that
    changed other arguments): one statement, with the runs summed and the arguments as detail."""
    findings = []
    for a, b in itertools.combinations(document.statements, 2):
        core = a.said.retry_key()
        if core is not None and a.domain == b.domain and b.said.retry_key() == core:
            findings.append(Finding(
                check="near-duplicate-statements", where=where, statement=f"{a.text} ≈ {b.text}",
                about=(a.text, b.text),
                evidence=f"{plain_evidence(recount.of(a))} / {plain_evidence(recount.of(b))}",
                detail="one failure with one kind of recovery said twice: one statement with the runs summed and the "
                       "changed arguments as detail"))
    return findings


def _near_identical(document: DocumentInput, recount: _Recount, embed: EmbedFn, where: str) -> list[Finding]:
    """Two statements of one domain whose cosine is at least NEAR_IDENTICAL_SIMILARITY, unless both
    are templated (their sameness is a rule: one failure and one kind of recovery, :func:`_same_recovery`;
    two recoveries of one failure of another kind, or two look-ups before one call, share their
    template's words and are not one statement) or both free rules (:func:`_duplicates` names them)."""
    statements = list(document.statements)
    if len(statements) < 2:
        return []
    findings = []
    for (a, b), similarity in _pairs(statements, embed):
        kinds = {a.kind in _TEMPLATED, b.kind in _TEMPLATED}
        named = kinds == {True} or (a.kind in ("rule", "lesson") and b.kind in ("rule", "lesson"))
        if a.domain == b.domain and similarity >= NEAR_IDENTICAL_SIMILARITY and not named:
            findings.append(Finding(
                check="near-duplicate-statements", where=where, statement=f"{a.text} ≈ {b.text}",
                about=(a.text, b.text),
                evidence=f"{plain_evidence(recount.of(a))} / {plain_evidence(recount.of(b))}",
                detail=f"two statements say nearly the same (cosine {similarity:.2f} ≥ {NEAR_IDENTICAL_SIMILARITY})"))
    return findings


def _cross_domain(document: DocumentInput, recount: _Recount, found: Callable[[Check, Statement, str], None]) -> None:
    """Statements shown for a domain whose runs did not show them; a document spanning domains without
    a part for each."""
    domains = sorted({s.domain for s in document.statements if s.domain})
    if len(domains) > 1 and document.rendered != EvidencedDocument.of(document.statements).render():
        for domain in domains:  # the rendering of its statements has one part per domain
            found("cross-domain-how", next(s for s in document.statements if s.domain == domain),
                  f"the document spans {', '.join(domains)} but is not stored as its statements' rendering, "
                  f"with a part for {domain}")
    scoped = [s for s in document.statements if s.section != "pitfalls"]
    unscoped_domains: dict[str, int] = defaultdict(int)
    for statement in scoped:
        parts = recount.per_domain(statement)
        if statement.domain:
            if parts and statement.domain not in parts:
                found("cross-domain-how", statement,
                      f"shown for {statement.domain}, but learnt from runs of {', '.join(sorted(parts))}")
        else:
            for domain, evidence in parts.items():
                unscoped_domains[domain] += len(evidence.runs)
    if len(unscoped_domains) > 1:  # a document without domains whose advice comes from several
        main = max(sorted(unscoped_domains), key=lambda d: unscoped_domains[d])
        for statement in scoped:
            parts = recount.per_domain(statement)
            if not statement.domain and parts and main not in parts:
                found("cross-domain-how", statement,
                      f"learnt from runs of {', '.join(sorted(parts))} in a document mostly about {main}, "
                      "with no part per domain")


def _pairs(statements: Sequence[Statement], embed: EmbedFn) -> list[tuple[tuple[Statement, Statement], float]]:
    """Every pair of ``statements`` with the cosine of the embeddings of what they say (:attr:`Statement.meaning`)."""
    vectors = np.asarray(embed([s.meaning for s in statements]), dtype=np.float64)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return [((a, b), float(vectors[i] @ vectors[j]))
            for (i, a), (j, b) in itertools.combinations(enumerate(statements), 2)]


def _duplicates(document: DocumentInput, recount: _Recount, embed: EmbedFn, threshold: float,
                where: str) -> list[Finding]:
    rules = [s for s in document.statements if s.kind in ("rule", "lesson")]
    if len(rules) < 2:
        return []
    findings = []
    for (a, b), similarity in _pairs(rules, embed):
        if a.domain == b.domain and similarity >= threshold:
            findings.append(Finding(
                check="duplicate-rules", where=where, statement=f"{a.text} ≈ {b.text}",
                about=(a.text, b.text),
                evidence=f"{plain_evidence(recount.of(a))} / {plain_evidence(recount.of(b))}",
                detail=f"two statements say the same (cosine {similarity:.2f} ≥ {threshold}): one statement with "
                       "their evidence summed"))
    return findings
