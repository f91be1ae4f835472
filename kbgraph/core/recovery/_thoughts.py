"""What lies between a failed step and its fix: the next attempt, the look-ups and calculations
before it (the preparation), and the agent's words (the thought)."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator

from kbgraph.core.general_text import GeneralText
from kbgraph.core.generalise import SPACES, generalise, humanise_action
from kbgraph.core.recovery._values import SENTENCE_END, Run, scalar, short
from kbgraph.core.shapes import changes_state
from kbgraph.core.models import TrajectoryStep

_SPACE = GeneralText(" ")
#: Longest thought kept (cut at the last sentence end before it).
THOUGHT_CHARS = 300
#: Preparation steps listed (the last ones: nearest the fix).
MAX_PREPARATION = 3

_PREPARATION = frozenset({"think", "calculate"})
# Sentences said to the user, not reasoning: "I apologize for the confusion earlier."
_CHATTER = re.compile(r"^(?:I apologi[sz]e|(?:I'm |I am )?sorry|thank you|thanks)\b[^.!?]*[.!?]?$", re.IGNORECASE)


def thoughts_of(step: TrajectoryStep) -> Iterator[str]:
    """What the agent wrote at a step: a ``think`` call's thought, and the text before any call."""
    if step.action == "think":
        value = step.arguments.get("thought")
        if isinstance(value, str | int | float) and str(value).strip():
            yield str(value)
    if step.thought and step.thought.strip():
        yield step.thought


def trim_thought(text: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str | None:
    """The words of :func:`trimmed_thought`."""
    trimmed = trimmed_thought(text, names, ids)
    return None if trimmed is None else trimmed.text


def trimmed_thought(text: str, names: Collection[str] = (), ids: Collection[str] = ()) -> GeneralText | None:
    """The agent's words, generalised (its placeholders as data), without what it said to the user,
    cut at the last sentence end within THOUGHT_CHARS (or at a word, when no sentence ends early
    enough); None when there are none."""
    general = generalise(text, names=names, ids=ids).sub(SPACES, lambda _: _SPACE).stripped()
    kept = [sentence for sentence in _sentences(general) if not _CHATTER.match(sentence.text)]
    general = GeneralText.joined(piece for i, sentence in enumerate(kept) for piece in ((_SPACE, sentence) if i else (sentence,)))
    if not general.text:
        return None
    if len(general.text) <= THOUGHT_CHARS:
        return general
    cut = general.cut(0, THOUGHT_CHARS)
    ends = [m.start() for m in SENTENCE_END.finditer(cut.text + " ")]
    if ends and ends[-1] > 40:
        return cut.cut(0, ends[-1]).stripped()
    head = cut.cut(0, THOUGHT_CHARS - 1)
    last_space = head.text.rfind(" ")
    return GeneralText.joined([head.cut(0, last_space) if last_space >= 0 else head, GeneralText("…")])


def _sentences(general: GeneralText) -> list[GeneralText]:
    """The text's sentences (``SENTENCE_END.split``), each with its placeholders."""
    starts = [0, *(m.end() for m in SENTENCE_END.finditer(general.text))]
    ends = [*(m.start() for m in SENTENCE_END.finditer(general.text)), len(general.text)]
    return [general.cut(start, end) for start, end in zip(starts, ends, strict=True)]


def _calculation(step: TrajectoryStep, run: Run) -> str:
    """``calculate 305 - 250 = 55``: the expression and its result are meaning."""
    expression = step.arguments.get("expression")
    shown = short(run.general(str(expression)), 60) if isinstance(expression, str | int | float) else ""
    result = ""
    if step.observation and not step.error:
        try:
            number = float(step.observation.strip())
            result = f"= {scalar(int(number) if number.is_integer() else number)}"
        except (ValueError, OverflowError):
            result = f"= {short(run.general(step.observation), 20)}"
    return " ".join(part for part in ("calculate", shown, result) if part)


def preparation_between(steps: list[TrajectoryStep], run: Run) -> tuple[str, ...]:
    """The look-ups (by name) and calculations (with their result) among ``steps``, in order, each
    once, the last MAX_PREPARATION of them."""
    items: list[str] = []
    for step in steps:
        if step.action == "think":
            continue
        item = _calculation(step, run) if step.action == "calculate" else humanise_action(step.action)
        if step.error and step.action != "calculate":
            item += " (failed)"
        if item not in items:
            items.append(item)
    return tuple(items[-MAX_PREPARATION:])


def next_attempt(steps: list[TrajectoryStep], failed_index: int) -> int | None:
    """The next attempt after a failed step (rule in the package docstring)."""
    failed = steps[failed_index]
    failed_looks_up = not changes_state(failed.action)
    for index in range(failed_index + 1, len(steps)):
        action = steps[index].action
        if action == failed.action:
            return index
        if action in _PREPARATION:
            continue
        if failed_looks_up or changes_state(action):
            return index
    return None

