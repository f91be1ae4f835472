"""Stage 5 from evidence: a meta-concept's document, every statement where its evidence puts it.

A document is rebuilt from all the insights of its meta-concept — each a record of what it says
(:class:`~kbgraph.core.models.StatementRecord`), worded by :func:`kbgraph.ingest.wording.sentence` —
each with what backs it — the
runs it was learnt from, their tasks, the runs that then succeeded and, for an error and what the
agent did next, the runs where the next call went through — split by the domain of those runs:

- **Placed by evidence.** A statement stands under *When to use*, *Why* or *How* only when at
  least one run behind it reached its goal, and says how many did. What only failed runs showed is
  a pitfall, said as such ("seen only in failed runs"). An error and what followed it is always a
  pitfall; its sentence says what the agent did, not how it went, and the evidence says that
  separately, from the record's kind of recovery: "the retried call went through in 4 of 4; the run still failed in all 4".
- **Rules merged like concepts.** Rules the agents stated (and an LLM reflector's lessons) that say
  the same in other words — cosine of their embeddings at least :data:`DUPLICATE_RULE_SIMILARITY`
  — are one statement: the wording backed by the most runs stands for all of them, with their
  evidence summed and the sentences it stands for kept (``sources``). Statements of the
  reflector's kinds (before, how, recovery) are not merged by similarity: two of them that read
  alike still name different calls. One exception, by rule: retries of one failure (one
  operation, one error class) are one statement whatever arguments they changed, with the
  evidence of every variant summed and the changed arguments as its detail
  (:meth:`~kbgraph.core.models.StatementRecord.retry_key`).
- **Scoped by domain.** A meta-concept whose runs span domains gets one part per domain, each with
  the statements of that domain's runs: a step seen in one banking run is not a "how" of airline.

Everything here is pure and deterministic (same insights, same document). The audit
(:mod:`kbgraph.audit`) checks the stored documents against the graph by the same rules.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from kbgraph.core.models import ConceptDocument, StatementKind, StatementRecord, stored_record
from kbgraph.ingest.integrate import SECTIONS, EmbedFn, Section, classify_insight, sentence_key
from kbgraph.ingest.wording import RULE_PREFIX, sentence

__all__ = ["DUPLICATE_RULE_SIMILARITY", "DocumentRewriter", "MAX_PER_SECTION", "RULE_PREFIX", "EvidencedDocument", "Evidence",
           "InsightEvidence", "Statement", "build_document", "evidence_rows", "lesson", "merge_rules",
           "placed_section", "record_of_row"]

#: Cosine (all-MiniLM-L6-v2, without the "Rule the agent applied:" prefix) from which two rules are
#: one. Measured on the rules the real airline runs give "cancel reservation" (tests/ingest/
#: test_integrate_evidence.py keeps them): the two pairs that state one policy in other words meet
#: at 0.89 ("… basic economy … created more than 24 hours ago without travel insurance, so it cannot
#: be canceled for a refund" twice) and 0.79 ("cannot be canceled for a refund unless the airline
#: cancels the flight" / "cannot be cancelled without a valid reason like airline cancellation");
#: the closest pair that says different things at 0.68 ("business class … can always be cancelled,
#: economy … if travel insurance is purchased" / "basic economy … cannot be cancelled unless within
#: 24 hours"). Concept deduplication attaches labels at 0.6; rules are sentences about one
#: operation, whose neighbours share more words, so they need more.
DUPLICATE_RULE_SIMILARITY = 0.75
#: Statements per section and domain: a document is read by an agent in its prompt.
MAX_PER_SECTION = 12


class DocumentRewriter(Protocol):
    """Rewords a meta-concept's statements (BREW's IntegAgent, e.g. with an LLM): one sentence per
    statement, in order. Where a statement stands and what backs it are not the writer's to change:
    those follow the evidence."""

    def reword(self, name: str, statements: Sequence[Statement]) -> list[str]: ...


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class Evidence:
    """What backs a statement: the runs, their tasks, the runs that succeeded and the runs whose
    next call after an error went through (sets of ids, so that merging adds up without counting
    a run twice)."""

    runs: frozenset[str] = frozenset()
    tasks: frozenset[str] = frozenset()
    succeeded: frozenset[str] = frozenset()
    went_through: frozenset[str] = frozenset()

    def __or__(self, other: Evidence) -> Evidence:
        return Evidence(self.runs | other.runs, self.tasks | other.tasks, self.succeeded | other.succeeded,
                        self.went_through | other.went_through)

    def describe(self, record: StatementRecord, section: Section) -> str:
        """The evidence as the document shows it after the statement of ``record``, in words that
        match what it says."""
        n, s, w = len(self.runs), len(self.succeeded & self.runs), len(self.went_through & self.runs)
        base = f"{_plural(n, 'run')}, {_plural(len(self.tasks), 'task')}"
        if not n:
            return ""
        if record.kind == "recovery":
            parts = [base]
            if record.recovery in ("retry", "repeat"):
                parts.append(f"the retried call went through in {w} of {n}")
            elif record.recovery == "switch":
                parts.append(f"the call it switched to went through in {w} of {n}")
            parts.append(_run_outcome(s, n))
            return "; ".join(parts)
        if section == "pitfalls" and not s:
            return f"seen only in failed runs: {base}"
        return f"{base}, {'all' if s == n else s} succeeded"


def _run_outcome(succeeded: int, runs: int) -> str:
    if runs == 1:
        return "the run then succeeded" if succeeded else "the run still failed"
    if succeeded == 0:
        return f"the run still failed in all {runs}"
    if succeeded == runs:
        return f"the run then succeeded in all {runs}"
    return f"the run then succeeded in {succeeded} of {runs}"


@dataclass(frozen=True)
class InsightEvidence:
    """What one insight says (its record) with the evidence of its runs in one domain."""

    record: StatementRecord
    domain: str
    evidence: Evidence

    @property
    def text(self) -> str:
        return sentence(self.record)


def lesson(text: str) -> StatementRecord:
    """A free sentence as a record: an LLM's lesson, or an insight stored before insights kept
    records (its sentence is not read back for what it says)."""
    return StatementRecord(kind="lesson", text=text)


def record_of_row(row: Mapping[str, Any]) -> StatementRecord:
    """The record of an insight as the store reads it (``record``, JSON; a lesson when it has none)."""
    return stored_record(row.get("record")) or lesson(str(row["text"]))


def evidence_rows(row: Mapping[str, Any]) -> list[InsightEvidence]:
    """An insight as the store reads it (``text``, ``record``, ``runs``, ``tasks``, ``succeeded``,
    ``worked`` and ``origins``: the domain, runs and task of each experience it came from), one
    entry per domain of its runs. A run no origin names belongs to the first origin's domain."""
    origins = [o for o in row.get("origins") or [] if o and o.get("domain") is not None]
    origins.sort(key=lambda o: (str(o["domain"]), str(o.get("task") or "")))
    fallback = str(origins[0]["domain"]) if origins else "general"
    run_domain = {str(r): str(o["domain"]) for o in origins for r in o.get("runs") or []}
    task_domain = {str(o.get("task")): str(o["domain"]) for o in origins if o.get("task") is not None}
    by_domain: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for name, values in (("runs", row["runs"]), ("succeeded", row["succeeded"]), ("went_through", row["worked"])):
        for run in values:
            by_domain[run_domain.get(str(run), fallback)][name].add(str(run))
    for task in row["tasks"]:
        by_domain[task_domain.get(str(task), fallback)]["tasks"].add(str(task))
    record = record_of_row(row)
    return [InsightEvidence(record, domain, Evidence(
        frozenset(sets["runs"]), frozenset(sets["tasks"]), frozenset(sets["succeeded"]), frozenset(sets["went_through"])))
        for domain, sets in sorted(by_domain.items()) if sets["runs"]]


