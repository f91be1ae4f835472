"""The learning-loop commands against the real Neo4j, run in this process as test_cli runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Neo4jTarget
from tests.kbgraph.cli.test_cli import SAMPLES, cli_namespace, kbgraph  # noqa: F401  (fixture)


def first_ids(target: Neo4jTarget, namespace: str, n: int) -> list[str]:
    found = kbgraph(target, namespace, "search", "return a damaged item for a refund", "-k", str(n), "--json")
    assert found.returncode == 0, found.stderr
    return [hit["id"] for hit in json.loads(found.stdout)["hits"]]


def test_feedback_maintain_restore_and_agents_from_the_command_line(
    neo4j_target: Neo4jTarget, cli_namespace: str  # noqa: F811
) -> None:
    assert kbgraph(neo4j_target, cli_namespace, "add", str(SAMPLES)).returncode == 0
    ids = first_ids(neo4j_target, cli_namespace, 6)
    event = [arg for exp_id in ids for arg in ("-r", exp_id)] + [arg for exp_id in ids[1:] for arg in ("-u", exp_id)]
    for n in range(5):
        done = kbgraph(neo4j_target, cli_namespace, "feedback", *event, "-o", "success", "-a", "agent-a", "--json")
        assert done.returncode == 0, done.stderr
    states = {s["id"]: s for s in json.loads(done.stdout)["experiences"]}
    assert (states[ids[1]]["retrieved"], states[ids[1]]["used"], states[ids[1]]["succeeded"]) == (5, 5, 5)
    assert (states[ids[0]]["retrieved"], states[ids[0]]["used"]) == (5, 0)

    dry = kbgraph(neo4j_target, cli_namespace, "maintain", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert [c["id"] for c in planned["changes"] if c["action"] == "archive"] == [ids[0]]
    real = kbgraph(neo4j_target, cli_namespace, "maintain")
    assert real.returncode == 0 and f"archive {ids[0]}" in real.stdout and "kbgraph restore --run" in real.stdout
    assert ids[0] not in first_ids(neo4j_target, cli_namespace, 6)
    restored = kbgraph(neo4j_target, cli_namespace, "restore", "--json")
    assert json.loads(restored.stdout) == {"restored": [ids[0]]}

    agents = kbgraph(neo4j_target, cli_namespace, "agents", "--json")
    cells = json.loads(agents.stdout)["cells"]
    assert sum(c["attempts"] for c in cells) == 5 and {c["agent"] for c in cells} == {"agent-a"}
    ranked = kbgraph(neo4j_target, cli_namespace, "agents", "--domain", cells[0]["domain"])
    assert ranked.returncode == 0 and "1. agent-a: 5/5" in ranked.stdout
    by_task = kbgraph(neo4j_target, cli_namespace, "agents", "--task", "refund a broken kettle", "--json")
    assert by_task.returncode == 0 and isinstance(json.loads(by_task.stdout), list)
    steps = kbgraph(neo4j_target, cli_namespace, "steps", "return_delivered_order_items", "--json")
    assert steps.returncode == 0 and json.loads(steps.stdout)


def test_learning_commands_refuse_bad_input_in_one_line(
    neo4j_target: Neo4jTarget, cli_namespace: str, tmp_path: Path  # noqa: F811
) -> None:
    for args, message in [
        (["feedback", "-u", "exp-nope", "-o", "success"], "not in namespace"),
        (["feedback", "-u", "exp-nope", "-o", "brilliant"], "--outcome"),
        (["feedback", "--step-reward", "exp-x=1"], "EXPERIENCE_ID:ORDER"),
        (["verify", str(SAMPLES), "--vote", "alpha=maybe"], "--vote"),
        (["steps", " "], "blank"),
    ]:
        done = kbgraph(neo4j_target, cli_namespace, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr
    verified = kbgraph(neo4j_target, cli_namespace, "verify", str(SAMPLES), "--vote", "alpha=yes", "--vote", "beta=no",
                       "--json")
    assert verified.returncode == 0, verified.stderr
    assert set(json.loads(verified.stdout)["verdicts"]) == {"private"}
