"""Every example of the README and of the docs pages written with it is run, so the documentation
stays true.

How each kind of fenced block is checked:

- Every page is covered: the README and each docs/*.md, found by name (a new page is run too).
- ```python blocks run in order, one shared scope per page (a block may use names an earlier
  block of its page set), in a temporary working directory, with NEO4J_URI & co. pointing at the
  test server and KBGRAPH_NAMESPACE at a fresh namespace. A ```text block that directly follows a
  python block is what that block prints: the printed lines must match it line for line, where
  "…" stands for any text. Every python block runs: one that takes minutes (it builds and asks a
  local LLM) says so on the line before its fence, ``<!-- docs-test: extended: REASON -->`` (the
  reason is required), and runs, with its page's blocks before it, only with ``-m extended``.
- Paths into the shared data, written as a reader at the checkout's root types them
  (``../shared/data/…``), lead to the shared data from the test's working directory too.
- A page whose examples talk to a server (docs/http.md: ``kbgraph serve``) gets one for its test:
  the app ``kbgraph serve`` serves, with an API key, on a free port, in a thread of the test
  (PAGE_SERVERS; tests/kbgraph/http_api runs the command itself); docs/llm.md's example
  starts the machine's local LLM server itself: its test checks that it still serves afterwards,
  then stops it unless it ran before (EXTENDED_PAGE_SERVERS).
- ```cypher blocks run read-only (in a READ transaction) on a namespace holding the sample data of
  `./kb demo`; their `:param name => value` lines (Neo4j Browser syntax) are evaluated by Neo4j as
  `RETURN value` and passed as parameters; `$kb` is that namespace.
- ```bash / ```console lines (in a console block with `$ ` prompts, only the prompted lines;
  the others are what they print): each is either in RUN, and runs after the page's python blocks,
  in the page's order, against the test server (`./kb ARGS` as `kbgraph ARGS`, through the CLI's
  own run() in the test's process: tests/cli_in_process.py), or in NOT_RUN with the reason it is
  not (expensive, or standing for the reader's own file or server). A line in neither fails the
  test, so a new command cannot slip in unchecked.
- ```json blocks parse, and a trajectory among them validates as one.
- Relative links lead to files that exist, and `#anchors` to headings of the page they name.

Namespaces: the examples name the namespaces a reader would use ("demo", "my-agent", "team", …).
They never touch a reader's data here: each name is replaced, in the block's text before it runs,
by a namespace of the test: "demo" (and "my-agents", the MCP page's) by one namespace holding the
sample data of `./kb demo`, ingested once for the module; the others by fresh namespaces, deleted
afterwards. The MCP example's "/absolute/path/to/kbgraph/kb" becomes this checkout's `kb`.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Trajectory
from kbgraph.core.settings import Settings
from kbgraph.http_api import create_app
from kbgraph.llm.local_server import LocalLlamaServer
from tests.cli_in_process import run_kbgraph
from tests.conftest import SHARED_DATA, Neo4jTarget
from tests.kbgraph.http_api.test_http_api import serving
from tests.kbgraph.llm.test_local_llm import assert_still_serving

REPO = Path(__file__).resolve().parents[1]

#: The pages whose examples this file runs: the README first (its output is shown for the sample
#: data as `./kb demo` leaves it), then every page of docs/.
PAGES = ("README.md", *sorted(f"docs/{page.name}" for page in (REPO / "docs").glob("*.md")))
#: Pages linked from these before they exist (being written at the same time); nothing else may be missing.
PAGES_BEING_WRITTEN: set[str] = set()
#: The marker on the line before a python block's fence that runs it only with ``-m extended``, with its reason.
EXTENDED_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*extended:\s*(?P<reason>.*?)\s*-->\s*$")

#: Namespace names in the examples that stand for the sample data of `./kb demo`, per page ("*": all).
SAMPLE_DATA_NAMES = {"*": ("demo", "my-agents"), "docs/operations.md": ("my-agent",)}
#: Namespace names in the examples that get a fresh namespace of their own.
FRESH_NAMES = ("my-agent", "staging", "team", "team-a", "team-b", "airline-runs", "llm-demo", "default")
#: The MCP example's server command, as a reader would fill it in.
KB_SCRIPT_PLACEHOLDER = "/absolute/path/to/kbgraph/kb"

#: Shell lines run (cheap: a second or so each), matched on the line as written.
RUN = (
    r'^\./kb search "',
    r"^\./kb refine '",
    r"^\./kb cypher (list|show top_by_utility)$",
    r"^\./kb cypher run (top_by_utility|adaptation_paths|experience) -n demo ",
    r"^\./kb agents -n team",
    r"^\./kb steps issue_store_credit ",
    r"^\./kb stats$",
    r"^\./kb export my-agent\.jsonl -n my-agent$",
    r"^\./kb import my-agent\.jsonl -n staging --json$",
)
#: Shell lines deliberately not run, and why.
NOT_RUN = {
    r"^\./kb audit -n airline-runs( --json)?$": "audits the namespace the reader filled with the real runs (an ingest "
                                              "of minutes); tests/kbgraph/audit audits the real runs themselves",
    r"^\./kb demo$": "sets up and fills the reader's `demo` namespace; the module fixture runs the same ingest "
                     "of the same sample files",
    r"^(KBGRAPH_FUZZ_EXAMPLES=\d+ )?\./kb test\b": "the test suite itself (both lines: the better part of an hour on a busy machine)",
    r"^\./kb bench ": "benchmarks take minutes to half an hour; tests/kbgraph/test_bench_*.py run them small",
    r"^\./kb eval ": "ingests a corpus and runs every query next to four baselines (minutes); tests/search cover it",
    r"^\./kb ingest \.\./shared/data/": "the shared data: a minute for the trajectories; the real runs are "
                                        "ingested by tests/ingest (conftest's real_kb)",
    r"^\./kb ingest runs\.jsonl ": "runs.jsonl stands for a file of the reader's",
    r"^my_agent .*\| \./kb ingest -$": "my_agent stands for the reader's agent",
    r"^\./kb recluster$": "rebuilds every meta-concept of the namespace that the other examples here read",
    r"^\./kb verify candidates\.jsonl ": "candidates.jsonl stands for a file of the reader's (the Python example "
                                        "on that page stores the same kind of candidate with add_verified)",
    r"^\./kb cypher run \./my_question\.cypher ": "a query file of the reader's",
    r"^\$ \./kb cypher run \./oops\.cypher$": "the file is only sketched; the Python example above it prints "
                                              "the same refusal, checked by test_the_cli_refusal_matches",
    r"^pip install ": "installs into the reader's environment (the development environment has the extra)",
    r"^\./kb report ": "25–30 s each (UMAP compiles in a new process); tests/kbgraph/report/test_report.py covers it",
    r"^\./kb mcp\b": "a server that runs until its client leaves; the Python example on that page starts it "
                     "through the MCP SDK and calls its tools",
    r"^\./kb server (start|stop|status|reset-password)$": "acts on the machine's managed server, not the test's",
    r"^export NEO4J_URI=": "placeholders for the reader's server and credentials",
    r"^\$ kbgraph serve\b": "a server that runs until stopped; this file serves its app for docs/http.md's "
                           "Python examples (PAGE_SERVERS), and tests/kbgraph/http_api cover the command",
    r"^\$ export KBGRAPH_(URL|API_KEY)=": "the reader's server and key; PAGE_SERVERS sets both for the page",
    r"^(ID=\$\()?curl ": "the same calls as the page's Python examples, which run against the page's server",
    r"^\./kb llm local (start|stop)$": "builds and runs a local LLM server (minutes); tests/kbgraph/llm cover it",
    r"^export KBGRAPH_ASK_SPLITTER=llm": "a setting for the reader's shell, with an LLM endpoint; "
                                         "tests/search/test_asks_llm.py covers the splitter",
    r"^head -n 5 \.\./shared/data/real_runs/.* \| \./kb ingest - -n llm-demo": "the LLM path on the local server "
                                                                               "(minutes per run)",
    r"^\$ kbgraph ingest \.\./shared/data/real_runs/": "the shared data: a minute; tests/kbgraph/skills export "
                                                      "the real runs",
    r"^\$ kbgraph skills export ": "the Python examples of the page run the same export (kb.export_skills)",
    r"^(cp docker/|docker compose )": "needs a Docker engine (there is none here)",
    r"^cp -a ~/\.cache/kbgraph/neo4j/instance ": "copies the reader's managed server folder",
    r"^\./kb export - -n my-agent \| gzip ": "the export above, to standard output through the shell's gzip",
}


@dataclass(frozen=True)
class Block:
    page: str
    language: str
    text: str
    line: int  # 1-based line of the opening fence
    output: str | None = None  # the ```text block right after a python block
    extended: str | None = None  # why the block runs only with -m extended (its EXTENDED_MARKER), or None


def read_blocks(page: str) -> list[Block]:
    """The fenced blocks of a page (indented ones too, as inside a list item)."""
    lines = (REPO / page).read_text().splitlines()
    found: list[tuple[str, str, int, int]] = []  # language, text, first line, last line
    index = 0
    while index < len(lines):
        opening = re.match(r"^(\s*)```(\w*)\s*$", lines[index])
        if opening is None:
            index += 1
            continue
        indent, language, start = len(opening.group(1)), opening.group(2), index
        body: list[str] = []
        index += 1
        while not re.match(r"^\s*```\s*$", lines[index]):
            body.append(lines[index][indent:] if lines[index][:indent].strip() == "" else lines[index])
            index += 1
        found.append((language, "\n".join(body) + "\n", start, index))
        index += 1
    blocks: list[Block] = []
    for position, (language, text, start, end) in enumerate(found):
        if language == "text" and position and found[position - 1][0] == "python" \
                and all(not line.strip() for line in lines[found[position - 1][3] + 1:start]):
            continue  # an output, attached to its python block below
        output = None
        if language == "python" and position + 1 < len(found):
            following = found[position + 1]
            if following[0] == "text" and all(not line.strip() for line in lines[end + 1:following[2]]):
                output = following[1]
        blocks.append(Block(page, language, text, start + 1, output, extended_reason(page, lines, start)))
    return blocks


def extended_reason(page: str, lines: list[str], fence: int) -> str | None:
    """The reason given by an EXTENDED_MARKER on the non-blank line before the fence at ``fence``.
    There is no marker that keeps a block from running: every example runs, a slow one in the extended group."""
    before = next((line for line in reversed(lines[:fence]) if line.strip()), "")
    if "docs-test:" not in before:
        return None
    marker = EXTENDED_MARKER.match(before)
    assert marker and marker.group("reason"), (
        f"{page}:{fence}: write the marker as <!-- docs-test: extended: REASON -->, with the reason "
        "(every python block runs; a block so marked runs only with -m extended)")
    return marker.group("reason")


def shell_lines(block: Block) -> list[str]:
    """A bash/console block's commands, continuations joined, comments and blank lines dropped. In
    a console block with `$ ` prompts the prompted lines are the commands, the rest their output."""
    lines = [line for raw in logical_lines(block.text) if (line := raw_command(raw))]
    if block.language == "console" and any(line.startswith("$ ") for line in lines):
        return [line for line in lines if line.startswith("$ ")]
    return lines


def logical_lines(text: str) -> list[str]:
    """The shell's lines: a backslash-newline continues a line, and so does a quote left open (a
    JSON body written over several lines)."""
    lines: list[str] = []
    current, quote = "", None
    for raw in text.replace("\\\n", " ").splitlines():
        current = f"{current} {raw.strip()}" if current else raw
        escaped = False
        for index, char in enumerate(raw):
            if escaped:
                escaped = False
            elif char == "\\" and quote != "'":
                escaped = True
            elif quote:
                quote = None if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char == "#" and (index == 0 or raw[index - 1].isspace()):
                break  # a comment: its quotes are not the shell's
        if quote is None:
            lines.append(current)
            current = ""
    return [*lines, current] if current else lines


def raw_command(raw: str) -> str:
    """The line without its trailing comment (a # outside quotes), spaces collapsed at the ends."""
    quote = None
    for index, char in enumerate(raw):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or raw[index - 1].isspace()):
            return raw[:index].strip()
    return raw.strip()


