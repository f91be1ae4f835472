"""A tiny HTTP server for the files Neo4j Browser fetches from kbgraph (style and guide).

The Browser page lives on Neo4j's HTTP port and fetches these files from another origin, so every
answer carries CORS headers, and pre-flight ``OPTIONS`` requests (the Browser sends ``Pragma`` and
``Cache-Control`` headers when it fetches a guide) are answered too. It serves the files of one
folder, nothing else: no directory listings, no paths outside the folder.

Standard library only, so :mod:`kbgraph.store.managed.browser.asset_process` can run this file in an isolated
interpreter (``python -I asset_server.py …``) that starts in milliseconds and needs a few MB.
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import sys
import urllib.parse
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

CONTENT_TYPES = {".grass": "text/plain; charset=utf-8", ".html": "text/html; charset=utf-8"}


class CorsAssetHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the files of ``directory`` to any origin; everything else is 404."""

    server_version = "kbgraph-browser-assets"
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **CONTENT_TYPES}

    def end_headers(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "*")
        # Chromium asks before a page may reach a loopback address (Private Network Access).
        self.send_header("Access-Control-Allow-Private-Network", "true")
        self.send_header("Access-Control-Max-Age", "600")
        # The files change when kbgraph changes; the Browser should never keep an old copy.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def do_OPTIONS(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def send_head(self) -> Any:
        # A NUL in the path (%00) made os.stat raise ValueError and the connection close unanswered.
        if "\x00" in urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0]):
            self.send_error(404, "no such file")
            return None
        return super().send_head()

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(404, "no listings here")
        return None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        sys.stderr.write(f"{self.log_date_time_string()} {self.address_string()} {format % args}\n")


def make_server(directory: Path, port: int, host: str = "127.0.0.1") -> http.server.ThreadingHTTPServer:
    """A server bound to ``host:port`` (port 0 = any free one), not yet serving."""
    handler = partial(CorsAssetHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve kbgraph's Neo4j Browser style and guide.")
    parser.add_argument("--directory", type=Path, required=True, help="folder holding the files to serve")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        print(f"asset server: {args.directory} is not a folder", file=sys.stderr)
        return 2
    try:
        server = make_server(args.directory, args.port, args.host)
    except OSError as exc:
        print(f"asset server: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1

    def shut_down(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, shut_down)
    print(f"asset server: serving {args.directory} on http://{args.host}:{server.server_port}/", file=sys.stderr,
          flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
