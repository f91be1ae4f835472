"""What kbgraph hands to Neo4j Browser — its stylesheet and its guide — and the server settings
that make the Browser load both when someone connects.

Neo4j Browser runs ``browser.post_connect_cmd`` after every login (commands separated by ``;``,
each run as ``:<command>``), and fetches remote styles and guides only from hosts listed in
``browser.remote_content_hostname_whitelist`` (the name Neo4j 5.26 still uses; Browser 5.24 reads
it under that name). Both files are served from kbgraph's own small HTTP server
(:mod:`kbgraph.store.managed.browser.asset_server`), so their URLs are absolute.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

STYLE_FILE = "kbgraph.grass"
GUIDE_FILE = "guide.html"
ASSET_FILES = (STYLE_FILE, GUIDE_FILE)

# The guide links back to both files; a guide runs inside the Browser page, so relative links
# would point at the Browser, not at us.
_STYLE_URL_MARK = "@@STYLE_URL@@"
_GUIDE_URL_MARK = "@@GUIDE_URL@@"

# Neo4j's default allow-list (guides.neo4j.com, localhost) plus the loopback address our asset
# server is reached at.
ALLOWED_HOSTS = ("guides.neo4j.com", "localhost", "127.0.0.1")


@dataclass(frozen=True)
class BrowserAssets:
    """The style and guide as served at ``base_url`` (e.g. ``http://127.0.0.1:7475``)."""

    base_url: str

    @property
    def style_url(self) -> str:
        return f"{self.base_url.rstrip('/')}/{STYLE_FILE}"

    @property
    def guide_url(self) -> str:
        return f"{self.base_url.rstrip('/')}/{GUIDE_FILE}"

    @property
    def post_connect_command(self) -> str:
        return f"style {self.style_url}; play {self.guide_url}"

    def neo4j_settings(self) -> dict[str, str]:
        """neo4j.conf settings that apply the style and open the guide on every connect."""
        return {
            "browser.post_connect_cmd": self.post_connect_command,
            "browser.remote_content_hostname_whitelist": ",".join(ALLOWED_HOSTS),
        }

    def render(self, name: str) -> str:
        """The text of asset ``name`` as served, with the guide's links filled in."""
        if name not in ASSET_FILES:
            raise ValueError(f"unknown Browser asset {name!r}; known: {', '.join(ASSET_FILES)}")
        text = (resources.files("kbgraph.store.managed.browser") / name).read_text(encoding="utf-8")
        return text.replace(_STYLE_URL_MARK, self.style_url).replace(_GUIDE_URL_MARK, self.guide_url)

    def write_to(self, directory: Path) -> None:
        """Writes every asset into ``directory`` (created if needed), replacing older copies."""
        directory.mkdir(parents=True, exist_ok=True)
        for name in ASSET_FILES:
            target = directory / name
            partial = target.with_name(f".{name}.partial")
            partial.write_text(self.render(name), encoding="utf-8")
            partial.replace(target)  # never serve half a file