def classify(line: str) -> str | None:
    """Says "run", or the reason a line is not run, or None when this file does not know the line."""
    if any(re.search(pattern, line) for pattern in RUN):
        return "run"
    for pattern, reason in NOT_RUN.items():
        if re.search(pattern, line):
            return reason
    return None


def output_matches(expected: str, printed: str) -> bool:
    """Line by line; "…" in the expected text stands for any text."""
    want, got = expected.rstrip("\n").splitlines(), printed.rstrip("\n").splitlines()
    if len(want) != len(got):
        return False
    return all(re.fullmatch(".*".join(re.escape(part) for part in w.rstrip().split("…")), g.rstrip())
               for w, g in zip(want, got))


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    anchors = set()
    in_fence = False
    for line in page.read_text().splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (match := re.match(r"^#{1,6}\s+(.*)$", line)):
            text = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


# -- the namespaces ------------------------------------------------------------------------------


@dataclass
class DocsWorld:
    target: Neo4jTarget
    driver: neo4j.Driver
    embedder: CachedEmbedder
    samples: str  # the namespace holding the sample data of ./kb demo
    names: dict[str, dict[str, str]] = field(default_factory=dict)

    def names_for(self, page: str) -> dict[str, str]:
        """Each namespace name the page's examples use → the test's namespace standing for it."""
        if page not in self.names:
            names = {name: self.samples for name in SAMPLE_DATA_NAMES["*"] + SAMPLE_DATA_NAMES.get(page, ())}
            for name in FRESH_NAMES:
                names.setdefault(name, f"docs-{name}-{uuid.uuid4().hex[:8]}")
            self.names[page] = names
        return self.names[page]

    def fresh(self) -> set[str]:
        return {namespace for names in self.names.values() for namespace in names.values()} - {self.samples}


