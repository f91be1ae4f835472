"""The Agent Skills export: what a namespace learnt, written as skill folders an agent framework loads.

Pure parts (names, descriptions, front matter, the plan, the folder writer) are tested on their
own; the export itself runs against the real Neo4j on the real agent runs of
``../shared/data/real_runs``, ingested once for the module, and every folder it writes is checked
with the Agent Skills reference validator (``skills-ref``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import skills_ref
from skills_ref.parser import parse_frontmatter
from skills_ref.validator import validate_metadata

from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.core.shapes import operations
from kbgraph.ingest.concepts import operation_verbs
from kbgraph.kb import KnowledgeBase
from kbgraph.skills.export import DEFAULT_MIN_RUNS, SkillsExportReport
from kbgraph.skills.folder import MANIFEST_NAME, write_skill_folders
from kbgraph.skills.names import (
    MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, front_matter, name_problems, slug, truncate_description, unique_names,
)
from kbgraph.skills.plan import ConceptDoc, Member, group_workflows, plan_skills
from tests.cli_in_process import run_kbgraph
from tests.conftest import REAL_RUNS, Neo4jTarget

DOCS = Path(__file__).resolve().parents[3] / "docs" / "skills.md"
#: The namespace docs/skills.md exports (the test's own namespace stands in for it).
DOCS_NAMESPACE = "airline-runs"


def reference_name_errors(name: str) -> list[str]:
    """What skills-ref's validator says of a name (given a folder of the same name)."""
    return validate_metadata({"name": name, "description": "d"}, Path("/x") / name)


