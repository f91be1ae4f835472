"""The command line against the session's real Neo4j. Commands run in this process through
``kbgraph.cli.run``, the path the ``kbgraph`` command takes (its one-line errors and exit statuses
included), with their own environment, standard input and captured output; a separate process only
where that is what is tested: the status and stderr of the real command, and arguments as the
interpreter decodes them. tests/kbgraph/cli/conftest.py puts back what an in-process run changes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from kbgraph.kb import KnowledgeBase
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget

SAMPLES = Path(__file__).resolve().parents[3] / "kbgraph" / "samples" / "experiences.jsonl"


def in_process(env: Mapping[str, str], *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` run by ``kbgraph.cli.run`` in this process, with exactly the environment
    ``env`` and ``stdin`` as its standard input: the exit status, stdout and stderr a subprocess
    would give (tests/cli_in_process.py)."""
    return run_kbgraph(env, *args, stdin=stdin)


def kbgraph(target: Neo4jTarget, namespace: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` on ``target`` in ``namespace`` (KBGRAPH_NAMESPACE), in this process."""
    return in_process(target.env(namespace), *args, stdin=stdin)


def kbgraph_process(target: Neo4jTarget, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` as a separate process (``python -m kbgraph.cli``), as a shell runs it."""
    return subprocess.run([sys.executable, "-m", "kbgraph.cli", *args], env=target.env(namespace),
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def cli_namespace(kb: KnowledgeBase) -> str:
    """The test's namespace, emptied afterwards by ``kb`` (``delete --all --yes`` is tested below)."""
    return kb.namespace


def test_add_then_stats_as_json(neo4j_target: Neo4jTarget, cli_namespace: str) -> None:
    added = kbgraph(neo4j_target, cli_namespace, "add", str(SAMPLES), "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["new"] == 30
    stats = kbgraph(neo4j_target, cli_namespace, "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    counts = json.loads(stats.stdout)
    assert counts["namespace"] == cli_namespace and counts["experiences"] == 30
    assert counts["nodes"]["Experience"] == 30 and counts["relationships"]["HAS_STEP"] > 30
    assert len(counts["experiences_by_domain"]) == 6

    again = kbgraph(neo4j_target, cli_namespace, "add", str(SAMPLES), "--json")
    assert json.loads(again.stdout)["existing"] == 30
    assert json.loads(kbgraph(neo4j_target, cli_namespace, "stats", "--json").stdout) == counts


def test_a_bad_file_is_reported_by_line_and_field_and_nothing_is_written(
    neo4j_target: Neo4jTarget, cli_namespace: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    good_line = SAMPLES.read_text().splitlines()[0]
    bad.write_text(good_line + "\n" + '{"goal": "no problem here"}\n' + "{oops\n" +
                   '{"problem": "p", "quality": "high"}\n')
    result = kbgraph(neo4j_target, cli_namespace, "add", str(bad))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{bad}:2: problem: Field required" in result.stderr
    assert f"{bad}:3: invalid JSON" in result.stderr
    assert f"{bad}:4: quality:" in result.stderr
    assert json.loads(kbgraph(neo4j_target, cli_namespace, "stats", "--json").stdout)["experiences"] == 0


def test_an_empty_or_missing_file_is_an_error(neo4j_target: Neo4jTarget, cli_namespace: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = kbgraph(neo4j_target, cli_namespace, "add", str(empty), str(tmp_path / "missing.jsonl"))
    assert result.returncode == 2
    assert "empty file" in result.stderr and "no such file" in result.stderr


def test_schema_status_shows_every_index_online(neo4j_target: Neo4jTarget, cli_namespace: str) -> None:
    result = kbgraph(neo4j_target, cli_namespace, "schema", "status", "--json")
    assert result.returncode == 0, result.stderr
    indexes = {row["name"]: row for row in json.loads(result.stdout)}
    for name in ("experience_pg_embedding", "step_text_embedding", "experience_text", "experience_key"):
        assert indexes[name]["state"] == "ONLINE"
    assert indexes["step_text_embedding"]["type"] == "VECTOR" and indexes["step_text"]["type"] == "FULLTEXT"


def test_get_prints_an_experience_and_delete_all_wants_confirmation(
    neo4j_target: Neo4jTarget, cli_namespace: str
) -> None:
    added = kbgraph(neo4j_target, cli_namespace, "add", str(SAMPLES), "--json")
    assert added.returncode == 0, added.stderr
    first = json.loads(SAMPLES.read_text().splitlines()[0])
    from kbgraph.core.models import Experience

    exp_id = Experience.model_validate(first).key
    shown = kbgraph(neo4j_target, cli_namespace, "get", exp_id)
    assert shown.returncode == 0 and json.loads(shown.stdout)["problem"] == first["problem"]
    missing = kbgraph(neo4j_target, cli_namespace, "get", "exp_nothing")
    assert missing.returncode == 1 and "no experience 'exp_nothing'" in missing.stderr
    refused = kbgraph(neo4j_target, cli_namespace, "delete", "--all")
    assert refused.returncode == 1 and "--yes" in refused.stderr
    deleted = kbgraph(neo4j_target, cli_namespace, "delete", "--all", "--yes")
    assert deleted.returncode == 0 and f"namespace {cli_namespace!r} deleted" in deleted.stdout, deleted.stderr
    assert json.loads(kbgraph(neo4j_target, cli_namespace, "stats", "--json").stdout)["experiences"] == 0


def test_ingest_reports_as_json_and_rejects_a_huge_task_with_its_reason(
    neo4j_target: Neo4jTarget, cli_namespace: str, tmp_path: Path
) -> None:
    trajectories = SAMPLES.parent / "trajectories.jsonl"
    result = kbgraph(neo4j_target, cli_namespace, "ingest", str(trajectories), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["records_read"] == 36 and report["meta_concepts"] > 0 and "write" in report["stage_seconds"]

    huge = tmp_path / "huge.jsonl"
    huge.write_text(json.dumps({"id": "huge", "task": "x" * 1_000_000}) + "\n")
    refused = kbgraph(neo4j_target, cli_namespace, "ingest", str(huge))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert f"{huge}:1: task: String should have at most 100000 characters" in refused.stderr


def test_an_invalid_setting_is_one_line(neo4j_target: Neo4jTarget, cli_namespace: str) -> None:
    # A real process: its exit status and all of its stderr, as a shell sees them.
    result = kbgraph_process(neo4j_target, "has space", "stats")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().startswith("kbgraph: error: invalid setting: namespace:")


def test_search_explains_its_results_and_prints_json(neo4j_target: Neo4jTarget, cli_namespace: str) -> None:
    assert kbgraph(neo4j_target, cli_namespace, "add", str(SAMPLES)).returncode == 0
    shown = kbgraph(neo4j_target, cli_namespace, "search", "return a delivered item for a refund", "-d", "retail",
                    "-k", "2", "--step", 'get_order_details {"order_id": "#W1"}')
    assert shown.returncode == 0, shown.stderr
    assert "#1 " in shown.stdout and "found by:" in shown.stdout and "coarse" in shown.stdout
    as_json = kbgraph(neo4j_target, cli_namespace, "search", "return a delivered item", "--json", "--set", "alpha=0.3")
    hits = json.loads(as_json.stdout)["hits"]
    assert len(hits) == 5 and hits[0]["breakdown"]["final"] == hits[0]["score"]
    refine = kbgraph(neo4j_target, cli_namespace, "refine",
                     '{"action": "find_user_by_email", "error": "UserNotFound: no user with that email"}', "--json")
    assert refine.returncode == 0, refine.stderr
    assert json.loads(refine.stdout)["experiences"]


@pytest.mark.parametrize(("args", "message"), [
    (["search", ""], "nothing to search for"),
    (["search", "x", "-k", "0"], "k: Input should be greater than or equal to 1"),
    (["search", "x", "--set", "alpha=nan"], "weights: alpha"),
    (["search", "x", "--set", "alpha"], "--set 'alpha': expected name=value"),
    (["search", "x", "--step", "get_order {not json"], "--step 1 (get_order): arguments: invalid JSON at column 2"),
    (["refine", "[1, 2]"], "step 1: must be a JSON object"),
    (["eval", "--queries", "/no/such.jsonl", "--qrels", "/no/such.jsonl"], "--queries /no/such.jsonl: no such file"),
])
def test_bad_search_arguments_are_one_line_errors(
    neo4j_target: Neo4jTarget, cli_namespace: str, args: list[str], message: str
) -> None:
    result = kbgraph(neo4j_target, cli_namespace, *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_namespace_is_an_error_and_never_the_configured_one(
    neo4j_target: Neo4jTarget, cli_namespace: str, blank: str
) -> None:
    # KBGRAPH_NAMESPACE names a namespace with data; `-n ""` once meant "that one" and deleted it.
    assert kbgraph(neo4j_target, cli_namespace, "add", str(SAMPLES)).returncode == 0
    for args in (["delete", "--all", "--yes", "-n", blank], ["stats", "-n", blank]):
        result = kbgraph(neo4j_target, cli_namespace, *args)
        assert result.returncode == 2, result.stderr
        assert "namespace" in result.stderr and "Traceback" not in result.stderr
    stats = json.loads(kbgraph(neo4j_target, cli_namespace, "stats", "--json").stdout)
    assert stats["experiences"] == 30


HOSTILE = "cancel\x1b]0;pwned\x07 order \x1b[31mred\x1b[0m \x9b2J [bold red]loud[/] [link=http://x]click[/link] \u202eevil"


def test_control_codes_and_markup_in_stored_text_never_reach_the_terminal_but_json_stays_exact(
    neo4j_target: Neo4jTarget, cli_namespace: str, tmp_path: Path
) -> None:
    record = {"id": "hostile-1", "problem": f"A customer wants to {HOSTILE}", "domain": f"retail {HOSTILE}",
              "steps": [{"action": "get_order_details", "text": f"look up {HOSTILE}"}],
              "failure_modes": [{"description": f"order not found {HOSTILE}", "recovery": f"retry {HOSTILE}"}]}
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert kbgraph(neo4j_target, cli_namespace, "add", str(path)).returncode == 0
    fed = kbgraph(neo4j_target, cli_namespace, "feedback", "-u", "hostile-1", "-o", "success", "--agent", f"bot {HOSTILE}")
    assert fed.returncode == 0, fed.stderr

    # Every command that prints stored free text for a person; `get` prints JSON. (`steps` prints
    # only action names, which the models restrict to identifiers.)
    for args in (["search", "customer wants to cancel an order"], ["get", "hostile-1"], ["stats"], ["agents"],
                 ["refine", '{"action": "get_order_details", "error": "order not found"}'],
                 ["cypher", "run", "experience", "-p", "id=hostile-1"], ["cypher", "run", "domains"]):
        shown = kbgraph(neo4j_target, cli_namespace, *args)
        assert shown.returncode == 0, shown.stderr
        assert not any(c in shown.stdout + shown.stderr for c in "\x1b\x07\x9b\u202e"), (args, shown.stdout)
        flat = re.sub(r"[\s│┃]", "", shown.stdout)  # a table wraps long cells over lines
        assert "\\x1b]0;pwned" in flat or "\\u001b]0;pwned" in flat, (args, shown.stdout)
        assert "[boldred]loud[/]" in flat, (args, shown.stdout)  # markup printed as written, not applied

    # `get` prints JSON: escaped (\u009b, \u202e) where JSON would leave a character raw, read back exact.
    exact = json.loads(kbgraph(neo4j_target, cli_namespace, "get", "hostile-1").stdout)
    assert exact["problem"] == f"A customer wants to {HOSTILE}"
    found = json.loads(kbgraph(neo4j_target, cli_namespace, "search", "cancel an order", "--json").stdout)
    assert found["hits"][0]["experience"]["problem"] == f"A customer wants to {HOSTILE}"


def test_a_parameter_beyond_64_bits_or_an_argument_that_is_not_utf8_is_a_one_line_error(
    neo4j_target: Neo4jTarget, cli_namespace: str
) -> None:
    huge = kbgraph(neo4j_target, cli_namespace, "cypher", "run", "top_by_utility", "-p", "limit=99999999999999999999")
    assert huge.returncode == 2 and "--param limit=" in huge.stderr and "64-bit" in huge.stderr, huge.stderr
    # A real process: the interpreter decodes the argument's bytes.
    undecodable = kbgraph_process(neo4j_target, cli_namespace, "search", b"\xff".decode("utf-8", "surrogateescape"))
    assert undecodable.returncode == 2 and "argument 2" in undecodable.stderr and "not valid UTF-8" in undecodable.stderr
    assert "Traceback" not in huge.stderr + undecodable.stderr


DEEP_LIST = "[" * 5000 + "]" * 5000  # deep enough for json.loads to hit Python's recursion limit


@pytest.mark.parametrize(("args", "message"), [
    (["search", "x", "--set", f"alpha={DEEP_LIST}"], "--set alpha: nested deeper than 64 levels"),
    (["search", "x", "--step", "get_order " + '{"a":' * 5000 + "1" + "}" * 5000], "--step 1 (get_order) arguments: nested deeper"),
    (["refine", '{"action": "a", "arguments": ' + DEEP_LIST + "}"], "step 1: nested deeper than 64 levels"),
    (["refine", '{"action": "a", "arguments": {"n": 99999999999999999999}}'], "step 1: arguments.n: 99999999999999999999 is outside"),
    (["feedback", "-u", "e-1", "--step-reward", f"e-1:1={DEEP_LIST}"], "--step-reward e-1:1: nested deeper"),
    (["feedback", "-u", "e-1", "--step-reward", "e-1:\u00b2=1"], "EXPERIENCE_ID:ORDER=REWARD"),  # "²".isdigit()
    # Past 4,300 digits int() refuses the text: an internal error (exit 70) before it was checked.
    (["feedback", "-u", "x", "-o", "success", "--step-reward", f"x:{'9' * 4301}=1"],
     "--step-reward x:ORDER: a number of 4,301 digits is not a step order (a whole number from 0 to 9,007,199,254,740,991)"),
    (["feedback", "-u", "x", "--step-reward", "x:9007199254740992=1"], "--step-reward x:ORDER: 9007199254740992 is not"),
    (["cypher", "run", "adaptation_paths", "-p", f"relation_types={DEEP_LIST}"], "nested deeper than 64 levels"),
    (["cypher", "run", "top_by_utility", "-p", "kb="], "--param kb: namespace: '' is not a namespace"),
    (["bench", "write", "-e", "-5", "--steps", "0"], "--experiences -5: must be between 1 and 1000000"),
    (["eval", "--k", "0"], "--k 0: must be between 1 and 1000"),
])
def test_bad_arguments_are_one_line_errors_before_connecting(
    neo4j_target: Neo4jTarget, args: list[str], message: str
) -> None:
    # Nothing to connect to: each is refused while reading its arguments.
    env = {**neo4j_target.env("unused"), "NEO4J_URI": "bolt://127.0.0.1:9", "KBGRAPH_CONNECT_TIMEOUT_S": "2"}
    done = in_process(env, *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr and "internal error" not in done.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["search", "x", "-k", "1e308"], "kbgraph search: Invalid value for '--k' / '-k': Input should be a valid integer"),
    (["search", "x", "--nope"], "kbgraph search: No such option: --nope"),
    (["nosuch"], "kbgraph: No such command 'nosuch'."),
    (["get"], "kbgraph get: Missing argument"),
])
def test_a_usage_error_is_one_line_naming_the_command_and_the_option(
    neo4j_target: Neo4jTarget, args: list[str], message: str
) -> None:
    # typer printed these as a box of usage, hint and a message wrapped at 80 columns.
    done = in_process({**neo4j_target.env("unused"), "NEO4J_URI": "bolt://127.0.0.1:9"}, *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"kbgraph: error: {message}") and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.rstrip().endswith(f"(see {message.split(':')[0]} --help)"), done.stderr


def test_without_a_command_the_help_is_shown_and_with_help_it_ends_well(neo4j_target: Neo4jTarget) -> None:
    bare = in_process(neo4j_target.env("unused"))
    assert bare.returncode == 2 and "Usage: kbgraph [OPTIONS] COMMAND [ARGS]..." in bare.stdout + bare.stderr
    group = in_process(neo4j_target.env("unused"), "server")
    assert group.returncode == 2 and "Usage: kbgraph server [OPTIONS] COMMAND" in group.stdout + group.stderr
    helped = in_process(neo4j_target.env("unused"), "search", "--help")
    assert helped.returncode == 0 and "Usage: kbgraph search [OPTIONS]" in helped.stdout


def test_a_report_or_query_file_that_cannot_be_read_or_written_is_one_clear_error(
    neo4j_target: Neo4jTarget, cli_namespace: str, tmp_path: Path
) -> None:
    (tmp_path / "latin1.cypher").write_bytes(b"// Caf\xe9?\nRETURN 1")
    unreadable = kbgraph(neo4j_target, cli_namespace, "cypher", "run", str(tmp_path / "latin1.cypher"))
    assert unreadable.returncode == 1 and "not UTF-8 text (byte 7 is 0xe9)" in unreadable.stderr, unreadable.stderr
    unwritable = kbgraph(neo4j_target, cli_namespace, "report", "-o", "/proc/version")
    assert unwritable.returncode == 1 and "cannot write the report to /proc/version" in unwritable.stderr, unwritable.stderr
    assert "internal error" not in unreadable.stderr + unwritable.stderr


@pytest.mark.parametrize("command", [["export"], ["report", "-o"]])
def test_export_and_report_refuse_a_symbolic_link_and_leave_it_as_it_was(
    neo4j_target: Neo4jTarget, cli_namespace: str, tmp_path: Path, command: list[str]
) -> None:
    # The file used to be renamed over the link, replacing it (and leaving what it pointed at).
    pointed = tmp_path / "elsewhere.txt"
    pointed.write_text("theirs\n")
    link = tmp_path / "out.link"
    link.symlink_to(pointed)
    done = kbgraph(neo4j_target, cli_namespace, *command, str(link))
    assert done.returncode == 2, done.stderr
    assert f"{link}: is a symbolic link (to {pointed})" in done.stderr and "Traceback" not in done.stderr
    assert link.is_symlink() and pointed.read_text() == "theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.txt", "out.link"]


def test_ingest_reads_standard_input_naming_its_lines(neo4j_target: Neo4jTarget, cli_namespace: str) -> None:
    run = {"id": "stdin-1", "domain": "airline", "task": "You want to cancel reservation ABC123.",
           "steps": [{"action": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}}],
           "outcome": {"success": True}}
    bad = json.dumps(run)[:-5]

    def ingest(text: str, *args: str) -> subprocess.CompletedProcess[str]:
        return kbgraph(neo4j_target, cli_namespace, "ingest", "-", *args, stdin=text)

    refused = ingest(json.dumps(run) + "\n" + bad + "\n")
    assert refused.returncode == 2 and "<stdin>:2: invalid JSON" in refused.stderr
    assert json.loads(kbgraph(neo4j_target, cli_namespace, "stats", "--json").stdout)["experiences"] == 0
    done = ingest(json.dumps(run) + "\n" + bad + "\n", "--skip-invalid", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["records_read"], report["records_rejected"], report["experiences_new"]) == (2, 1, 1)
    assert report["rejected"][0].startswith("<stdin>:2:")
    assert ingest("").returncode == 2


def test_the_ingest_report_shows_how_each_llm_stage_ended(capsys: pytest.CaptureFixture[str]) -> None:
    from kbgraph.cli import _print_ingest_report
    from kbgraph.ingest.report import IngestReport, LLMCounts

    report = IngestReport(llm={"abstractor": LLMCounts(calls=4, valid_first_try=1, repaired=1, retried=1, fell_back=1)})
    _print_ingest_report(report.model_dump())
    assert ("LLM abstractor: 4 calls, 1 valid at the first try, 1 repaired, 1 after a retry, "
            "1 fell back to the rules") in capsys.readouterr().out.replace("\n", " ")
    _print_ingest_report(IngestReport().model_dump())  # the rule-based path: no LLM line
    assert "LLM " not in capsys.readouterr().out
