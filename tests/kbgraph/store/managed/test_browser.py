"""Neo4j Browser on the managed server: kbgraph's stylesheet and guide are served next to it and
loaded on every connect, and a real headless Chromium logs in and draws the memory as a styled graph."""

from __future__ import annotations

import json
import re
import shutil
import socket
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import neo4j
import pytest
from pydantic import ValidationError
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from kbgraph.store.managed.browser.asset_process import BrowserAssetServer
from kbgraph.store.managed.browser.assets import GUIDE_FILE, STYLE_FILE, BrowserAssets
from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import ManagedServerError
from kbgraph.kb import KnowledgeBase
from kbgraph.store.managed.server import ManagedNeo4j, configured_assets_port, free_port
from kbgraph.core.settings import Settings
from kbgraph.store.managed.lines import DEFAULT_LINE
from tests.class_data import ClassDataArchive

ROOT = Path(__file__).resolve().parents[4]
SAMPLES = ROOT / "kbgraph" / "samples" / "experiences.jsonl"
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


# -- what the Browser is given ---------------------------------------------------------------------


def parse_grass(text: str) -> dict[str, dict[str, str]]:
    """GraSS read the way Neo4j Browser 5 reads it (``parseGrass``): ``selector { key: value; … }``,
    quotes dropped. Its parser knows no comments and no colon inside a value."""
    style: dict[str, str] = {}
    name, body, in_block, in_quote = "", "", False, False
    for char in text:
        if char in "'\"":
            in_quote = not in_quote
        elif char == "{" and not in_quote:
            assert not in_block, f"nested block in {name}"
            in_block = True
        elif char == "}" and not in_quote:
            style[name], name, body, in_block = body, "", "", False
        elif in_block:
            body += char
        elif not char.isspace():
            name += char
    assert not name and not in_block and not in_quote, f"unfinished text at the end: {name!r}"
    parsed: dict[str, dict[str, str]] = {}
    for selector, declarations in style.items():
        assert re.fullmatch(r"(node|relationship)(\.\w+)?", selector), f"not a GraSS selector: {selector!r}"
        pairs = [part.split(":") for part in declarations.split(";") if part.strip()]
        assert all(len(pair) == 2 for pair in pairs), f"{selector}: every property is `key: value`"
        parsed[selector] = {key.strip(): value.strip() for key, value in pairs}
    return parsed


def written_labels_and_types() -> tuple[set[str], set[str]]:
    """Every node label and relationship type kbgraph's Cypher mentions."""
    text = "\n".join(path.read_text() for path in (ROOT / "cypher").rglob("*.cypher"))
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
    labels = set(re.findall(r"\(\w*:([A-Z]\w*)", text))
    types = {name for group in re.findall(r"\[\w*:([A-Z_|]+)", text) for name in group.split("|") if name}
    return labels, types


def test_the_stylesheet_gives_every_label_a_colour_size_and_caption_and_every_relationship_a_caption() -> None:
    style = parse_grass(BrowserAssets("http://127.0.0.1:7475").render(STYLE_FILE))
    labels, types = written_labels_and_types()
    assert {"Experience", "Step", "FailureMode", "Domain", "MetaConcept", "Agent"} <= labels
    assert {"ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE", "HAS_STEP"} <= types
    for label in labels:
        node = style.get(f"node.{label}")
        assert node is not None, f"no style for label {label}"
        assert re.fullmatch(r"#[0-9A-F]{6}", node["color"]) and node["diameter"].endswith("px")
        assert re.fullmatch(r"\{\w+\}", node["caption"]), f"{label} is captioned by one of its properties"
    for rel_type in types:
        assert style[f"relationship.{rel_type}"]["caption"] == "<type>", rel_type
    colours = {style[f"node.{label}"]["color"] for label in ("Experience", "Step", "FailureMode", "Domain",
                                                              "MetaConcept", "Agent")}
    assert len(colours) == 6, "the main labels are told apart by colour"
    assert style["node.Experience"]["caption"] == "{problem}" and style["node.Step"]["caption"] == "{action}"


def guide_queries(html: str) -> list[str]:
    return [re.sub(r"&gt;", ">", block).strip() for block in re.findall(r'<pre class="[^"]*runnable[^"]*">(.*?)</pre>',
                                                                          html, flags=re.S)]


