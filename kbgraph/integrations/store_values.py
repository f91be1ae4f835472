"""Pure parts of the LangGraph store (:mod:`kbgraph.integrations.langgraph`): how a namespace is
kept in Neo4j, and the filter and namespace-matching rules of LangGraph's ``BaseStore``.

Nothing here imports LangGraph, so the rules are unit-tested on their own; the differential test
checks them against LangGraph's ``InMemoryStore``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.value_bounds import MAX_STORE_VALUE_CHARS, value_fault, vector_problem

#: Filter operators of ``BaseStore.search(filter=…)`` (a ``{"$op": value}`` map in a filter).
FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def encode_path(namespace: Sequence[str]) -> str:
    """A namespace as one string whose prefixes are exactly its namespace prefixes: each label
    percent-encoded (so it holds no ``/``) and ended by ``/``. ``("a", "b")`` → ``"a/b/"``, and
    ``("a",)`` → ``"a/"`` is a prefix of it, where ``("a/b",)`` → ``"a%2Fb/"`` is not."""
    return "".join(quote(label, safe="") + "/" for label in namespace)


def item_id(namespace: Sequence[str], key: str) -> str:
    """An item's id in Neo4j: its encoded namespace, then its key encoded the same way (unique,
    since neither part holds a bare ``/`` and the path ends with one)."""
    return encode_path(namespace) + quote(key, safe="")


#: An item's value as JSON text, at most (kbgraph.core.value_bounds says why).
MAX_VALUE_CHARS = MAX_STORE_VALUE_CHARS
#: A namespace and key, percent-encoded, make the item's indexed id: Neo4j's index keys take
#: about 8 KB, so this many characters (some 1,300 non-ASCII ones) at most.
MAX_ID_CHARS = 4_096


def check_address(namespace: Sequence[str], key: str | None = None) -> None:
    """A namespace (and key) an item can be kept under: valid Unicode (a lone surrogate cannot be
    encoded) and short enough to be indexed. InvalidInputError naming the part otherwise."""
    parts = [(f"namespace.{i}", label) for i, label in enumerate(namespace) if isinstance(label, str)]
    if isinstance(key, str):
        parts.append(("key", key))
    problems = [fault.within(name) for name, text in parts if (fault := value_fault(text))]
    if not problems and (length := len(item_id(namespace, key or ""))) > MAX_ID_CHARS:
        problems.append(f"key: the namespace and key are {length:,} characters once percent-encoded, "
                        f"over the {MAX_ID_CHARS:,} an item's id may have")
    if problems:
        raise InvalidInputError(problems, "invalid namespace or key, nothing was done")


def value_text(value: Mapping[str, Any], where: str) -> str:
    """The JSON text an item's value is stored as (a clear error names what cannot be stored:
    not JSON, a lone surrogate, deeper than the bounds, or longer than MAX_VALUE_CHARS)."""
    if fault := value_fault(dict(value), int64=False):  # kept as JSON text: any integer fits
        raise InvalidInputError([f"{where}: {fault.under('value')}"], "the value cannot be stored, nothing was written")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidInputError([f"{where}: value: {error}"], "the value cannot be stored as JSON, nothing was written") from None
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidInputError([f"{where}: value: {len(text):,} characters of JSON, over the {MAX_VALUE_CHARS:,} "
                                 "an item may hold"], "the value is too large, nothing was written")
    return text


def check_query(query: str | None) -> None:
    """A search's query is embedded (and, over the experiences, sent to Neo4j): a lone surrogate
    would fail its UTF-8 encoding there. InvalidInputError naming the query, as a put names the field."""
    if query is not None and (fault := value_fault(query)):
        raise InvalidInputError([fault.within("query")], "invalid search query, nothing was done")


def check_vectors(vectors: Sequence[Sequence[float]], places: Sequence[str], dimension: int) -> None:
    """What a custom ``embed`` can get wrong, refused before anything is written: the dimension,
    and vectors a cosine similarity cannot use (:func:`kbgraph.core.value_bounds.vector_problem`)."""
    problems = []
    for vector, place in zip(vectors, places, strict=True):
        problem = (f"has {len(vector)} values, not the {dimension} of kbgraph's vector index"
                   if len(vector) != dimension else vector_problem(vector))
        if problem:
            problems.append(f"{place}: the index's embed gave an unusable vector: {problem}")
    if problems:
        raise InvalidInputError(problems, "unusable embeddings, nothing was written")


def check_ttl(ttl: float | None, where: str) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise InvalidInputError([f"{where}: ttl: must be a positive number of minutes, not {ttl!r}"],
                                "invalid TTL, nothing was written")
    return float(ttl)


def matches_filter(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """``BaseStore.search``'s filter: every key of ``conditions`` matches the item's value at that
    key — equal, a nested map matched key by key, a list element by element, or ``{"$op": x}``
    comparisons (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``)."""
    if not conditions:
        return True
    return all(_matches(value.get(key), wanted) for key, wanted in conditions.items())


def _matches(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_compare(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(_matches(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(wanted)
                and all(_matches(a, w) for a, w in zip(actual, wanted, strict=True)))
    return bool(actual == wanted)


def _compare(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    if operator not in FILTER_OPERATORS:
        raise InvalidInputError([f"filter: {operator}: unknown operator (use one of {', '.join(FILTER_OPERATORS)})"],
                                "invalid search filter")
    try:
        left, right = float(actual), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric value is not greater or smaller than anything
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[operator]


def check_filter(conditions: Mapping[str, Any] | None) -> None:
    """Rejects unknown ``$`` operators before anything runs (rather than on the first item)."""
    def walk(node: Any, where: str) -> None:
        if isinstance(node, Mapping):
            for key, inner in node.items():
                if str(key).startswith("$") and key not in FILTER_OPERATORS:
                    raise InvalidInputError([f"filter.{where}{key}: unknown operator (use one of "
                                             f"{', '.join(FILTER_OPERATORS)})"], "invalid search filter")
                walk(inner, f"{where}{key}.")
        elif isinstance(node, (list, tuple)):
            for inner in node:
                walk(inner, where)

    walk(conditions or {}, "")


def namespace_matches(namespace: Sequence[str], kind: str, path: Sequence[str]) -> bool:
    """``list_namespaces`` conditions: ``path`` is a prefix (or suffix) of ``namespace``, ``"*"``
    matching any one label."""
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if kind == "prefix" else zip(reversed(namespace), reversed(path))
    return all(want == "*" or have == want for have, want in pairs)


def list_namespaces(
    namespaces: Sequence[Sequence[str]], conditions: Sequence[tuple[str, Sequence[str]]],
    max_depth: int | None, limit: int, offset: int,
) -> list[tuple[str, ...]]:
    """The namespaces that meet every condition, cut to ``max_depth`` labels, distinct and sorted,
    then paged."""
    kept = [tuple(ns) for ns in namespaces if all(namespace_matches(ns, kind, path) for kind, path in conditions)]
    if max_depth is not None:
        kept = [ns[:max_depth] for ns in kept]
    return sorted(set(kept))[offset: offset + limit]
