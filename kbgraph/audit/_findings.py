"""A finding of the audit, and the checks there are."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kbgraph.ingest.integrate_evidence import DUPLICATE_RULE_SIMILARITY

Check = Literal["how-from-failed-runs", "outcome-wording", "pitfall-about-another-action", "duplicate-rules",
                "near-duplicate-statements", "cross-domain-how", "when-to-use-contradicted"]

#: Cosine (all-MiniLM-L6-v2) from which two statements of one document and domain, of any kind,
#: say the same thing twice. On the real airline runs' documents the closest pair that says two
#: things is "Before cancel reservation, get reservation details." / "… get user details." (0.93);
#: the retries of one failure that changed other arguments meet at 0.98–1.00.
NEAR_IDENTICAL_SIMILARITY = 0.95

#: What each check looks for, as ``kbgraph audit`` explains it.
CHECKS: dict[Check, str] = {
    "how-from-failed-runs": "a statement under When to use, Why or How that no run which succeeded backs",
    "outcome-wording": "words about how a fix went that its evidence contradicts (\"got past it\" where the call "
                       "went through in none of the runs, counts that are not the runs')",
    "pitfall-about-another-action": "a skill's pitfall about an action that is not one of the skill's own",
    "duplicate-rules": f"two rules of one document that say the same (cosine ≥ {DUPLICATE_RULE_SIMILARITY} of "
                       "their embeddings)",
    "near-duplicate-statements": "two statements of one document that say the same: one failure with one kind of "
                                 "recovery said twice (retries that changed other arguments), or any two statements "
                                 f"whose embeddings' cosine is at least {NEAR_IDENTICAL_SIMILARITY}",
    "cross-domain-how": "a statement of one domain's runs shown for another domain, or a document spanning "
                        "domains without a part per domain",
    "when-to-use-contradicted": "a skill's \"when to use\" that the tasks it quotes as examples contradict",
}


class Finding(BaseModel):
    """One thing a document or skill says that its evidence does not bear out."""

    check: Check
    #: ``document “cancel reservation”`` or ``skill cancel-reservation``.
    where: str
    #: The statement (or line) as the agent reads it.
    statement: str
    #: What backs it, recounted from the graph.
    evidence: str
    #: Why it is a finding.
    detail: str
    #: The texts of the document's statements it is about (one, or the two that say the same), so
    #: that a skill showing them carries the finding; not part of the report.
    about: tuple[str, ...] = Field(default=(), exclude=True)


class AuditReport(BaseModel):
    namespace: str
    documents: int
    skills: int
    findings: list[Finding]
