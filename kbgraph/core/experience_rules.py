"""What a run's text and outcome become in a stored experience, written by ingestion and read by search.

Ingestion (``ingest/abstract.py``) stores a failed step's error, text and issue type and a failure
mode's effectiveness with these rules; search applies the same rules to a query's executed steps
and to stored failure modes, so the two meet. Pure functions, no state.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from kbgraph.core.general_text import GeneralText
from kbgraph.core.generalise import general_task, generalise_text, past
from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.models import Trajectory
from kbgraph.core.models.experience import TRANSIENT_ISSUES

#: Where a task's text splits into sentences.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
# Role-play framing and personality lists say who the user is, not what the task is.
_PERSONA = re.compile(
    r"^(you are (playing the role|(\w+, )+\w+\.?$)|your character is|your name is|you are a person)",
    re.IGNORECASE,
)
# A task that opens with the user's e-mail or id (a placeholder of these kinds), then maybe a stop.
_CONTACT_KINDS = frozenset({"email", "id"})
_AFTER_CONTACT = re.compile(r"[.:,]?\s*")
PROBLEM_CHARS = 600

_ISSUE_RULES = [
    # A failure of the moment (an overloaded or unreachable service), not of the call: first, so
    # that "429 Too Many Requests" is not a limit of the task's. Its issue types are TRANSIENT_ISSUES.
    ("transient", ("503", "502", "504", "429", "service unavailable", "temporarily unavailable", "bad gateway",
                   "gateway timeout", "too many requests", "rate limit", "try again later", "connection reset",
                   "connection refused")),
    ("not_found", ("not found", "no such", "does not exist", "doesn't exist", "unknown", "404")),
    ("permission_denied", ("permission", "forbidden", "unauthori", "not allowed", "denied", "403")),
    ("timeout", ("timeout", "timed out", "time out")),
    ("limit_exceeded", ("limit", "exceed", "insufficient", "quota", "too many")),
    ("conflict", ("already", "conflict", "duplicate")),
    ("wrong_state", ("cannot be", "can't be", "not eligible", "status", "pending", "expired")),
    ("invalid_argument", ("invalid", "missing", "required", "must", "malformed", "bad request")),
]


def classify_issue(error: str) -> str:
    """A coarse issue type for an error message (what the teacher phase matches on)."""
    # Compare without spaces or underscores too, so "UserNotFound" matches "not found".
    lowered = error.lower()
    compact = re.sub(r"[\s_-]", "", lowered)
    for issue, cues in _ISSUE_RULES:
        if any(cue in lowered or cue.replace(" ", "") in compact for cue in cues):
            return issue
    return "error"


def failed_for_the_moment(error: str) -> bool:
    """The error is of a call that failed for a reason of the moment (its issue type is one of
    :data:`~kbgraph.core.models.experience.TRANSIENT_ISSUES`): what a stored step's
    ``failed_for_the_moment`` says, for an error not yet classified (a query's executed step)."""
    return classify_issue(error) in TRANSIENT_ISSUES


def _without_leading_contact(general: GeneralText) -> str:
    """The text without a leading e-mail or id placeholder (and the stop after it)."""
    text = general.text
    slot = general.slot_at(len(text) - len(text.lstrip()))
    if slot is None or slot.kind not in _CONTACT_KINDS:
        return text
    return text[past(_AFTER_CONTACT, text, slot.end):]


def problem_from_task(task: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str:
    """The task in general terms: role-play, persona and identity sentences dropped, what
    identifies a person or a record as placeholders (``names``/``ids``: the trajectory's, see
    :func:`kbgraph.core.run_identities.names_in_trajectory`)."""
    text = _without_leading_contact(general_task(task, names, ids))
    kept = [s for s in SENTENCE_BREAK.split(text) if s.strip() and not _PERSONA.match(s.strip())]
    problem = ""
    for sentence in kept or [text]:
        if problem and len(problem) + len(sentence) > PROBLEM_CHARS:
            break
        problem = f"{problem} {sentence}".strip()
    return problem[:PROBLEM_CHARS] or text[:PROBLEM_CHARS] or "(empty task)"


def problem_of(trajectory: Trajectory) -> str:
    """The problem the rule-based abstraction (``ingest/abstract.py``) gives a run: its task in
    general terms, with the names and ids the run itself holds."""
    return problem_from_task(trajectory.task, names_in_trajectory(trajectory), ids_in_trajectory(trajectory))


#: The most characters of a failed step's error the memory stores.
STORED_ERROR_CHARS = 300


def stored_error(error: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str:
    """A failed step's error as the memory stores it: generalised, at most STORED_ERROR_CHARS."""
    return generalise_text(error, names, ids)[:STORED_ERROR_CHARS]


def failed_step_text(text: str, error: str) -> str:
    """A failed step's text: its description, then the stored error. A query's failed step is
    embedded from the same text, so it meets the stored one."""
    return f"{text} — failed: {error}"


def effectiveness_of(recovered: bool, run_succeeded: bool) -> float:
    """1 when the fix went through and the run succeeded, 0.75 when the run succeeded another way,
    0.5 when the fix went through but the run still failed, 0 when nothing resolved it."""
    if run_succeeded:
        return 1.0 if recovered else 0.75
    return 0.5 if recovered else 0.0