def test_the_guide_is_browser_slides_that_link_back_to_the_served_files() -> None:
    assets = BrowserAssets("http://127.0.0.1:7475")
    guide = assets.render(GUIDE_FILE)
    assert guide.lstrip().startswith('<article class="guide">')
    assert len(re.findall(r"<slide\b", guide)) >= 5
    assert "<script" not in guide and "@@" not in guide
    assert f'data-exec="style {assets.style_url}"' in guide and f'data-exec="play {assets.guide_url}"' in guide
    assert ':param kb => "demo"' in guide_queries(guide)


def test_every_query_in_the_guide_runs_and_stays_in_the_chosen_namespace(driver: neo4j.Driver, namespace: str) -> None:
    queries = [q for q in guide_queries(BrowserAssets("http://x").render(GUIDE_FILE)) if not q.startswith(":")]
    assert len(queries) >= 8
    for text in queries:
        assert re.match(r"MATCH \(\w+:\w+ \{kb: \$kb\b", text), f"not anchored in the namespace: {text}"
        records, _, _ = driver.execute_query(text, kb=namespace)  # an empty namespace: valid, and no rows
        assert records == [], text


def test_the_server_config_makes_the_browser_apply_the_style_and_play_the_guide_on_connect(tmp_path: Path) -> None:
    server = ManagedNeo4j(home=tmp_path, cache_dir=tmp_path, bolt_port=17687, http_port=17474)
    assets = BrowserAssets("http://127.0.0.1:17475")
    config = dict(line.split("=", 1) for line in server.config_text(assets).splitlines()
                  if "=" in line and not line.startswith("#"))
    assert config["browser.post_connect_cmd"] == (
        "style http://127.0.0.1:17475/kbgraph.grass; play http://127.0.0.1:17475/guide.html")
    assert set(config["browser.remote_content_hostname_whitelist"].split(",")) >= {"127.0.0.1", "localhost"}
    assert config["client.allow_telemetry"] == "false"
    assert "browser.post_connect_cmd" not in server.config_text()  # no asset server, nothing to load


def test_the_assets_port_comes_from_the_environment_with_a_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBGRAPH_MANAGED_ASSETS_PORT", raising=False)
    assert configured_assets_port(Settings()) == 7475
    monkeypatch.setenv("KBGRAPH_MANAGED_ASSETS_PORT", "17475")
    assert configured_assets_port(Settings()) == 17475
    monkeypatch.setenv("KBGRAPH_MANAGED_ASSETS_PORT", "0")
    assert configured_assets_port(Settings()) == 0
    monkeypatch.setenv("KBGRAPH_MANAGED_ASSETS_PORT", "browser")
    with pytest.raises((ManagedServerError, ValidationError), match="(?i)managed_assets_port"):
        configured_assets_port(Settings())


# -- the asset server ------------------------------------------------------------------------------------


def http(method: str, url: str, **headers: str) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, ""


