"""``kbgraph search`` (the student phase: experiences that worked for a task) and ``kbgraph refine``
(the teacher phase: stored steps and failures like the ones going wrong, with recoveries)."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any

import typer

from kbgraph.cli._common import (
    JsonOption,
    NamespaceOption,
    _json_argument,
    _open,
    _parse_assignments,
    _settings,
    add_commands,
    out,
    seconds_since_start,
    startup_and_search,
)
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.jsonl import json_problem
from kbgraph.embedders import load_model
from kbgraph.kb import KnowledgeBase
from kbgraph.core.terminal import json_safe


def register(app: typer.Typer) -> None:
    add_commands(app, {"search": search, "refine": refine})


def _parse_steps(values: list[str] | None) -> list[dict[str, Any]]:
    """``--step ACTION`` or ``--step 'ACTION {"arg": 1}'`` (the arguments as a JSON object)."""
    steps = []
    for index, item in enumerate(values or []):
        action, _, raw = item.strip().partition(" ")
        arguments: Any = {}
        if raw.strip():
            try:
                arguments = _json_argument(raw, f"--step {index + 1} ({action[:60]}) arguments")
            except json.JSONDecodeError as error:
                raise InvalidInputError([f"--step {index + 1} ({action[:60]}): arguments: {json_problem(error)}"]) from None
            if not isinstance(arguments, dict):
                raise InvalidInputError([f"--step {index + 1} ({action}): arguments must be a JSON object"])
        steps.append({"action": action, "arguments": arguments})
    return steps


def search(
    task: Annotated[str, typer.Argument(help="The task, in words (may be empty with --step)")] = "",
    namespace: NamespaceOption = None,
    domain: Annotated[str | None, typer.Option("--domain", "-d", help="The domain the agent works in")] = None,
    k: Annotated[int, typer.Option("--k", "-k", help="How many experiences")] = 5,
    step: Annotated[list[str] | None, typer.Option(
        "--step", help='A step executed so far: ACTION or \'ACTION {"arg": "value"}\' (repeatable, in order)')] = None,
    only_domain: Annotated[list[str] | None, typer.Option("--only-domain", help="Filter: only these domains")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Filter: concrete or abstract")] = None,
    min_success: Annotated[float, typer.Option(help="Filter: minimum success rate")] = 0.0,
    setting: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a search weight for this call: NAME=VALUE, NAME a path of the settings tree or its "
        "flat name (intent.one_ask_penalty=1, lexical.alpha=0.3 or alpha=0.3; repeatable)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Student-phase search: the experiences that worked for tasks like this one, each explained."""
    filters: dict[str, Any] = {"min_success": min_success}
    if only_domain:
        filters["domains"] = only_domain
    if kind:
        filters["kinds"] = [kind]
    weights = _parse_assignments(setting, "--set")
    steps = _parse_steps(step)
    # Everything is validated before connecting or loading the model: a typo fails in a moment.
    from kbgraph.search.student import parse_query, parse_search_options

    settings = _settings(namespace)
    query = parse_query({"task": task, "domain": domain, "steps_so_far": steps, "k": k})
    parsed_filters, effective = parse_search_options(settings.search, filters, weights or None)
    with KnowledgeBase.from_settings(settings) as kb:
        load_model(kb.embedder)  # so that the search's own time is not the model's loading
        ready = time.perf_counter()
        startup_s = seconds_since_start()
        results = kb.student.search(query, filters=parsed_filters, weights=effective)
        search_ms = (time.perf_counter() - ready) * 1000
    if as_json:
        sys.stdout.write(json_safe(results.model_dump_json(indent=2)) + "\n")
        return
    from kbgraph.search.explain import explain_results

    omega = effective.coarse.structure_weight if steps else effective.coarse.task_structure_weight
    out.print(explain_results(results, effective.lexical.alpha, omega), markup=False, highlight=False)
    out.print(startup_and_search(startup_s, search_ms), markup=False, highlight=False)


def refine(
    steps: Annotated[list[str], typer.Argument(
        help='Problematic steps, each a JSON object: \'{"action": "get_order_details", "arguments": {...}, '
             '"error": "order not found"}\' (issue_type optional)')],
    namespace: NamespaceOption = None,
    domain: Annotated[str | None, typer.Option("--domain", "-d", help="Only experiences of this domain")] = None,
    k: Annotated[int, typer.Option("--k", "-k", help="Matches per problematic step")] = 5,
    agent: Annotated[str | None, typer.Option(help="The calling agent (sees its private experiences)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Teacher-phase retrieval: stored steps and failure modes like the ones going wrong, with recoveries."""
    parsed: list[dict[str, Any]] = []
    problems: list[str] = []
    for index, raw in enumerate(steps):
        try:
            value = _json_argument(raw, f"step {index + 1}")
        except json.JSONDecodeError as error:
            problems.append(f"step {index + 1}: {json_problem(error)}")
            continue
        except InvalidInputError as invalid:
            problems += invalid.problems
            continue
        if not isinstance(value, dict):
            problems.append(f"step {index + 1}: must be a JSON object with an action")
            continue
        parsed.append(value)
    if problems:
        raise InvalidInputError(problems)
    from kbgraph.search.teacher import parse_refine_request

    parse_refine_request(parsed, domain=domain, k=k, agent=agent)  # fail fast, before connecting
    with _open(namespace) as kb:
        results = kb.refine(parsed, domain=domain, k=k, agent=agent)
    if as_json:
        sys.stdout.write(json_safe(results.model_dump_json(indent=2)) + "\n")
        return
    for index, step in enumerate(parsed):
        out.print(f"problematic step {index + 1}: {step.get('action')}" + (f" — {step['error']}" if step.get("error") else ""),
                  markup=False, highlight=False)
        for match in (m for m in results.steps if m.query_step == index):
            b = match.breakdown
            out.print(f"  {b.score:.3f}  {match.experience_id} [{match.domain}] step {match.step.order} "
                      f"{match.step.action}: sim {b.sim_step:.2f} · issue {b.issue_match:.2f} · precision {b.precision:.2f}"
                      f" — {match.goal[:80]}", markup=False, highlight=False)
        for failure in (f for f in results.failures if f.query_step == index):
            how = "the same error" if failure.same_class else "a failure like it"
            out.print(f"  {how} ({failure.score:.3f}): {failure.description[:160]}"
                      f"\n      {failure.summary}"
                      f"\n      recovery ({failure.run_id or failure.experience_id}): {failure.recovery[:400]}",
                      markup=False, highlight=False)
    for note in results.notes:
        out.print(f"note: {note}", markup=False, highlight=False)
