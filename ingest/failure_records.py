"""Failure modes with their evidence and record, whoever wrote them.

The rule-based abstractor reads each errored step of a run (:func:`failed_step`): the action, the
error's signature, what the agent did next (:mod:`kbgraph.core.recovery`), whether the run then
reached its goal, and the record of the reflector's statement about it (:func:`recovery_record`,
kind recovery: the operation, the error class, the kind of recovery, the tool switched to, the
arguments a retry changed). Failure modes written otherwise get the same:

- the LLM abstractor's (:func:`with_run_evidence`): a failure mode the model places at a step whose
  call errored is that step's, as the rule path reads it, in the model's words; an errored step the
  model does not name is added as the rule path writes it;
- any failure mode still without a record — ready-made (``add_experiences``, experience lines of
  an ingest) or the model's at a step that did not error (:func:`given_record`): a record from what
  it gives, the operation of its step, its description as the error class (values masked as the
  rule path masks an error) and its kind of recovery if it says one.

Pure functions: the teacher and the audit read every failure mode's record alike.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kbgraph.core.experience_rules import classify_issue, stored_error
from kbgraph.core.generalise import humanise_action
from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.models import MAX_TEXT_CHARS, Experience, FailureMode, StatementRecord, Step, Trajectory
from kbgraph.core.recovery import recovery_after, signed_error
from kbgraph.core.shapes import dispatched_tool
from kbgraph.ingest.reflect import masked_error, recovery_record

__all__ = ["failed_step", "given_record", "with_records", "with_run_evidence"]


def failed_step(trajectory: Trajectory, order: int, names: Collection[str] | None = None,
                ids: Collection[str] | None = None) -> FailureMode:
    """The failure mode of the errored step ``order`` of ``trajectory``, read from the run."""
    names = frozenset(names_in_trajectory(trajectory) if names is None else names)
    ids = frozenset(ids_in_trajectory(trajectory) if ids is None else ids)
    step = trajectory.steps[order]
    error = step.error or ""
    tool = dispatched_tool(step.action, step.arguments)
    recovery = recovery_after(trajectory, order, names, ids)
    signed = signed_error(step.action, error, step.arguments)
    return FailureMode(
        description=f"{humanise_action(tool or step.action)} failed: {stored_error(error, names, ids)}",
        issue_type=classify_issue(error), recovery=recovery.text[:MAX_TEXT_CHARS], step_order=order,
        action=step.action, signature=signed.key, signature_action=signed.action, signature_error=signed.error,
        recovery_kind=recovery.kind, recovered=recovery.recovered, concrete=recovery.concrete,
        run_id=trajectory.id, run_succeeded=trajectory.outcome.success,
        record=recovery_record(humanise_action(step.action), masked_error(error, names, ids), recovery),
        looked_up=bool(recovery.preparation),
    )


def _calls(actions: Sequence[str], trajectory: Trajectory) -> list[int | None]:
    """The index of the trajectory's call each of ``actions`` stands for: the next call of that
    action (the actions keep the run's calls in order), None when there is none left."""
    calls = iter(enumerate(trajectory.steps))
    return [next((index for index, call in calls if call.action == action), None) for action in actions]


def with_run_evidence(failures: Sequence[FailureMode], steps: Sequence[Step],
                      trajectory: Trajectory) -> list[FailureMode]:
    """A model's failure modes of ``trajectory`` (``step_order`` an index into the model's
    ``steps``) with the run's evidence: one per errored call, the first the model places at it
    worded by the model; the model's others as given; errored calls it does not name added."""
    names, ids = names_in_trajectory(trajectory), ids_in_trajectory(trajectory)
    step_of_call = {call: index for index, call in enumerate(_calls([s.action for s in steps], trajectory))
                    if call is not None}
    call_of_step = {index: call for call, index in step_of_call.items()}
    read: set[int] = set()
    result: list[FailureMode] = []
    for failure in failures:
        call = call_of_step.get(failure.step_order) if failure.step_order is not None else None
        if call is None or call in read or not trajectory.steps[call].error:
            result.append(failure)
            continue
        read.add(call)
        evidence = failed_step(trajectory, call, names, ids)
        result.append(evidence.model_copy(update={
            "description": failure.description, "recovery": failure.recovery or evidence.recovery,
            "issue_type": failure.issue_type or evidence.issue_type, "step_order": failure.step_order}))
    for call, step in enumerate(trajectory.steps):
        if step.error and call not in read:
            result.append(failed_step(trajectory, call, names, ids).model_copy(
                update={"step_order": step_of_call.get(call)}))
    return result


def given_record(failure: FailureMode, steps: Sequence[Step]) -> StatementRecord:
    """A record of what a failure mode given without one says (module docstring)."""
    order = failure.step_order
    action = failure.action or (steps[order].tool or steps[order].action
                                if order is not None and order < len(steps) else "")
    return StatementRecord(kind="recovery", operation=humanise_action(action), error=masked_error(failure.description),
                           recovery=failure.recovery_kind)


def with_records(experience: Experience) -> Experience:
    """``experience`` with a record on every failure mode (:func:`given_record` for those without)."""
    if all(f.record is not None for f in experience.failure_modes):
        return experience
    failures = [f if f.record is not None else f.model_copy(update={"record": given_record(f, experience.steps)})
                for f in experience.failure_modes]
    return experience.model_copy(update={"failure_modes": failures})