def placed_section(record: StatementRecord, evidence: Evidence) -> Section:
    """Where a statement belongs: an error and what followed it under pitfalls; a look-up before a
    change and the call that made it under how; a rule or a lesson where its words call for
    (:func:`classify_insight` of the rule as stated, after the words every rule's sentence opens
    with, or of the lesson); but never *When to use*, *Why* or *How* without a run that succeeded."""
    if record.kind == "recovery":
        return "pitfalls"
    rule = record.kind == "rule"
    section: Section = "how" if record.kind in ("before", "how") else classify_insight(record.text, opens=not rule)
    return section if section == "pitfalls" or evidence.succeeded & evidence.runs else "pitfalls"


@dataclass(frozen=True)
class Statement:
    """One sentence of a document: where it stands, for which domain, what backs it, the insight
    sentences (keys) it stands for and what it says (its record; None for a statement stored
    before statements kept records, which is read as a free lesson). ``text`` is the record's
    sentence, or a writer's rewording of it."""

    section: Section
    domain: str
    text: str
    evidence: Evidence
    sources: tuple[str, ...]
    record: StatementRecord | None = None

    @property
    def said(self) -> StatementRecord:
        return self.record if self.record is not None else lesson(self.text)

    @property
    def kind(self) -> StatementKind:
        return self.said.kind

    @property
    def meaning(self) -> str:
        """What it says to compare by: a rule as the agent stated it (unless reworded), else its sentence."""
        return self.said.text if self.kind == "rule" and self.text == sentence(self.said) else self.text

    @property
    def backing(self) -> str:
        """What backs it, as the document shows it in brackets after the sentence."""
        return self.evidence.describe(self.said, self.section)

    @property
    def line(self) -> str:
        backing = self.backing
        return f"{self.text} ({backing})" if backing else self.text

    def as_json(self) -> dict[str, Any]:
        e = self.evidence
        record = {"record": self.record.model_dump(mode="json", exclude_defaults=True)} if self.record is not None else {}
        return {"section": self.section, "domain": self.domain, "text": self.text, "sources": list(self.sources),
                "runs": sorted(e.runs), "tasks": sorted(e.tasks), "succeeded": sorted(e.succeeded),
                "went_through": sorted(e.went_through), **record}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Statement:
        section = str(data["section"])
        if section not in SECTIONS:
            raise ValueError(f"section {section!r} is not one of {', '.join(SECTIONS)}")
        return cls(section, str(data["domain"]), str(data["text"]),
                   Evidence(*(frozenset(map(str, data.get(k) or ())) for k in
                              ("runs", "tasks", "succeeded", "went_through"))),
                   tuple(map(str, data.get("sources") or ())),
                   StatementRecord.model_validate_json(json.dumps(data["record"])) if data.get("record") else None)


