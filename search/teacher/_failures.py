"""The criticism channel's answer: failure modes like the query's failure, identical ones as one
match, ranked so that among failures of the query's error class what led runs to their goal comes
first, in the runs' numbers, before similarity breaks ties.

**Error class** (:func:`error_class`): the message of an error signature — values masked,
lower-cased, without the action and a leading ``"error:"``. "The same error on the same action"
(the signature) makes one group, one match; "the same error on any action" (the class) is what the
answer is built from, and what the query is compared with: a gift card that does not cover the
price when booking and when changing flights are one class.

**The runs' evidence** (:mod:`._next`): for every class, the runs that hit it, what each did next
(a retry with changed arguments, the same call, another tool, a handover, a look-up, no further
call) and whether the run then reached its goal — "after this error, 2 of 7 runs reached their
goal; what they did next: …". Whether the next call went through is a second fact. Every failure of
a class is counted, not only those near the query. The older count per kind of recovery (how often
it followed the error, how often the fix went through *and* the run succeeded) is kept beside it
(``recovery_tried`` / ``recovery_worked``) and weighs the score of matches of other classes.

**Order** of one problematic step's matches: those of the query's error class first, and among
them (:func:`shown_key`) one from a run that then reached its goal, then the one whose form of
recovery led to the goal in more runs of the class, then a concrete one, then one whose call went
through, then one that called the failed action again, then similarity. A recovery that only made
the call go through in runs that still failed thus comes after every one from a run that reached
its goal, and its answer says so. After them the others, by score, ``cosine · sim(issue types) ·
(0.5 + 0.5 · evidence)`` (:func:`~kbgraph.search.scoring.failure_score`). The recovery a match
shows is chosen by the same rule among its group's members.
"""

from __future__ import annotations

import re
from functools import lru_cache
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kbgraph.core.recovery import ErrorSignature
from kbgraph.search.scoring import failure_score, issue_similarity, neo4j_to_cosine, recovery_evidence
from kbgraph.search.teacher._params import ProblematicStep, RefineWeights
from kbgraph.search.teacher._next import ClassEvidence, class_evidence, next_action
from kbgraph.search.teacher._results import FailureMatch, NextActionCount
from kbgraph.search.teacher._rows import FailureGroupRow, FailureRow, GroupBest

_LEADING_ERROR = re.compile(r"^\s*error\b\s*[:\-]?\s*", re.IGNORECASE)
_LETTER = re.compile(r"[^\W\d_]")


@lru_cache(maxsize=65_536)  # asked of every signature of the namespace on every refine
def error_class(signature: ErrorSignature | None) -> str | None:
    """The error class of an error signature: the words of its masked message (``signature.error``)
    — without the tokens that hold no letter (the masked values: ``#``, ``'…'``, ``@``, ``#-#-#``;
    so "payment method certificate_… not found" and "payment method not found" are one class),
    without a leading ``"error:"`` and end punctuation. None without a signature, or when no word is
    left (a bare code says nothing of what went wrong)."""
    if signature is None:
        return None
    words = " ".join(token for token in signature.error.lower().split() if _LETTER.search(token))
    return _LEADING_ERROR.sub("", words).strip(" \t.!:;,") or None


@dataclass(frozen=True)
class KindCount:
    """How often a kind of recovery followed an error class, and how often it worked."""

    tried: int = 0
    worked: int = 0

    def __add__(self, other: KindCount) -> KindCount:
        return KindCount(self.tried + other.tried, self.worked + other.worked)

    @property
    def evidence(self) -> float:
        return recovery_evidence(self.worked, self.tried)


@dataclass
class Group:
    """Identical failure modes (one signature), from the rows of ``refine_failure_groups``."""

    signature: str
    signed: ErrorSignature | None
    kinds: dict[str, FailureGroupRow] = field(default_factory=dict)

    @property
    def error_class(self) -> str | None:
        return error_class(self.signed)

    @property
    def tried(self) -> int:
        return sum(row.tried for row in self.kinds.values())

    @property
    def recovered(self) -> int:
        return sum(row.recovered for row in self.kinds.values())

    @property
    def worked(self) -> int:
        return sum(row.worked for row in self.kinds.values())

    @property
    def tasks(self) -> int:
        return len({t for row in self.kinds.values() for t in row.task_keys})

    @property
    def runs(self) -> list[str]:
        return sorted({str(r) for row in self.kinds.values() for r in row.runs if r})

    @property
    def nearest(self) -> float:
        return max(row.nearest for row in self.kinds.values())


def read_groups(rows: Iterable[FailureGroupRow]) -> dict[str, Group]:
    groups: dict[str, Group] = {}
    for row in rows:
        groups.setdefault(row.signature, Group(row.signature, row.signed)).kinds[row.kind] = row
    return groups


