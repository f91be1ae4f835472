"""Names, descriptions and front matter of Agent Skills, within the specification's rules.

The rules (``skills-ref``'s validator checks them): ``name`` at most 64 characters, lowercase, letters,
digits and hyphens, no hyphen at either end nor two in a row, equal to the skill's folder name;
``description`` non-empty, at most 1,024 characters; front matter keys among ``name``,
``description``, ``license``, ``allowed-tools``, ``metadata`` and ``compatibility``. kbgraph's names
are stricter than the specification's (which allows any Unicode letter): ASCII only, so that every
file system and framework takes them as they are.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping

__all__ = ["MAX_DESCRIPTION_CHARS", "MAX_NAME_CHARS", "cut", "front_matter", "name_problems", "one_line", "slug",
           "truncate_description", "unique_names", "yaml_string"]

#: Limits of the Agent Skills specification.
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024

_NOT_NAME = re.compile(r"[^a-z0-9]+")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def slug(text: str, max_chars: int = MAX_NAME_CHARS) -> str:
    """A skill name from any text: ASCII lowercase letters, digits and single hyphens, at most
    ``max_chars`` long, cut at a hyphen when one is near the end. Accented letters keep their base
    letter ("Réserver" → "reserver"); text with no Latin letters or digits at all ("予約") becomes
    ``skill-`` and a hash of it, so it still gets a stable name of its own."""
    folded = unicodedata.normalize("NFKD", text)
    ascii_text = "".join(c for c in folded if not unicodedata.combining(c)).encode("ascii", "ignore").decode()
    name = _NOT_NAME.sub("-", ascii_text.lower()).strip("-")
    if not name:
        return "skill-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    if len(name) > max_chars:
        at_hyphen = name.rfind("-", 0, max_chars + 1)  # a hyphen right after the limit ends a whole word
        name = (name[:at_hyphen] if at_hyphen >= max_chars // 2 else name[:max_chars]).strip("-")
    return name


def unique_names(texts: Iterable[str], max_chars: int = MAX_NAME_CHARS) -> list[str]:
    """One distinct name per text, in order: the first to slug to a name keeps it, later ones get
    ``-2``, ``-3``, … (the base cut so the whole stays within ``max_chars``)."""
    taken: set[str] = set()
    names: list[str] = []
    for text in texts:
        base = slug(text, max_chars)
        name, n = base, 1
        while name in taken:
            n += 1
            suffix = f"-{n}"
            name = base[: max_chars - len(suffix)].rstrip("-") + suffix
        taken.add(name)
        names.append(name)
    return names


def name_problems(name: str) -> list[str]:
    """What the Agent Skills specification (and kbgraph's stricter ASCII rule) finds wrong with a name."""
    problems = []
    if not name:
        problems.append("name: empty")
    if len(name) > MAX_NAME_CHARS:
        problems.append(f"name: {name!r} is {len(name)} characters, at most {MAX_NAME_CHARS}")
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", name):
        problems.append(f"name: {name!r}: only lowercase letters, digits and single hyphens, not at either end")
    return problems


def one_line(text: str) -> str:
    """Text on one line: white space (line breaks included) as single spaces, control and format
    characters dropped (YAML refuses some in a quoted scalar; a Markdown line must not break)."""
    kept = "".join(" " if c.isspace() else c for c in text if c.isspace() or unicodedata.category(c)[0] != "C")
    return " ".join(kept.split())


def cut(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters: cut at a word and ended with "…" when longer."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    window = text[: limit - 1]
    at_space = window.rfind(" ")
    if at_space >= limit // 2:
        window = window[:at_space]
    return window.rstrip(" ,;:.—-") + "…"


def truncate_description(text: str, limit: int = MAX_DESCRIPTION_CHARS) -> str:
    """A skill's description: on one line, non-empty, at most ``limit`` characters (the
    specification's 1,024), cut at a word with "…" when longer. Raises ValueError when blank."""
    if limit < 2:
        raise ValueError(f"limit must be at least 2, not {limit}")
    short = cut(text, limit)
    if not short:
        raise ValueError("description: empty")
    return short


def yaml_string(text: str) -> str:
    """A YAML double-quoted scalar (a JSON string is one). A run of hyphens is escaped (``-\\u002d``):
    readers split the front matter at the first ``---`` of the file before parsing it."""
    return json.dumps(text, ensure_ascii=False).replace("--", "-\\u002d")


def _yaml_name(name: str) -> str:
    # Plain when no YAML reader could take it for anything but a string (a number, true, null …).
    if re.fullmatch(r"[a-z0-9-]+", name) and not re.fullmatch(r"[0-9-]+", name) and name not in _YAML_WORDS:
        return name
    return yaml_string(name)


def front_matter(name: str, description: str, metadata: Mapping[str, str]) -> str:
    """The ``---`` block of a SKILL.md: name, description and string ``metadata``, in that order."""
    lines = ["---", f"name: {_yaml_name(name)}", f"description: {yaml_string(description)}", "metadata:"]
    lines += [f"  {key}: {yaml_string(value)}" for key, value in metadata.items()]
    return "\n".join([*lines, "---"]) + "\n"