_TITLES: dict[Section, str] = {"when_to_use": "When to use", "why": "Why", "how": "How", "pitfalls": "Pitfalls"}


@dataclass(frozen=True)
class EvidencedDocument:
    """A meta-concept's statements, by domain and section."""

    statements: tuple[Statement, ...] = ()
    domain_runs: Mapping[str, int] = field(default_factory=dict)

    @property
    def domains(self) -> list[str]:
        return sorted({s.domain for s in self.statements})

    def sections(self) -> ConceptDocument:
        """The four lists of sentences (every domain's), as the meta-concept's properties keep them."""
        lists: dict[str, list[str]] = {section: [] for section in SECTIONS}
        seen: set[str] = set()
        for statement in self.statements:
            if sentence_key(statement.text) not in seen:
                seen.add(sentence_key(statement.text))
                lists[statement.section].append(statement.text)
        return ConceptDocument(**lists)

    def render(self) -> str:
        """The document as an agent reads it: one part per domain when it spans several."""
        domains = self.domains
        parts = []
        for domain in domains:
            mine = [s for s in self.statements if s.domain == domain]
            depth = "##" if len(domains) == 1 else "###"
            body = "\n\n".join(
                f"{depth} {_TITLES[section]}\n" + "\n".join(f"- {s.line}" for s in mine if s.section == section)
                for section in SECTIONS if any(s.section == section for s in mine))
            if len(domains) > 1:
                runs = self.domain_runs.get(domain, 0)
                body = f"## In {domain} ({_plural(runs, 'run')})\n\n{body}"
            parts.append(body)
        return "\n\n".join(parts)

    def statements_json(self) -> str:
        return json.dumps([s.as_json() for s in self.statements], ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> EvidencedDocument:
        if not text:
            return cls()
        return cls.of(Statement.from_json(s) for s in json.loads(text))

    @classmethod
    def of(cls, statements: Iterable[Statement]) -> EvidencedDocument:
        runs: dict[str, set[str]] = defaultdict(set)
        for statement in (kept := tuple(statements)):
            runs[statement.domain] |= statement.evidence.runs
        return cls(kept, {domain: len(r) for domain, r in runs.items()})


_Entry = tuple[StatementRecord, Evidence, list[str]]


def _support(record: StatementRecord, evidence: Evidence) -> tuple[int, int, int, str]:
    text = sentence(record)
    return (-len(evidence.runs), -len(evidence.succeeded), len(text), text)


def _merge_recoveries(ordered: list[_Entry]) -> list[_Entry]:
    """Retries of one failure (one operation, one error class) as one statement, most-supported
    first: "…, the agent retried it with changed arguments (payment_methods[].amount;
    payment_methods[], payment_methods[].amount)", with the evidence of every variant summed and
    each sentence kept."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, (record, _, _) in enumerate(ordered):
        key = record.retry_key()
        if key is not None:
            groups[key].append(index)
    merged_into: dict[int, int] = {}
    heads: dict[int, _Entry] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        evidence = Evidence()
        keys: list[str] = []
        for i in members:
            evidence, keys = evidence | ordered[i][1], keys + ordered[i][2]
            merged_into[i] = members[0]
        changed = tuple(paths for i in members for paths in ordered[i][0].changed)
        heads[members[0]] = (ordered[members[0]][0].model_copy(update={"changed": changed, "merged": True}),
                             evidence, keys)
    return [heads.get(i, entry) for i, entry in enumerate(ordered) if merged_into.get(i, i) == i]


def merge_rules(
    items: Sequence[tuple[StatementRecord, Evidence]], embed: EmbedFn | None, threshold: float = DUPLICATE_RULE_SIMILARITY,
) -> list[tuple[StatementRecord, Evidence, tuple[str, ...]]]:
    """``items`` (record, evidence) with exact repeats merged (one sentence, :func:`sentence_key`);
    retries of one failure merged whatever arguments they changed (one failure and one kind of
    recovery is one statement, the arguments its detail); and, among rules and free lessons, near
    duplicates merged: most-supported first, each joins the first kept statement it is at least
    ``threshold`` close to, or stands for itself. So every statement merged is that close to the
    wording that stands for it, and no two statements kept are that close to each other."""
    exact: dict[str, _Entry] = {}
    for record, evidence in items:
        key = sentence_key(sentence(record))
        if key in exact:
            best, known, keys = exact[key]
            exact[key] = (min(best, record, key=sentence), known | evidence, keys)
        else:
            exact[key] = (record, evidence, [key])
    ordered = _merge_recoveries(sorted(exact.values(), key=lambda e: _support(e[0], e[1])))
    ordered = sorted(ordered, key=lambda e: _support(e[0], e[1]))
    free = [i for i, (record, _, _) in enumerate(ordered) if record.kind in ("rule", "lesson")]
    if embed is None or len(free) < 2:
        return [(record, evidence, tuple(keys)) for record, evidence, keys in ordered]
    vectors = np.asarray(embed([ordered[i][0].text for i in free]), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    vectors = vectors / norms
    into: dict[int, int] = {}
    heads: list[int] = []
    for row, index in enumerate(free):
        head = next((h for h in heads if float(vectors[free.index(h)] @ vectors[row]) >= threshold), None)
        if head is None:
            heads.append(index)
        else:
            into[index] = head
    merged: dict[int, _Entry] = {}
    for index, (record, evidence, keys) in enumerate(ordered):
        head = into.get(index, index)
        if head in merged:
            best, known, all_keys = merged[head]
            merged[head] = (best, known | evidence, all_keys + keys)
        else:
            merged[head] = (record, evidence, list(keys))
    return [(record, evidence, tuple(sorted(keys))) for record, evidence, keys in merged.values()]


def build_document(
    insights: Iterable[InsightEvidence], *, embed: EmbedFn | None = None,
    threshold: float = DUPLICATE_RULE_SIMILARITY, max_per_section: int = MAX_PER_SECTION,
    reword: Callable[[list[Statement]], list[Statement]] | None = None,
) -> EvidencedDocument:
    """The document the insights make (module docstring). ``reword`` may reword the placed
    statements (an LLM writer); it returns them in the same order, with the same sections,
    domains, evidence and sources."""
    by_domain: dict[str, list[tuple[StatementRecord, Evidence]]] = defaultdict(list)
    for insight in insights:
        by_domain[insight.domain].append((insight.record, insight.evidence))
    statements: list[Statement] = []
    for domain in sorted(by_domain):
        placed: dict[Section, list[Statement]] = defaultdict(list)
        for record, evidence, sources in merge_rules(by_domain[domain], embed, threshold):
            section = placed_section(record, evidence)
            placed[section].append(Statement(section, domain, sentence(record), evidence, sources, record))
        for section in SECTIONS:
            chosen = sorted(placed[section], key=lambda s: _order(s))[:max_per_section]
            statements += chosen
    if reword is not None and statements:
        reworded = reword(statements)
        if len(reworded) != len(statements):
            raise ValueError(f"reword returned {len(reworded)} statements for {len(statements)}")
        statements = [replace(old, text=new.text) for old, new in zip(statements, reworded, strict=True)]
    return EvidencedDocument.of(statements)


def _order(statement: Statement) -> tuple[int, int, int, str]:
    """Preconditions before the call; then the best supported first; the text decides the rest."""
    kind_rank = {"before": 0, "how": 1}.get(statement.kind, 2)
    return (kind_rank, -len(statement.evidence.succeeded), -len(statement.evidence.runs), statement.text)
