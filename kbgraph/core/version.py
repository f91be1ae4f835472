"""The installed kbgraph's version, for what reports it: an export's header, MCP's serverInfo, the
OpenAPI schema."""

from __future__ import annotations

from importlib import metadata

__all__ = ["kbgraph_version"]


def kbgraph_version(fallback: str = "unknown") -> str:
    """The installed distribution's version; ``fallback`` when run from a checkout never installed."""
    try:
        return metadata.version("kbgraph")
    except metadata.PackageNotFoundError:
        return fallback
