"""Every regular expression in kbgraph, ingest and search, timed on adversarial input.

Python's ``re`` backtracks: a pattern like ``[\\w.]+@[\\w-]+(?:\\.[\\w-]+)+`` tried at each of n
positions of ``a.a.a.…`` can walk O(n) characters from each, O(n²) in all (a 98,000-character task
took 207 s to generalise). This audit finds the patterns itself — each module's compiled
patterns, and every literal pattern passed to ``re.sub``/``re.match``/… inside functions — and
times ``finditer`` over the whole text (a search from every position: the worst way a pattern can
be applied) on 100,000 characters built by repeating short units: generic ones (``a.``, ``a@``,
``1,``, spaces, quotes, brackets) and ones made of the pattern's own literal characters.

A pattern is first ranked on 2,000 characters per unit; its three worst units are timed on
10,000 and then on 100,000 characters (skipped, with the 10,000 time ×100 reported, when the time
grows faster than the length: that is a quadratic pattern to fix, not to wait for).

Run: ``./kb python -m tests.reliability.regex_audit`` (a Markdown table on standard output).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kbgraph", "kbgraph.ingest", "kbgraph.search")
SOURCES = ("kbgraph", "ingest", "search")
#: Ways in that only read kbgraph's own files or tools' output, never user text.
NOT_USER_TEXT = {
    "kbgraph/store/queries.py": "cypher/*.cypher files of kbgraph",
    "kbgraph/store/managed/runtime.py": "kbgraph's pom.xml",
    "kbgraph/store/managed/java.py": "the output of `java -version`",
    "kbgraph/report/_svg.py": "SVG kbgraph renders itself",
    "kbgraph/store/connection.py": "the Neo4j driver's error text",
    "search/eval/evaluate.py": "a corpus folder's name",
}
#: Patterns compiled into a table and applied only with fullmatch, to one value.
ANCHORED_USE = {"kbgraph/transfer/_values.py"}
LENGTH = 100_000
GENERIC_UNITS = [
    "a", "A", "1", " ", "\n", "\t", "a.", "a.a@", "a@", "@a.", "a-", "1,", "1.", "1-", "12:", "a1", "a_1", "_",
    "{", "{a", "}", "[", "[1", "]", '"', '"a', '\\', '\\"', "'", "a'", "`", "#", "#a", "$1", "P1", "PT1", "T1",
    "http://", "www.", "x@y.", "error: ", "Aa ", "Aa", "AB1", "A1B", "I ", ". ", "..", "a ", "a, ", "a\n", "x:",
    "//", ":param ", "@param ", "(", "()", "1 ", "12 ", "1234 ", "1/", "20", "2020-", "am", "\ud800", "é", "Aé ",
    "you are ", "You are Aa ", "name: Aa ", "named Aa ", "reservation ", "ABCDEF ", "a_b", "ab_1", "I'm ", "Mc",
]


@dataclass(frozen=True)
class Found:
    where: str  # path:line, or path NAME for a module's compiled pattern
    pattern: re.Pattern[str]
    anchored: bool = False  # only ever applied with match/fullmatch: tried at one position


@dataclass(frozen=True)
class Timing:
    found: Found
    unit: str
    seconds: float  # on LENGTH characters (extrapolated when ``quadratic``)
    quadratic: bool


def _modules() -> Iterator[object]:
    for name in PACKAGES:
        package = importlib.import_module(name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if ".bench" in info.name or info.name.endswith("__main__"):
                continue
            try:
                yield importlib.import_module(info.name)
            except Exception:  # an optional extra not installed: its source is still scanned below
                continue


def compiled_patterns() -> Iterator[Found]:
    seen: set[tuple[str, int]] = set()
    for module in _modules():
        path = Path(getattr(module, "__file__", "") or "")
        for name, value in sorted(vars(module).items()):
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                key = (value.pattern, value.flags)
                if key in seen:
                    continue
                seen.add(key)
                try:
                    where = f"{path.relative_to(ROOT)} {name}"
                except ValueError:
                    continue  # imported from outside the tree (a dependency's pattern)
                source = path.read_text(encoding="utf-8")
                uses = set(re.findall(rf"\b{re.escape(name)}\b(\.\w+)?", source.split(f"{name} = re.compile", 1)[-1]))
                yield Found(where, value, bool(uses) and uses <= {".match", ".fullmatch"})


_RE_CALLS = {"compile", "sub", "subn", "match", "fullmatch", "search", "findall", "finditer", "split"}


def inline_patterns() -> Iterator[Found]:
    """Literal patterns passed to ``re.*`` calls (module-level ones are found compiled too)."""
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "/bench/" in str(path):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_CALLS
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args
                        and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                    flags = 0
                    for keyword in node.keywords:
                        if keyword.arg == "flags" and isinstance(keyword.value, ast.Attribute):
                            flags |= getattr(re, keyword.value.attr)
                    where = str(path.relative_to(ROOT))
                    yield Found(f"{where}:{node.lineno}", re.compile(node.args[0].value, flags),
                                node.func.attr in ("match", "fullmatch") or where in ANCHORED_USE)


def all_patterns() -> list[Found]:
    found: dict[tuple[str, int], Found] = {}
    for item in [*inline_patterns(), *compiled_patterns()]:
        found.setdefault((item.pattern.pattern, item.pattern.flags), item)
    return sorted(found.values(), key=lambda f: f.where)


def units_for(pattern: re.Pattern[str]) -> list[str]:
    literal = sorted({c for c in pattern.pattern if not c.isalnum() and not c.isspace()} - set("\\()[]?*+|^$"))
    derived = [u for c in literal for u in (c, f"a{c}", f"1{c}", f"{c}a", f"{c}{c}a")]
    return list(dict.fromkeys(GENERIC_UNITS + derived))


def adversarial(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def seconds(found: Found, text: str) -> float:
    """CPU seconds (the machine is shared: waiting for a core is not the pattern's time), the least
    of three runs: one match, or a search from everywhere."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        if found.anchored:
            found.pattern.match(text)
        else:
            for _ in found.pattern.finditer(text):
                pass
        best = min(best, time.process_time() - start)
    return best


def worst(found: Found) -> Timing:
    ranked = sorted(units_for(found.pattern), key=lambda u: -seconds(found, adversarial(u, 2_000)))[:3]
    timings = []
    for unit in ranked:
        medium = seconds(found, adversarial(unit, 10_000))
        if medium * (LENGTH / 10_000) ** 2 > 30:  # quadratic would take minutes: report, don't wait
            timings.append(Timing(found, unit, medium * (LENGTH / 10_000) ** 2, True))
        else:
            timings.append(Timing(found, unit, seconds(found, adversarial(unit, LENGTH)), False))
    return max(timings, key=lambda t: t.seconds)


def main() -> int:
    print(f"| pattern (where) | applied to | how | worst unit | seconds on {LENGTH:,} chars |")
    print("| --- | --- | --- | --- | --- |")
    slow = 0
    for found in all_patterns():
        timing = worst(found)
        path = found.where.split(" ")[0].split(":")[0]
        text = NOT_USER_TEXT.get(path, "user text")
        shown = f"~{timing.seconds:,.0f} (quadratic, extrapolated)" if timing.quadratic else f"{timing.seconds:.4f}"
        how = "match" if found.anchored else "search"
        print(f"| `{found.where}` | {text} | {how} | `{timing.unit!r}` | {shown} |", flush=True)
        slow += timing.seconds > 1.0 and path not in NOT_USER_TEXT
    print(f"\n{slow} pattern(s) applied to user text take over 1 s", file=sys.stderr)
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
