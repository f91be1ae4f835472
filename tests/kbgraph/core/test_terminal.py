"""Escaping what stored data could do to a terminal, while JSON stays the same value."""

from __future__ import annotations

import io
import json

import pytest
from rich.table import Table

from kbgraph.core.terminal import SafeConsole, escape_controls, json_safe, markup_safe, plain


@pytest.mark.parametrize(("raw", "shown"), [
    ("title\x1b]0;pwned\x07", "title\\x1b]0;pwned\\x07"),
    ("\x1b[31mred", "\\x1b[31mred"),
    ("csi\x9b2J", "csi\\x9b2J"),
    ("nul\x00del\x7f", "nul\\x00del\\x7f"),
    ("bidi\u202eevil\u2066x\u2069", "bidi\\u202eevil\\u2066x\\u2069"),
    ("lone\udcff", "lone\\udcff"),
    ("lines\nand\ttabs, é 😀", "lines\nand\ttabs, é 😀"),
])
def test_unsafe_characters_are_written_as_visible_escapes(raw: str, shown: str) -> None:
    assert escape_controls(raw) == shown


def test_the_console_escapes_whatever_reaches_it_even_inside_tables() -> None:
    sink = io.StringIO()
    console = SafeConsole(file=sink, width=200, force_terminal=False)
    table = Table("cell")
    table.add_row(plain("a\x1b[2Jb [bold]x[/]"))
    console.print(table)
    console.print("raw \x1b]0;t\x07 \u202e", markup=False)
    console.print(f"[bold]{markup_safe('[red]not red[/]')}[/]")
    text = sink.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    assert "a\\x1b[2Jb [bold]x[/]" in text and "[red]not red[/]" in text


def test_json_keeps_its_value_with_terminal_controls_escaped() -> None:
    value = {"a": "csi\x9b2J bidi\u202e é", "b": [1, "\x7f"]}
    text = json_safe(json.dumps(value, ensure_ascii=False))
    assert "\x9b" not in text and "\u202e" not in text and "\x7f" not in text and "é" in text
    assert json.loads(text) == value
