"""Errors kbgraph raises on purpose. Each one carries a message a person can act on."""

from __future__ import annotations


class KbgraphError(Exception):
    """Base class: the CLI prints these as one line, without a traceback."""


class InvalidInputError(KbgraphError):
    """Input rejected before anything was written. ``problems`` lists each `where: field: reason`."""

    def __init__(self, problems: list[str], headline: str = "invalid input, nothing was written"):
        self.problems = problems
        shown = "\n  ".join(problems[:20])
        more = f"\n  … and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"{headline}:\n  {shown}{more}")


class Neo4jUnavailableError(KbgraphError):
    """Neo4j could not be reached or refused our credentials."""


class ManagedServerError(KbgraphError):
    """The locally managed Neo4j could not be installed, started or stopped."""


class EmbedderError(KbgraphError):
    """The embedding model could not be loaded or answered badly."""


class SchemaError(KbgraphError):
    """The schema could not be applied or did not come ONLINE."""
