"""Inspection queries for people: the parameterised Cypher files in ``cypher/inspect/``.

Each file is one read-only statement that also runs unchanged in cypher-shell and Neo4j Browser.
It starts with ``//`` comments saying what it answers, then declares its parameters, one per line::

    // @param limit 10 — how many rows            (a JSON literal: the default)
    // @param id required — the experience's id   (no default: it must be given)

and repeats them as the ``:param`` lines to paste into cypher-shell or the Browser::

    // :param limit => 10

This module lists the queries with their headers, turns ``name=value`` pairs into typed
parameters, checks that every ``$parameter`` a statement uses is given or has a documented default,
and runs the statement in READ access mode. A query that would write is refused twice: first by
its plan (``EXPLAIN`` classifies every statement as read, write, read-write or schema), then by
Neo4j itself, which rejects writes in a READ transaction.

The package's modules: ``_query`` (a query once read, its parameters and errors), ``_library``
(reading files), ``_assignments`` (``name=value`` texts) and ``_runner`` (running, and answers as
plain values).
"""

from __future__ import annotations

from kbgraph.inspect._assignments import coerce_assignments, coerce_value, parse_assignments
from kbgraph.inspect._library import (
    MAX_QUERY_FILE_BYTES,
    InspectionLibrary,
    load_query_file,
    parse_inspection_query,
    statement_parameters,
)
from kbgraph.inspect._query import (
    INSPECT_FOLDER,
    NAMESPACE_PARAMETER,
    InspectionError,
    InspectionQuery,
    InspectionResult,
    QueryParameter,
    WriteRefusedError,
    describe_parameters,
)
from kbgraph.inspect._runner import READ_QUERY_TYPE, VECTOR_PROPERTY_SUFFIX, InspectionRunner, plain

__all__ = [
    "INSPECT_FOLDER",
    "InspectionError",
    "InspectionLibrary",
    "InspectionQuery",
    "InspectionResult",
    "InspectionRunner",
    "MAX_QUERY_FILE_BYTES",
    "NAMESPACE_PARAMETER",
    "QueryParameter",
    "READ_QUERY_TYPE",
    "VECTOR_PROPERTY_SUFFIX",
    "WriteRefusedError",
    "coerce_assignments",
    "coerce_value",
    "describe_parameters",
    "load_query_file",
    "parse_assignments",
    "parse_inspection_query",
    "plain",
    "statement_parameters",
]