def class_counts(groups: Iterable[Group]) -> dict[tuple[str, str], KindCount]:
    """(error class, recovery kind) → counts, summed over every group of the class."""
    counts: dict[tuple[str, str], KindCount] = {}
    for group in groups:
        cls = group.error_class
        if cls is None:
            continue
        for kind, row in group.kinds.items():
            key = (cls, kind)
            counts[key] = counts.get(key, KindCount()) + KindCount(row.tried, row.worked)
    return counts


#: Recovery kinds that call the failed action again: they fixed this error, where a switch went around it.
SAME_CALL = frozenset({"retry", "repeat"})


def class_members(groups: Iterable[Group]) -> dict[str, list[GroupBest]]:
    """error class → every failure mode of the class (the groups' members), on any action."""
    members: dict[str, list[GroupBest]] = {}
    for group in groups:
        cls = group.error_class
        if cls is not None:
            members.setdefault(cls, []).extend(m for row in group.kinds.values() for m in row.members)
    return members


def shown_key(member: GroupBest, evidence: ClassEvidence) -> tuple[bool, int, bool, bool, bool, float]:
    """Which member a group shows, and which same-class match comes first: from a run that then
    reached its goal; its form of recovery led to the goal in more runs of the class; it is
    concrete; its call went through; the same call again (it fixed this error, where a switch went
    around it); then similarity. A recovery that only made the call go through in a run that still
    failed comes after every one from a run that reached its goal."""
    form = next_action(member.recovery_kind, member.record, member.looked_up)
    return (bool(member.run_succeeded), evidence.reached(form),
            bool(member.concrete), bool(member.recovered), (member.recovery_kind or "none") in SAME_CALL,
            float(member.score or 0))


def _counts(evidence: ClassEvidence) -> list[NextActionCount]:
    return [NextActionCount(action=a.action, runs=a.runs, reached_goal=a.reached_goal, went_through=a.went_through)
            for a in evidence.actions]


def failure_matches(
    index: int, step: ProblematicStep, nearest: Mapping[str, FailureRow], groups: Mapping[str, Group],
    weights: RefineWeights, k: int,
) -> list[FailureMatch]:
    """One problematic step's failure matches, best first (see the module docstring).

    ``nearest``: the nearest window row per group key (a signature, or the failure id of a failure
    mode without one); ``groups``: every group of the classes involved, by signature."""
    query_class = error_class(step.signed)
    counts = class_counts(groups.values())
    evidences = {cls: class_evidence(members) for cls, members in class_members(groups.values()).items()}
    keys = list(nearest) + [s for s, g in groups.items() if s not in nearest and query_class is not None
                            and g.error_class == query_class]
    ranked: list[tuple[tuple[float, ...], FailureMatch]] = []
    for key in keys:
        group = groups.get(key)
        if group is None:  # a failure mode without a signature: no group, no counts
            row, count, cls = nearest[key], KindCount(), None
            shown = GroupBest.of_failure(row)
            cosine = max(0.0, neo4j_to_cosine(row.score))
            evidence = ClassEvidence()
        else:
            cls = group.error_class
            evidence = evidences.get(str(cls), ClassEvidence())
            shown = max((m for row in group.kinds.values() for m in row.members),
                        key=lambda m: shown_key(m, evidence))
            count = counts.get((str(cls), shown.recovery_kind or "none"), KindCount())
            cosine = max(0.0, neo4j_to_cosine(group.nearest))
        same = query_class is not None and cls == query_class
        issue_sim = issue_similarity(step.issue_type, shown.issue_type, weights, same_error=same)
        match = FailureMatch(
            experience_id=shown.experience_id, problem=shown.problem, goal=shown.goal, domain=shown.domain,
            query_step=index, failure_id=shown.failure_id, description=shown.description,
            issue_type=shown.issue_type, recovery=shown.recovery, step_order=shown.step_order, cosine=cosine,
            issue_similarity=issue_sim, score=failure_score(cosine, issue_sim, count.evidence),
            signature=key if group else None, error_class=cls, same_class=same,
            seen=group.tried if group else 1, tasks=group.tasks if group else 1,
            recovered=group.recovered if group else 0, worked=group.worked if group else 0,
            runs=group.runs if group else [str(r) for r in [shown.run_id] if r],
            recovery_kind=shown.recovery_kind, concrete=shown.concrete, fix_recovered=shown.recovered,
            run_succeeded=shown.run_succeeded, run_id=shown.run_id,
            recovery_tried=count.tried, recovery_worked=count.worked,
            class_runs=evidence.runs, class_reached_goal=evidence.reached_goal, next_actions=_counts(evidence),
            next_action=next_action(shown.recovery_kind, shown.record, shown.looked_up) if group else None,
            headline=evidence.headline if group else "", went_through=evidence.second_fact if group else "",
        )
        # Same class first, ranked by what led to the goal and in how many runs; every other match by its score.
        order = (same, *(shown_key(shown, evidence)[:5] if same else (False, 0, False, False, False)), match.score)
        ranked.append((tuple(float(x) for x in order), match))
    ranked.sort(key=lambda r: (tuple(-x for x in r[0]), r[1].experience_id, r[1].failure_id))
    return [match for _, match in ranked[:k]]