def skill_folders(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def file_bytes(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# -- names ----------------------------------------------------------------------------------------


def test_a_name_is_lowercase_ascii_words_joined_by_single_hyphens() -> None:
    assert slug("Update reservation flights") == "update-reservation-flights"
    assert slug("  cancel -- the__Order!! ") == "cancel-the-order"
    assert slug("airline look up, change nothing") == "airline-look-up-change-nothing"


def test_accented_letters_keep_their_base_letter_and_other_scripts_get_a_stable_name() -> None:
    assert slug("Réserver un vol — économie") == "reserver-un-vol-economie"
    assert slug("Straße") == "strae"  # ß has no decomposition: dropped, never a non-ASCII name
    japanese = slug("予約の変更")
    assert re.fullmatch(r"skill-[0-9a-f]{8}", japanese)
    assert slug("予約の変更") == japanese and slug("予約の取消") != japanese


def test_a_long_name_is_cut_to_64_characters_at_a_hyphen() -> None:
    name = slug("update reservation flights then cancel reservation then transfer to human agents again")
    assert len(name) <= MAX_NAME_CHARS
    assert name == "update-reservation-flights-then-cancel-reservation-then-transfer"
    unbroken = slug("x" * 100)
    assert unbroken == "x" * MAX_NAME_CHARS


@pytest.mark.parametrize("text", [
    "Update reservation flights", "予約", "Réserver", "-- leading and trailing --", "a" * 300, "2024", "yes",
    "émoji 🚀 rocket", "tab\tand\nnewline", "-", "", "UPPER lower 123",
])
def test_every_name_passes_the_reference_validator(text: str) -> None:
    name = slug(text)
    assert name_problems(name) == []
    assert reference_name_errors(name) == []


def test_colliding_names_get_numbered_suffixes_within_the_length_limit() -> None:
    long = "word " * 30
    names = unique_names(["Cancel order", "cancel-order", "CANCEL ORDER!", long, long, long])
    assert names[:3] == ["cancel-order", "cancel-order-2", "cancel-order-3"]
    assert len(set(names)) == len(names)
    assert all(len(n) <= MAX_NAME_CHARS and reference_name_errors(n) == [] for n in names)
    assert names[4].endswith("-2") and names[5].endswith("-3")


def test_a_name_that_breaks_the_rules_is_named_as_such() -> None:
    assert name_problems("Cancel") and name_problems("a--b") and name_problems("-a") and name_problems("")
    assert name_problems("x" * 65) and name_problems("réserver")


# -- descriptions and front matter ------------------------------------------------------------------


def test_a_short_description_is_kept_on_one_line() -> None:
    assert truncate_description("Cancel an order.\n  Use when\tasked.") == "Cancel an order. Use when asked."


def test_a_long_description_is_cut_at_a_word_within_1024_characters() -> None:
    text = " ".join(f"word{i}" for i in range(400))
    cut = truncate_description(text)
    assert len(cut) <= MAX_DESCRIPTION_CHARS and cut.endswith("…")
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " ", "cut between words"
    exact = "x" * MAX_DESCRIPTION_CHARS
    assert truncate_description(exact) == exact
    one_word = truncate_description("y" * 5000)
    assert len(one_word) == MAX_DESCRIPTION_CHARS and one_word.endswith("…")


def test_a_blank_description_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        truncate_description(" \n\t ")


@pytest.mark.parametrize("description", [
    'He said "no": cancel it --- now # not a comment', "yes", "null",
    "Größe — ünïcödé “quotes” {id} [a, b]",
    "line\u2028separator and \u0085 next line", "a: b\nc: d", "'single' and \\backslash\\",
])
def test_front_matter_reads_back_as_written_with_the_reference_parser(description: str) -> None:
    text = truncate_description(description)
    head = front_matter("a-skill", text, {"generated-by": "kbgraph", "kbgraph-namespace": "ns---x"})
    metadata, body = parse_frontmatter(head + "\n# Body\n")
    assert metadata == {"name": "a-skill", "description": text,
                        "metadata": {"generated-by": "kbgraph", "kbgraph-namespace": "ns---x"}}
    assert body == "# Body"
    assert validate_metadata(metadata) == []


def test_a_name_a_yaml_reader_could_take_for_a_number_or_a_boolean_is_quoted() -> None:
    for name in ("2024", "yes"):
        metadata, _ = parse_frontmatter(front_matter(name, "d", {}).replace("metadata:\n", "") + "body")
        assert metadata["name"] == name
    assert "name: cancel-order\n" in front_matter("cancel-order", "d", {})


# -- the plan (pure) --------------------------------------------------------------------------------


def member(id: str, ops: tuple[str, ...], runs: int, failed: int, *, task: str = "t", metas: tuple[str, ...] = (),
           domain: str = "shop") -> Member:
    sources = tuple(f"{id}-r{i}" for i in range(runs))
    return Member(id=id, problem=f"task {task}", domain=domain, actions=("get_order", *ops), operations=ops,
                  task_key=task, source_ids=sources, failed_source_ids=frozenset(sources[:failed]), meta_ids=metas)


def test_a_candidate_becomes_a_skill_when_it_worked_in_at_least_min_runs_runs() -> None:
    members = [member("a", ("cancel_order",), 3, 1, metas=("m1",)), member("b", ("return_item",), 2, 1),
               member("c", ("pay",), 4, 4)]
    concepts = [ConceptDoc(id="m1", name="cancel order", version=1)]
    plan = plan_skills(concepts, group_workflows(members), min_runs=2)
    assert [(s.name, s.kind, s.worked, s.runs) for s in plan.skills] == [("cancel-order", "concept", 2, 3)]
    assert {(c.title, c.worked) for c in plan.below_threshold} == {("Return item (shop)", 1), ("Pay (shop)", 0)}
    assert [s.name for s in plan_skills(concepts, group_workflows(members), min_runs=1).skills] == [
        "cancel-order", "shop-return-item"]
    assert plan_skills(concepts, group_workflows(members), min_runs=3).skills == []


def test_a_concept_skill_speaks_for_the_state_changes_stored_with_its_meta_concept() -> None:
    members = [member("a", ("cancel_order", "return_item"), 2, 0, metas=("m",))]
    # A meta-concept stored before its verbs were kept has them read from its name.
    [before] = plan_skills([ConceptDoc(id="m", name="cancel order", version=1)], group_workflows(members), 1).skills
    assert before.own_actions == {"get_order", "cancel_order"}
    stored = ConceptDoc(id="m", name="cancel order", version=1, verbs=frozenset({"return"}))
    assert stored.for_domain("shop").verbs == {"return"}
    [skill] = plan_skills([stored], group_workflows(members), 1).skills
    assert skill.own_actions == {"get_order", "return_item"}, "the stored verbs, not the name's words"


def test_a_workflow_inside_an_exported_concept_skill_is_not_exported_again() -> None:
    members = [member("a", ("cancel_order",), 3, 0, metas=("m1",)), member("b", ("cancel_order",), 2, 0)]
    plan = plan_skills([ConceptDoc(id="m1", name="cancel order", version=1)], group_workflows(members), min_runs=1)
    assert [s.name for s in plan.skills] == ["cancel-order"]
    assert plan.skills[0].worked == 5, "the way's evidence is every run of it, not only those that taught the concept"


def test_the_best_supported_candidate_keeps_a_contested_name() -> None:
    members = [member("a", ("cancel_order",), 2, 0, metas=("weak",), task="x"),
               member("b", ("refund",), 5, 0, metas=("strong",), task="y")]
    concepts = [ConceptDoc(id="weak", name="Cancel order", version=1), ConceptDoc(id="strong", name="cancel ORDER",
                                                                                   version=1)]
    plan = plan_skills(concepts, group_workflows(members), min_runs=1)
    assert {s.source_id: s.name for s in plan.skills} == {"strong": "cancel-order", "weak": "cancel-order-2"}


def test_a_concept_skill_shows_the_simplest_way_that_worked_first() -> None:
    members = [member("a", ("cancel_order", "refund"), 5, 0, metas=("m",), task="x"),
               member("b", ("cancel_order",), 2, 1, metas=("m",), task="y"),
               member("c", ("cancel_order",), 1, 1, metas=("m",), task="z")]
    skill = plan_skills([ConceptDoc(id="m", name="cancel order", version=1)], group_workflows(members), 1).skills[0]
    assert [w.operations for w in skill.ways] == [("cancel_order",), ("cancel_order", "refund")]
    assert (skill.worked, skill.runs, skill.tasks) == (6, 8, 3)


# -- the folder writer (file system only) -------------------------------------------------------------


def skill_files(name: str, namespace: str = "ns", body: str = "body") -> dict[str, str]:
    head = front_matter(name, f"{name} skill", {"generated-by": "kbgraph", "kbgraph-namespace": namespace})
    return {"SKILL.md": head + body + "\n", "references/examples.md": f"examples of {name}\n"}


def test_a_file_someone_added_to_a_skill_folder_survives_its_rewrite_and_its_removal(tmp_path: Path) -> None:
    write_skill_folders(tmp_path, "ns", {"one": skill_files("one"), "two": skill_files("two")})
    (tmp_path / "one" / "my-notes.md").write_text("mine")
    (tmp_path / "two" / "references" / "extra.txt").write_text("also mine")
    outcome = write_skill_folders(tmp_path, "ns", {"one": skill_files("one", body="new body")})
    assert (outcome.written, outcome.removed) == (["one"], ["two"])
    assert (tmp_path / "one" / "my-notes.md").read_text() == "mine"
    assert "new body" in (tmp_path / "one" / "SKILL.md").read_text()
    assert file_bytes(tmp_path / "two") == {"references/extra.txt": b"also mine"}, "only kbgraph's files went"
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert manifest["namespaces"]["ns"]["skills"] == {"one": ["SKILL.md", "references/examples.md"]}


def test_what_the_export_writes_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    # As export and report write theirs (0600); the skills were 0644 in 0755 folders.
    created = tmp_path / "new-skills"
    existing = tmp_path / "existing"
    existing.mkdir(mode=0o755)
    (existing / "users-notes.md").write_text("mine")
    (existing / "users-notes.md").chmod(0o644)
    for target in (created, existing):
        write_skill_folders(target, "ns", {"one": skill_files("one")})
        files = [p for p in target.rglob("*") if p.is_file() and p.name != "users-notes.md"]
        folders = [p for p in target.rglob("*") if p.is_dir()]
        assert files and {oct(p.stat().st_mode & 0o777) for p in files} == {"0o600"}, target
        assert folders and {oct(p.stat().st_mode & 0o777) for p in folders} == {"0o700"}, target
    assert created.stat().st_mode & 0o777 == 0o700  # created by the export: its own too
    assert existing.stat().st_mode & 0o777 == 0o755 and (existing / "users-notes.md").stat().st_mode & 0o777 == 0o644


def test_another_namespaces_skill_or_a_users_folder_under_a_skills_name_is_refused(tmp_path: Path) -> None:
    write_skill_folders(tmp_path, "other", {"shared-name": skill_files("shared-name", "other")})
    (tmp_path / "users-skill").mkdir()
    (tmp_path / "users-skill" / "SKILL.md").write_text("---\nname: users-skill\ndescription: mine\n---\n")
    before = file_bytes(tmp_path)
    with pytest.raises(InvalidInputError) as refused:
        write_skill_folders(tmp_path, "ns", {"shared-name": skill_files("shared-name"),
                                             "users-skill": skill_files("users-skill"), "new": skill_files("new")})
    message = str(refused.value)
    assert "nothing was written" in message
    assert "shared-name: already exists and holds the skills exported from namespace 'other'" in message
    assert "users-skill: already exists and holds something kbgraph did not write" in message
    assert file_bytes(tmp_path) == before and not (tmp_path / "new").exists()


def test_a_folder_name_or_file_path_that_would_leave_the_target_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError) as refused:
        write_skill_folders(tmp_path / "skills", "ns", {"../escape": skill_files("x"),
                                                        "ok": {**skill_files("ok"), "../../outside.md": "x"}})
    assert "skills: name: '../escape'" in str(refused.value)
    assert "skills: ok: '../../outside.md' is not a path inside the skill's folder" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_manifest_kbgraph_cannot_read_is_refused_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(InvalidInputError, match="not a manifest kbgraph can read"):
        write_skill_folders(tmp_path, "ns", {"one": skill_files("one")})
    assert (tmp_path / MANIFEST_NAME).read_text() == "{not json" and not (tmp_path / "one").exists()


def test_a_file_system_error_midway_leaves_the_folder_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "skills"
    write_skill_folders(target, "ns", {"one": skill_files("one"), "two": skill_files("two")})
    before = file_bytes(target)
    real_rename = os.rename
    calls = {"n": 0}

    def failing_rename(source: Any, destination: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:  # after the stale folder and the first changed one moved out
            raise OSError(28, "No space left on device", str(destination))
        real_rename(source, destination)

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(KbgraphError, match="No space left on device.*left as it was"):
        write_skill_folders(target, "ns", {"one": skill_files("one", body="changed"), "three": skill_files("three")})
    monkeypatch.undo()
    assert file_bytes(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["skills"], "no staging folder left behind"


# -- the export of real agent runs (real Neo4j) --------------------------------------------------------


@pytest.fixture(scope="module")
def runs_kb(real_runs_read_only: KnowledgeBase) -> KnowledgeBase:
    """``../shared/data/real_runs``, ingested once for the module (tests/conftest.py): exporting only reads it."""
    return real_runs_read_only


@pytest.fixture(scope="module")
def exported(runs_kb: KnowledgeBase, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SkillsExportReport]:
    directory = tmp_path_factory.mktemp("export") / "skills"
    return directory, runs_kb.export_skills(directory)


def test_every_exported_folder_passes_the_reference_validator(exported: tuple[Path, SkillsExportReport]) -> None:
    directory, report = exported
    folders = skill_folders(directory)
    assert [f.name for f in folders] == [s.name for s in report.skills] and len(folders) >= 3
    for folder in folders:
        assert skills_ref.validate(folder) == [], folder.name
        properties = skills_ref.read_properties(folder)
        assert properties.name == folder.name
        assert 0 < len(properties.description) <= MAX_DESCRIPTION_CHARS and "Use when" in properties.description
        assert properties.metadata["generated-by"] == "kbgraph"
        assert properties.metadata["kbgraph-namespace"] == report.namespace
        body = (folder / "SKILL.md").read_text(encoding="utf-8")
        for heading in ("## When to use", "## Preconditions", "## Steps", "## Pitfalls and recoveries", "## Evidence"):
            assert f"\n{heading}\n" in body, f"{folder.name} has no {heading}"
        skill = next(s for s in report.skills if s.name == folder.name)
        assert f"worked in {skill.worked} of {skill.runs} runs" in body
        assert sorted(file_bytes(folder)) == skill.files
    assert sorted(p.name for p in directory.iterdir()) == sorted([MANIFEST_NAME, *(f.name for f in folders)])


def test_pitfalls_carry_the_recoveries_kbgraph_learnt(exported: tuple[Path, SkillsExportReport]) -> None:
    directory, _ = exported
    body = (directory / "update-reservation-flights" / "SKILL.md").read_text(encoding="utf-8")
    pitfall = next(line for line in body.splitlines() if "fails with “payment method not found”" in line)
    # The runs' outcome is the headline, what the runs that reached their goal did next follows, and
    # that the call went through is the second fact.
    assert re.search(r"after it, \d+ of \d+ runs reached their goal \(the next call went through \d+ of \d+ times\)",
                     pitfall)
    assert "What a run that reached its goal did next: retried update reservation flights with payment_id" in pitfall
    assert "Before update reservation flights, get reservation details. (" in body
    examples = (directory / "update-reservation-flights" / "references" / "examples.md").read_text(encoding="utf-8")
    assert "## Runs that worked" in examples and "`update_reservation_flights` —" in examples


def test_a_skills_evidence_counts_the_runs_in_the_data(exported: tuple[Path, SkillsExportReport]) -> None:
    # The look-up-only workflow, counted straight from the file: runs that changed nothing.
    runs = [json.loads(line) for path in sorted(REAL_RUNS.glob("*.jsonl")) for line in path.open()]
    lookups = [r for r in runs if not operations([s["action"] for s in r["steps"]])]
    _, report = exported
    skill = next(s for s in report.skills if s.name == "airline-look-up-change-nothing")
    assert (skill.runs, skill.worked) == (len(lookups), sum(r["outcome"]["success"] for r in lookups))


def test_a_meta_concept_is_stored_with_the_state_changes_its_operation_makes(runs_kb: KnowledgeBase) -> None:
    rows = runs_kb.gateway.read("skills_meta_concepts", kb=runs_kb.namespace)
    assert rows and all(row["verbs"] == operation_verbs(row["name"]) for row in rows)
    assert {"cancel"} <= {verb for row in rows for verb in row["verbs"]}


def test_the_threshold_decides_what_is_exported(runs_kb: KnowledgeBase, tmp_path: Path) -> None:
    assert DEFAULT_MIN_RUNS == 2
    reports = {n: runs_kb.export_skills(tmp_path / f"min-{n}", min_runs=n) for n in (1, 2, 5, 1_000_000)}
    for n, report in reports.items():
        assert all(s.worked >= n for s in report.skills), n
        assert all(c.worked < n for c in report.below_threshold), n
        assert [f.name for f in skill_folders(tmp_path / f"min-{n}")] == [s.name for s in report.skills]
    names = {n: {s.name for s in report.skills} for n, report in reports.items()}
    assert names[1] >= names[2] > names[5] and names[5]
    assert reports[1_000_000].skills == []
    assert sorted(p.name for p in (tmp_path / "min-1000000").iterdir()) == [MANIFEST_NAME]


def test_uses_agents_report_through_feedback_count_as_runs(kb: KnowledgeBase, tmp_path: Path) -> None:
    written = kb.add_experiences([{
        "problem": "Refund a damaged item", "goal": "refund issued", "domain": "shop",
        "steps": [{"action": "get_order", "text": "get the order"}, {"action": "refund_item", "text": "refund it"}],
    }])
    first = kb.export_skills(tmp_path / "skills")
    assert (first.skills, first.below_threshold) == ([], []), "a ready-made experience stands for no run"

    for outcome in (True, True, False):
        kb.record_feedback(retrieved=written.ids, used=written.ids, outcome=outcome)
    report = kb.export_skills(tmp_path / "skills")
    assert [(s.name, s.kind, s.worked, s.runs) for s in report.skills] == [("shop-refund-item", "workflow", 2, 3)]
    body = (tmp_path / "skills" / "shop-refund-item" / "SKILL.md").read_text(encoding="utf-8")
    assert "worked in 2 of 3 runs over 1 task" in body
    assert "1. `get_order()`\n2. `refund_item()` — a state change" in body
    assert skills_ref.validate(tmp_path / "skills" / "shop-refund-item") == []


def test_re_export_is_idempotent_removes_stale_folders_and_keeps_a_users_files(
    runs_kb: KnowledgeBase, tmp_path: Path
) -> None:
    directory = tmp_path / "skills"
    first = runs_kb.export_skills(directory)
    written = file_bytes(directory)
    stamps = {p: p.stat().st_mtime_ns for p in directory.rglob("*")}

    again = runs_kb.export_skills(directory)
    assert [s.status for s in again.skills] == ["unchanged"] * len(first.skills) and again.removed == []
    assert file_bytes(directory) == written
    assert {p: p.stat().st_mtime_ns for p in directory.rglob("*")} == stamps, "nothing was rewritten"

    (directory / "README.md").write_text("my own notes")
    (directory / "my-skill").mkdir()
    (directory / "my-skill" / "SKILL.md").write_text("---\nname: my-skill\ndescription: Mine.\n---\nMine.\n")
    fewer = runs_kb.export_skills(directory, min_runs=5)  # a higher threshold: some skills go
    stale = sorted({s.name for s in first.skills} - {s.name for s in fewer.skills})
    assert stale and fewer.removed == stale
    assert [f.name for f in skill_folders(directory)] == sorted([*(s.name for s in fewer.skills), "my-skill"])
    assert (directory / "README.md").read_text() == "my own notes"
    assert (directory / "my-skill" / "SKILL.md").read_text().endswith("Mine.\n")

    back = runs_kb.export_skills(directory)
    assert sorted(s.name for s in back.skills if s.status == "written") == stale
    ours = {path: data for path, data in file_bytes(directory).items() if not path.startswith(("README", "my-skill"))}
    assert ours == written, "the same files, byte for byte"


def test_a_target_that_is_a_file_or_not_writable_is_refused_and_nothing_is_written(
    runs_kb: KnowledgeBase, tmp_path: Path
) -> None:
    a_file = tmp_path / "skills.txt"
    a_file.write_text("not a folder")
    with pytest.raises(InvalidInputError, match=r"skills\.txt: is a file, not a folder"):
        runs_kb.export_skills(a_file)
    assert a_file.read_text() == "not a folder"
    with pytest.raises(InvalidInputError, match="does not exist"):
        runs_kb.export_skills(tmp_path / "missing" / "skills")
    for bad in (0, -3, True, "2", 2.5):
        with pytest.raises(InvalidInputError, match="min_runs: must be a whole number"):
            runs_kb.export_skills(tmp_path / "ok", min_runs=bad)  # type: ignore[arg-type]
    assert not (tmp_path / "ok").exists()

    locked = tmp_path / "locked"
    locked.mkdir()
    with unwritable(locked):
        with pytest.raises(InvalidInputError, match="locked: folder is not writable"):
            runs_kb.export_skills(locked)
    assert list(locked.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locked", "skills.txt"], "no staging folder left"


class unwritable:  # noqa: N801 - used as a context manager, like a function
    """Makes a folder unwritable for this process: by its mode, and — for root, whom modes do not
    stop — by the immutable attribute. Skips the test where neither works."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.immutable = False

    def __enter__(self) -> None:
        self.folder.chmod(0o555)
        if os.access(self.folder, os.W_OK) and shutil.which("chattr"):
            self.immutable = subprocess.run(["chattr", "+i", str(self.folder)], capture_output=True).returncode == 0
        if os.access(self.folder, os.W_OK):
            self.__exit__()
            pytest.skip("cannot make a folder unwritable here (root without chattr)")

    def __exit__(self, *_: object) -> None:
        if self.immutable:
            subprocess.run(["chattr", "-i", str(self.folder)], check=True)
        self.folder.chmod(0o755)


def kbgraph_cli(target: Neo4jTarget, namespace: str, embedder: CachedEmbedder, *args: str
                ) -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` in this process (tests/cli_in_process.py), sharing the session's MiniLM."""
    return run_kbgraph(target.env(namespace), *args, embedder=embedder)


def test_the_cli_exports_and_prints_json(runs_kb: KnowledgeBase, neo4j_target: Neo4jTarget, embedder: CachedEmbedder,
                                         tmp_path: Path) -> None:
    done = kbgraph_cli(neo4j_target, runs_kb.namespace, embedder, "skills", "export", str(tmp_path / "skills"),
                       "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["namespace"] == runs_kb.namespace and report["min_runs"] == DEFAULT_MIN_RUNS
    assert [s["name"] for s in report["skills"]] == [f.name for f in skill_folders(tmp_path / "skills")]
    assert all(s["status"] == "written" and s["worked"] >= DEFAULT_MIN_RUNS for s in report["skills"])

    again = kbgraph_cli(neo4j_target, runs_kb.namespace, embedder, "skills", "export", str(tmp_path / "skills"),
                        "--min-runs", "3")
    assert again.returncode == 0, again.stderr
    assert "threshold: worked in at least 3 runs" in again.stdout


def test_the_cli_refuses_bad_input_in_one_line_without_a_traceback(
    neo4j_target: Neo4jTarget, namespace: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    a_file = tmp_path / "file.md"
    a_file.write_text("x")
    for args, message in [
        ((str(a_file),), f"{a_file}: is a file, not a folder"),
        ((str(tmp_path / "ok"), "--min-runs", "0"), "min_runs: must be a whole number from 1 up, not 0"),
        ((str(tmp_path / "no" / "such"),), "does not exist"),
    ]:
        done = kbgraph_cli(neo4j_target, namespace, embedder, "skills", "export", *args)
        assert done.returncode == 2, done.stderr
        assert "kbgraph: error:" in done.stderr and message in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.md"]


# -- the documentation ----------------------------------------------------------------------------------


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", DOCS.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)


def test_every_python_example_of_the_docs_runs(runs_kb: KnowledgeBase, tmp_path: Path, neo4j_target: Neo4jTarget,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = code_blocks("python")
    assert len(blocks) >= 2
    # The page opens its own knowledge base on the demo's namespace and writes to ./skills, as a
    # reader would: here that namespace is the real runs' of this test, and ./skills is tmp_path's.
    for name, value in neo4j_target.env(runs_kb.namespace).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {"__name__": "docs_skills"}
    for index, block in enumerate(blocks):
        block = block.replace('namespace="demo"', f'namespace="{runs_kb.namespace}"')
        try:
            exec(compile(block, f"docs/skills.md python block {index + 1}", "exec"), scope)
        except Exception as exc:
            pytest.fail(f"python block {index + 1} of docs/skills.md failed: {type(exc).__name__}: {exc}\n{block}")
    assert skill_folders(tmp_path / "skills")


def test_the_docs_show_the_export_of_real_runs_as_it_is(exported: tuple[Path, SkillsExportReport]) -> None:
    """docs/skills.md lists the skills of ../shared/data/real_runs and shows one SKILL.md in full;
    when ingestion changes, regenerate them with the commands the page gives."""
    directory, report = exported
    text = DOCS.read_text(encoding="utf-8")
    listed = re.search(r"^```text\n(skills/\n.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert listed, "docs/skills.md has no ```text block with the export's folder tree"
    tree_names = re.findall(r"^[├└]── ([a-z0-9-]+)/$", listed.group(1), flags=re.MULTILINE)
    assert tree_names == [s.name for s in report.skills]
    assert f"give **{len(report.skills)} skills** at the default threshold" in text
    shown = re.search(r"^```markdown\n(---\nname: ([a-z0-9-]+)\n.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert shown, "docs/skills.md shows no SKILL.md"
    actual = (directory / shown.group(2) / "SKILL.md").read_text(encoding="utf-8")
    assert shown.group(1) == actual.replace(report.namespace, DOCS_NAMESPACE), (
        "the SKILL.md in docs/skills.md differs from what the export writes now")