def port_answers(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_the_asset_server_serves_its_files_to_any_origin_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "password").write_text("secret")
    server = BrowserAssetServer(tmp_path / "instance")
    assets = server.start(free_port())
    try:
        assert assets is not None and server.running() == assets
        origin = "http://127.0.0.1:7474"
        status, headers, body = http("GET", assets.style_url, Origin=origin)
        assert status == 200 and headers["access-control-allow-origin"] == "*"
        assert parse_grass(body)["node.Experience"]["caption"] == "{problem}"
        # The Browser fetches guides with Pragma and Cache-Control headers: a pre-flighted request.
        status, headers, _ = http("OPTIONS", assets.guide_url, Origin=origin, **{
            "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "pragma,cache-control"})
        assert status == 204 and headers["access-control-allow-headers"] == "*"
        status, headers, body = http("GET", assets.guide_url, Origin=origin, Pragma="no-cache")
        assert status == 200 and headers["content-type"].startswith("text/html") and assets.style_url in body
        assert http("GET", assets.base_url + "/")[0] == 404  # no listing
        assert http("GET", assets.base_url + "/../password")[0] == 404
        assert http("GET", assets.base_url + "/%2e%2e/password")[0] == 404
        # A NUL in the path once closed the connection without an answer; the server lives on.
        assert http("GET", assets.base_url + "/kbgraph%00.grass")[0] == 404
        assert http("GET", assets.style_url)[0] == 200
    finally:
        assert server.stop()
    assert server.running() is None and not server.stop()
    assert not port_answers(int(assets.base_url.rsplit(":", 1)[1]))


def test_a_taken_port_moves_the_assets_to_a_free_one_and_says_so(tmp_path: Path) -> None:
    said: list[str] = []
    server = BrowserAssetServer(tmp_path, say=said.append)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assets = server.start(taken)
        try:
            assert assets is not None and not assets.base_url.endswith(f":{taken}")
            assert http("GET", assets.style_url)[0] == 200
            assert f"port {taken} is in use" in said[0] and "KBGRAPH_MANAGED_ASSETS_PORT" in said[0]
            reserved = free_port()  # Neo4j's own ports are never taken for the assets, even when free
            again = server.start(reserved, reserved=(reserved,))
            assert again is not None and not again.base_url.endswith(f":{reserved}")
            assert "one of Neo4j's own ports" in said[1]
        finally:
            server.stop()


def test_an_asset_server_that_died_comes_back_on_the_same_port(tmp_path: Path) -> None:
    server = BrowserAssetServer(tmp_path)
    first = server.start(free_port())
    assert first is not None
    try:
        server.stop()  # as if it had been killed while Neo4j kept running with its port in neo4j.conf
        assert server.ensure_running() == first and http("GET", first.guide_url)[0] == 200
    finally:
        server.stop()


# -- the managed server in a real browser ----------------------------------------------------------------


@dataclass
class BrowserTarget:
    server: ManagedNeo4j
    taken_assets_port: int


@pytest.fixture(scope="module")
def managed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserTarget]:
    """A throw-away managed Neo4j of its own (the session's server may not be a managed one), started
    while its preferred assets port is taken — as when another kbgraph checkout already runs one."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        server = ManagedNeo4j(
            home=tmp_path_factory.mktemp("browser-neo4j"), cache_dir=Settings().cache_dir, bolt_port=free_port(),
            http_port=free_port(), heap="1g", pagecache="256m", quiet=True, assets_port=busy.getsockname()[1],
            jvm_options=ClassDataArchive(Settings().cache_dir, DEFAULT_LINE).jvm_options(), dies_with_starter=True,
        )
        server.start()
        try:
            yield BrowserTarget(server, busy.getsockname()[1])
        finally:
            server.stop()


@pytest.mark.neo4j  # the module's own managed server
def test_the_managed_server_serves_its_style_and_guide_and_tells_the_browser_where(managed: BrowserTarget) -> None:
    status = managed.server.status()
    assert status.running and status.browser_guide_url is not None
    assert not status.browser_guide_url.startswith(f"http://127.0.0.1:{managed.taken_assets_port}/")
    assert http("GET", status.browser_guide_url)[0] == 200
    with neo4j.GraphDatabase.driver(managed.server.bolt_uri, auth=managed.server.auth()) as driver:
        records, _, _ = driver.execute_query("CALL dbms.clientConfig()", database_="system")
    browser_config = {r["name"]: r["value"] for r in records}  # what the Browser reads after login
    assert browser_config["browser.post_connect_cmd"].endswith(f"; play {status.browser_guide_url}")


def chromium() -> webdriver.Chrome:
    """Headless Chromium through chromedriver, with a fresh profile; the background-networking
    flags keep it from misbehaving on a closed network."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={tempfile.mkdtemp(prefix='kbgraph-chromium-')}", "--window-size=1600,1100"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def artifacts_dir() -> Path:
    return Settings().cache_dir / "artifacts"


@pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="Chromium is not installed and `./kb test` could not install Debian's chromium and chromium-driver "
           f"(see {Settings().cache_dir / 'apt-chromium.log'})",
)
@pytest.mark.neo4j  # the module's own managed server
def test_the_browser_logs_in_applies_the_style_and_draws_the_memory_as_a_graph(
    managed: BrowserTarget, embedder: CachedEmbedder, namespace: str, tmp_path: Path
) -> None:
    server = managed.server
    records = [json.loads(line) for line in SAMPLES.read_text().splitlines()[:4]]
    with neo4j.GraphDatabase.driver(server.bolt_uri, auth=server.auth()) as driver:
        kb = KnowledgeBase(driver, embedder, namespace=namespace)
        kb.add_experiences(records)
    guide_url = server.status().browser_guide_url
    assert guide_url is not None
    assets = BrowserAssets(guide_url.rsplit("/", 1)[0])
    style = parse_grass(assets.render(STYLE_FILE))

    browser = chromium()
    wait = WebDriverWait(browser, 90, poll_frequency=0.25)

    def frame(command: str) -> WebElement | None:
        for candidate in browser.find_elements(By.CSS_SELECTOR, "[data-testid=frame]"):
            shown = candidate.find_elements(By.CSS_SELECTOR, "[data-testid=frameCommand]")
            if shown and shown[0].text.strip().replace("⇒", "=>") == command:
                return candidate
        return None

    def run(command: str) -> WebElement:
        editor = wait.until(lambda b: b.find_element(By.CSS_SELECTOR, "[data-testid=activeEditor]"))
        editor.click()
        ActionChains(browser).send_keys(command).perform()
        browser.find_element(By.CSS_SELECTOR, "[data-testid=editor-Run]").click()
        return wait.until(lambda b: frame(command))

    try:
        browser.get(server.browser_url)
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "[data-testid=password]"))
        browser.find_element(By.CSS_SELECTOR, "[data-testid=username]").send_keys("neo4j")
        # Enter submits the login form; a click on its Connect button could land on the password
        # field while the form was still laying itself out (ElementClickInterceptedException).
        browser.find_element(By.CSS_SELECTOR, "[data-testid=password]").send_keys(server.password() + Keys.RETURN)

        # On connect the Browser runs browser.post_connect_cmd: our style, then our guide.
        style_frame = wait.until(lambda b: frame(f":style {assets.style_url}"))
        wait.until(lambda b: "node.Experience" in style_frame.text)
        guide_frame = wait.until(lambda b: frame(f":play {assets.guide_url}"))
        wait.until(lambda b: "kbgraph memory" in guide_frame.text)

        run(f':param kb => "{namespace}"')
        result = run("MATCH (e:Experience {kb: $kb})-[r]->(n) RETURN e, r, n LIMIT 25")
        wait.until(lambda b: len(result.find_elements(By.CSS_SELECTOR, "svg g.node circle.b-outline")) >= 4)
        browser.execute_script("arguments[0].scrollIntoView(true);", result)

        def fills() -> list[str]:
            circles = result.find_elements(By.CSS_SELECTOR, "svg g.node circle.b-outline")
            return [str(c.get_attribute("fill")).upper() for c in circles]

        experience, step = style["node.Experience"], style["node.Step"]
        wait.until(lambda b: fills().count(experience["color"]) == 4)
        assert fills().count(step["color"]) >= 4 and style["node.Domain"]["color"] in fills()

        experience_nodes = [node for node in result.find_elements(By.CSS_SELECTOR, "svg g.node")
                            if str(node.find_element(By.CSS_SELECTOR, "circle.b-outline").get_attribute("fill")).upper()
                            == experience["color"]]
        problems = [record["problem"] for record in records]
        for node in experience_nodes:
            lines = [str(t.get_attribute("textContent")).strip()
                     for t in node.find_elements(By.CSS_SELECTOR, "text.caption")]
            # The Browser wraps the caption into the circle; the last line it fits is cut short.
            assert len(lines) >= 3 and any(problem.startswith(" ".join(lines[:-1]) + " ") for problem in problems), lines
        actions = {step["action"] for record in records for step in record["steps"]}
        step_captions = [str(node.find_element(By.CSS_SELECTOR, "text.caption").get_attribute("textContent")).strip()
                         for node in result.find_elements(By.CSS_SELECTOR, "svg g.node")
                         if str(node.find_element(By.CSS_SELECTOR, "circle.b-outline").get_attribute("fill")).upper()
                         == step["color"]]
        assert step_captions and all(any(a.startswith(c.rstrip("…")) for a in actions) for c in step_captions)
        relationship_captions = {str(t.get_attribute("textContent"))
                                 for t in result.find_elements(By.CSS_SELECTOR, "svg g.relationship text")}
        assert {"HAS_STEP", "IN_DOMAIN"} <= relationship_captions
    finally:
        # Kept whatever happened: on a failure it shows what the Browser showed.
        screenshot = tmp_path / "browser-graph.png"
        browser.save_screenshot(str(screenshot))
        browser.quit()
        kept = artifacts_dir() / "browser-graph.png"
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(screenshot, kept)
        print(f"\nNeo4j Browser screenshot: {kept} (and {screenshot})")


@pytest.mark.neo4j  # the module's own managed server
def test_stopping_the_server_stops_its_asset_server(managed: BrowserTarget) -> None:
    """Runs last in this module: it stops the module's server."""
    guide_url = managed.server.status().browser_guide_url
    assert guide_url is not None
    port = int(guide_url.split(":")[2].split("/")[0])
    assert managed.server.stop()
    assert not port_answers(port)
    assert managed.server.status().browser_guide_url is None and managed.server.browser_assets.running() is None