def substitute(text: str, names: dict[str, str]) -> str:
    for name, namespace in names.items():
        text = text.replace(f'"{name}"', f'"{namespace}"').replace(f"'{name}'", f"'{namespace}'")
        text = re.sub(rf"(-n |--namespace ){re.escape(name)}(?=\s|$)", rf"\g<1>{namespace}", text)
    return text.replace(KB_SCRIPT_PLACEHOLDER, str(REPO / "kb")).replace("../shared/data/", f"{SHARED_DATA}/")


@pytest.fixture(scope="module")
def world(neo4j_target: Neo4jTarget, driver: neo4j.Driver, embedder: CachedEmbedder) -> Iterator[DocsWorld]:
    """The sample data of `./kb demo`, ingested as `./kb demo` does, into a namespace of the module."""
    samples = f"docs-demo-{uuid.uuid4().hex[:8]}"
    knowledge_base = KnowledgeBase(driver, embedder, namespace=samples, database=neo4j_target.database)
    folder = resources.files("kbgraph") / "samples"
    with resources.as_file(folder / "trajectories.jsonl") as trajectories, \
            resources.as_file(folder / "experiences.jsonl") as experiences, \
            resources.as_file(folder / "real_runs.jsonl") as real_runs:
        knowledge_base.ingest([trajectories, experiences, real_runs])
    docs = DocsWorld(neo4j_target, driver, embedder, samples)
    yield docs
    # Some 170 namespaces (most never written): the schema, applied above, is not applied again for each.
    for namespace in [samples, *docs.fresh()]:
        KnowledgeBase(driver, embedder, namespace=namespace, database=neo4j_target.database,
                      ensure_schema=False).clear()


