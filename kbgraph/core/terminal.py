"""Human-readable output that stored data cannot take over.

Experiences hold text agents wrote: an action containing ``ESC]0;…BEL`` would retitle the user's
terminal, ``ESC[…`` repaint it, a bidi override (U+202E) reorder what they read, and rich markup
(``[link=…]``) be interpreted by the CLI's console. :class:`SafeConsole` escapes every control
character in what it renders, whatever the print call; :func:`plain` makes a stored string safe to
put inside markup or a table cell. JSON output does not go through here: ``json.dumps`` already
escapes control characters, so it stays exact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.segment import Segment
from rich.text import Text

# C0 controls except newline and tab (layout), DEL, C1 controls, bidi embeddings/overrides/isolates
# and marks, and lone surrogates (which cannot even be encoded).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """``text`` with each unsafe character written as its escape (``\\x1b``, ``\\u202e``)."""
    return _UNSAFE.sub(_visible, text)


def plain(value: object) -> Text:
    """A stored value as a rich Text: printed literally, never read as markup."""
    return Text(escape_controls(str(value)))


def markup_safe(value: object) -> str:
    """A stored value to interpolate into a markup string: markup escaped, controls escaped."""
    return escape_markup(escape_controls(str(value)))


class SafeConsole(Console):
    """A rich Console that escapes control characters in every segment of text it writes. Rich's
    own control segments (cursor movement of progress bars) and styles are left alone: they are
    added after this, from rich's own data."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        safe = (segment if segment.control else Segment(escape_controls(segment.text), segment.style, segment.control)
                for segment in buffer)
        return super()._render_buffer(safe)


_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def json_safe(text: str) -> str:
    """JSON text with the characters JSON leaves raw but a terminal acts on (DEL, C1 controls,
    bidi controls) written as ``\\uXXXX`` escapes: the same JSON value, so output stays exact.
    (They can only occur inside strings, where an escape means the same character.)"""
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
