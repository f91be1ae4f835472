"""A generalised text with its placeholders as data: the text, and where each placeholder
generalisation wrote stands in it and of what kind (:class:`Slot`).

Generalisation (:mod:`kbgraph.core.generalise`) builds one with the same substitutions it always
made, so its ``text`` is the string :func:`~kbgraph.core.generalise.generalise_text` returns; what
reads a generalised text afterwards (the identity clause of a task, a leading e-mail, whether a rule
opens on a placeholder) asks the slots where the placeholders are instead of looking for ``{id}``
in the words, where a task that wrote "{id}" itself would read the same. Pure values, no state.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["GeneralText", "Slot"]


@dataclass(frozen=True)
class Slot:
    """A placeholder in a generalised text: ``text[start:end]``, standing for a value of ``kind``
    (``id``, ``number``, ``name``, ``email``, ``url``)."""

    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class GeneralText:
    """A text and its placeholders, in order (see the module docstring)."""

    text: str
    slots: tuple[Slot, ...] = ()

    @classmethod
    def placeholder(cls, shown: str, kind: str) -> GeneralText:
        """One placeholder alone, written ``shown``."""
        return cls(shown, (Slot(0, len(shown), kind),))

    @classmethod
    def joined(cls, pieces: Iterable[GeneralText]) -> GeneralText:
        """The pieces one after another, their slots moved to where each piece now starts."""
        texts: list[str] = []
        slots: list[Slot] = []
        at = 0
        for piece in pieces:
            texts.append(piece.text)
            if piece.slots:
                slots.extend(Slot(s.start + at, s.end + at, s.kind) for s in piece.slots)
            at += len(piece.text)
        return cls("".join(texts), tuple(slots))

    def cut(self, start: int, end: int | None = None) -> GeneralText:
        """``text[start:end]`` with the slots wholly inside it (a placeholder cut through is no
        longer one)."""
        stop = len(self.text) if end is None else min(end, len(self.text))
        start = min(max(start, 0), stop)
        if not self.slots:
            return GeneralText(self.text[start:stop])
        return GeneralText(self.text[start:stop], tuple(Slot(s.start - start, s.end - start, s.kind)
                                                        for s in self.slots if s.start >= start and s.end <= stop))

    def sub(self, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], GeneralText], count: int = 0) -> GeneralText:
        """``pattern.sub`` over the text, each match replaced by ``replace(match)`` (a piece with
        slots of its own, or the match kept: :meth:`kept`); slots a match covered go with it (a
        kept match brings them back), the others move with the words around them."""
        made: list[Slot] = []
        starts: list[int] = []
        ends: list[int] = []
        shifts: list[int] = []  # how far the text after each match has moved
        shift = 0

        def each(match: re.Match[str]) -> str:
            nonlocal shift
            piece = replace(match)
            at = match.start() + shift
            made.extend(Slot(s.start + at, s.end + at, s.kind) for s in piece.slots)
            shift += len(piece.text) - (match.end() - match.start())
            starts.append(match.start())
            ends.append(match.end())
            shifts.append(shift)
            return piece.text

        text = pattern.sub(each, self.text, count=count)
        if not ends:
            return self
        moved: list[Slot] = []
        for slot in self.slots:
            before = bisect_right(ends, slot.start)  # the matches that end before it starts
            if before < len(starts) and starts[before] < slot.end:
                continue  # a match covered it
            by = shifts[before - 1] if before else 0
            moved.append(Slot(slot.start + by, slot.end + by, slot.kind))
        return GeneralText(text, tuple(sorted((*moved, *made), key=lambda s: s.start)))

    def kept(self, match: re.Match[str]) -> GeneralText:
        """The matched part as it is, slots included: what a replacement that keeps a match returns."""
        return self.cut(match.start(), match.end())

    def stripped(self) -> GeneralText:
        """Without white space at either end (``str.strip``)."""
        start = len(self.text) - len(self.text.lstrip())
        return self.cut(start, len(self.text.rstrip()))

    def capitalised(self) -> GeneralText:
        """The first character upper-cased (a placeholder's first character is left as it is)."""
        if not self.text or any(s.start == 0 for s in self.slots):
            return self
        first = self.text[0].upper()  # "ß" is "SS": what follows moves by the difference
        return GeneralText.joined([GeneralText(first), self.cut(1)])

    def slot_at(self, position: int) -> Slot | None:
        """The placeholder that starts at ``position``, if one does."""
        return next((s for s in self.slots if s.start == position), None)

    def opens_with_placeholder(self) -> bool:
        """A placeholder stands in the first word (up to the first white space after it starts)."""
        start = len(self.text) - len(self.text.lstrip())
        end = next((i for i in range(start, len(self.text)) if self.text[i].isspace()), len(self.text))
        return any(s.start < end for s in self.slots)