@pytest.fixture
def page_environment(world: DocsWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                     request: pytest.FixtureRequest) -> Path:
    """What a reader's shell would hold: the test server's settings; a scratch working directory.
    ``KnowledgeBase.from_settings`` (and the async one) is handed the session's MiniLM (the embedder it would build, with
    the same on-disk cache, whose model is loaded already) instead of loading the model again per page."""
    for module in ("kbgraph.kb", "kbgraph.async_kb"):
        monkeypatch.setattr(f"{module}.embedder_from_settings", lambda settings: world.embedder)
    for name, value in world.target.env(world.samples).items():
        if name.startswith("NEO4J_"):
            monkeypatch.setenv(name, value)
    # Examples that name no namespace use the configured one: a fresh namespace of the page's.
    monkeypatch.setenv("KBGRAPH_NAMESPACE", world.names_for(request.node.callspec.params["page"])["default"])
    monkeypatch.delenv("KBGRAPH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@contextlib.contextmanager
def http_server(world: DocsWorld, names: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What `kbgraph serve -n NAMESPACE` serves, with an API key, on a free port (uvicorn in a
    thread, with the session's MiniLM: no second process loading the model), and the page's
    KBGRAPH_URL / KBGRAPH_API_KEY pointing at it, as docs/http.md has the reader set them."""
    key = uuid.uuid4().hex
    with KnowledgeBase(world.driver, world.embedder, namespace=names["default"], database=world.target.database) \
            as served, serving(create_app(served, key)) as url:
        monkeypatch.setenv("KBGRAPH_URL", url)
        monkeypatch.setenv("KBGRAPH_API_KEY", key)
        yield


@contextlib.contextmanager
def local_llm_left_as_found(world: DocsWorld, names: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """docs/llm.md's example starts the machine's local LLM server (kbgraph's cache; built the first
    time) and leaves it running, as a reader would; stopped afterwards unless it ran before. It must
    still be serving then: the counts the page prints ("…" where the model's answers decide) would
    not show that it died and every question fell back to the rules."""
    server = LocalLlamaServer.from_settings(Settings())
    ran_before = server.status().running
    try:
        yield
        assert_still_serving(server, "the example ran")
    finally:
        if not ran_before:
            server.stop()


#: Pages whose examples talk to a server the page tells the reader to start first.
PAGE_SERVERS = {"docs/http.md": http_server}
#: Pages whose extended examples start a server themselves.
EXTENDED_PAGE_SERVERS = {"docs/llm.md": local_llm_left_as_found}


# -- running the blocks --------------------------------------------------------------------------


def run_python(blocks: list[Block], names: dict[str, str], extended: bool = False) -> None:
    """Runs a page's python blocks in order in one scope, checking what they print; those marked
    extended only when ``extended``."""
    scope: dict[str, Any] = {"__name__": "__docs__"}
    try:
        for block in blocks:
            if block.extended and not extended:
                continue
            where = f"{block.page}:{block.line}"
            buffer = io.StringIO()
            try:
                with contextlib.redirect_stdout(buffer):
                    exec(compile(substitute(block.text, names), f"{where} (python block)", "exec"), scope)
            except Exception as exc:
                pytest.fail(f"the python block at {where} failed: {type(exc).__name__}: {exc}\n{block.text}")
            if block.output is not None:
                assert output_matches(substitute(block.output, names), buffer.getvalue()), (
                    f"the python block at {where} printed\n{buffer.getvalue()}\nbut the page shows\n{block.output}")
    finally:
        for value in scope.values():
            if isinstance(value, KnowledgeBase):
                value.close()


def run_cypher(world: DocsWorld, block: Block, names: dict[str, str]) -> None:
    where = f"{block.page}:{block.line}"
    parameters: dict[str, Any] = {"kb": world.samples}
    statement: list[str] = []
    with world.driver.session(database=world.target.database) as session:
        for line in substitute(block.text, names).splitlines():
            if match := re.match(r"^:param\s+(\w+)\s*=>\s*(.+)$", line.strip()):
                parameters[match.group(1)] = session.run(f"RETURN {match.group(2)} AS value").single(strict=True)["value"]
            else:
                statement.append(line)
        if "".join(statement).strip():
            rows = session.execute_read(lambda tx: list(tx.run("\n".join(statement), parameters)))
            assert rows, f"the cypher block at {where} returned no rows on the sample data"
    assert parameters["kb"] == world.samples, f"the cypher block at {where} reads another namespace than the sample data"


def run_command(world: DocsWorld, line: str, names: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``line`` (``./kb ARGS``) run as ``kbgraph ARGS`` in ``cwd``, with the test server's settings
    and the sample data as the configured namespace, as a reader's shell after `./kb demo` has them."""
    words = shlex.split(substitute(line, names))
    assert words[0] == "./kb", line
    done = run_kbgraph(world.target.env(world.samples), *words[1:], embedder=world.embedder, cwd=cwd)
    assert done.returncode == 0, f"`{line}` failed ({done.returncode}):\n{done.stderr}"
    assert "Traceback" not in done.stderr and done.stdout.strip(), f"`{line}`:\n{done.stdout}\n{done.stderr}"
    if "--json" in words:
        json.loads(done.stdout)
    return done


def runnable_commands(blocks: list[Block]) -> list[str]:
    """The page's shell lines in RUN, in the page's order (a line that needs another's result, as
    `./kb import` needs the file `./kb export` wrote, comes after it, as the reader types them)."""
    lines = [line for block in blocks if block.language in ("bash", "console") for line in shell_lines(block)]
    unknown = [line for line in lines if classify(line) is None]
    assert not unknown, f"shell lines neither run nor listed in NOT_RUN (say which, and why): {unknown}"
    return [line for line in lines if classify(line) == "run"]


# -- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_every_example_of_the_page_runs_and_prints_what_it_shows(
    page: str, world: DocsWorld, page_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = read_blocks(page)
    names = world.names_for(page)
    server = PAGE_SERVERS.get(page)
    commands = runnable_commands(blocks)  # an unknown shell line fails before anything runs
    with server(world, names, monkeypatch) if server else contextlib.nullcontext():
        run_python([block for block in blocks if block.language == "python"], names)
    for block in blocks:
        if block.language == "cypher":
            run_cypher(world, block, names)
        elif block.language == "json":
            value = json.loads(block.text)
            if isinstance(value, dict) and "task" in value:
                Trajectory.model_validate(value)
    # The shell lines on the page's own namespaces may read what the python blocks wrote.
    for line in commands:
        run_command(world, line, names, page_environment)


#: The pages with a python block marked extended: their test runs the page's python blocks again, all of them.
EXTENDED_PAGES = tuple(page for page in PAGES if any(block.extended for block in read_blocks(page)))


@pytest.mark.extended
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("page", EXTENDED_PAGES)
def test_the_extended_examples_of_the_page_run_and_print_what_they_show(
    page: str, world: DocsWorld, page_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = {**PAGE_SERVERS, **EXTENDED_PAGE_SERVERS}.get(page)
    with server(world, world.names_for(page), monkeypatch) if server else contextlib.nullcontext():
        run_python([block for block in read_blocks(page) if block.language == "python"], world.names_for(page),
                   extended=True)


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_leads_somewhere(page: str) -> None:
    text = (REPO / page).read_text()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (REPO / page).parent / path if path else REPO / page
        relative = file.resolve().relative_to(REPO).as_posix()
        if relative in PAGES_BEING_WRITTEN and not file.exists():
            continue
        assert file.exists(), f"{page} links to {target}, which does not exist"
        if anchor and file.suffix == ".md":
            assert anchor in heading_anchors(file), f"{page} links to {target}: no such heading in {relative}"


def test_the_index_lists_every_page() -> None:
    index = (REPO / "docs" / "index.md").read_text()
    pages = {path.name for path in (REPO / "docs").glob("*.md")} - {"index.md"}
    pages |= {Path(page).name for page in PAGES_BEING_WRITTEN}
    missing = sorted(page for page in pages if f"]({page})" not in index)
    assert not missing, f"docs/index.md does not list {missing}"


def test_the_cli_refusal_matches_the_python_one() -> None:
    """docs/cypher-and-browser.md shows `./kb cypher run ./oops.cypher` refusing a write; the Python
    example under it prints the refusal, which this file checks against Neo4j. The two must agree."""
    blocks = read_blocks("docs/cypher-and-browser.md")
    console = next(block for block in blocks if block.language == "console")
    shown = console.text.splitlines()[1].removeprefix("kbgraph: error: ")
    python = next(block for block in blocks if block.language == "python" and "WriteRefusedError" in block.text)
    assert python.output is not None and shown in python.output.splitlines()


def test_the_readme_keeps_the_two_commands_word_for_word() -> None:
    """A new user types these; .ci/run runs the second one."""
    readme = (REPO / "README.md").read_text()
    assert "```bash\n./kb demo    # 1." in readme and "\n./kb test    # 2." in readme
    assert (REPO / ".ci" / "run").read_text().rstrip().endswith("exec ./kb test")


def test_a_block_marked_extended_runs_only_in_the_extended_group_after_the_blocks_before_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nanswer = 42\n```\n\n"
                    "<!-- docs-test: extended: takes minutes -->\n```python\nprint(answer)\n```\n\n```text\n43\n```\n")
    first, second = read_blocks(str(page))
    assert (first.extended, second.extended) == (None, "takes minutes")
    run_python([first, second], {})  # the marked block is left out: it would print the wrong answer
    with pytest.raises(AssertionError, match=r"page\.md:6 printed\s+42\s+but the page shows\s+43"):
        run_python([first, second], {}, extended=True)


@pytest.mark.parametrize("marker", ["<!-- docs-test: extended -->", "<!-- docs-test: extended: -->",
                                    "<!-- docs-test: not run: needs an API key -->"])
def test_a_marker_without_a_reason_or_one_that_would_keep_a_block_from_running_is_refused(
    marker: str, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"{marker}\n```python\nprint(1)\n```\n")
    with pytest.raises(AssertionError, match="docs-test: extended: REASON"):
        read_blocks(str(page))
