"""A request split into its asks by the configured LLM (setting ``ask_splitter = "llm"``), the rules'
split (:func:`kbgraph.search.asks.split_asks`) whenever the model gives nothing usable.

The rules cut a request at sentence ends, joining words and "and" before a verb of change. They
cannot see one verb governing several changes ("Open me a credit card and a savings account"), or
changes named without a verb ("new savings and checking accounts, a credit card, and my old
checking account closed"), which a model reads as the customer meant them. The model answers a
fixed JSON shape (:class:`AskAnswer`): the asks, in the order asked, each in the request's own
words. An answer is refused — and the rules' split used — when it holds no ask or more than
:data:`~kbgraph.search.asks.MAX_ASKS`, lists an ask twice, or when an ask holds words the request does not (a model
that rewrites "scrap my booking" as "cancel the reservation" would match the operations' words
instead of the customer's, which the intent match measures on its own). The endpoint failing,
timing out or answering nonsense costs the search nothing but the wait: the rules answer.

Each distinct request is asked once per process (a small cache): an agent that searches again with
the same request waits once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import lru_cache
from threading import Lock
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from kbgraph.llm import LLMClient, LLMError
from kbgraph.search.asks import MAX_ASKS

if TYPE_CHECKING:
    from kbgraph.core.settings import Settings

__all__ = ["SYSTEM_PROMPT", "AskAnswer", "LLMAskSplitter", "ask_splitter_from_settings", "foreign_words"]

SYSTEM_PROMPT = """\
You split a customer's request to a support agent into its asks: each change the customer wants \
made, or question they want answered, one ask per change, in the order they asked. Keep the \
customer's own words: copy each ask's words from the request, do not rephrase, explain or add \
anything. A detail of an ask (which order or booking, a date, a size, how to pay or be refunded) \
belongs to that ask, not to an ask of its own. When one verb asks for several changes ("open a \
savings account and a credit card"), repeat the verb: "open a savings account", "open a credit \
card". A greeting or a reason is no ask. A request that asks one thing is one ask."""

#: Words an ask may hold that its request does not: the verb the model repeats for each change
#: ("open" of "open a savings account and a credit card" is the request's) and small words of
#: joining. Anything else new is the model's, not the customer's.
_JOINING = frozenset("a an the and to my me i please also of for".split())
_WORD = re.compile(r"[a-z0-9]+")
#: Distinct requests whose split is kept in the process.
CACHED_REQUESTS = 256


class AskAnswer(BaseModel):
    """What the model answers: the request's asks, in order."""

    model_config = ConfigDict(extra="ignore")

    asks: list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=2000)]] = Field(
        min_length=1, max_length=MAX_ASKS)


def foreign_words(ask: str, request: str) -> list[str]:
    """The words of ``ask`` that ``request`` does not hold (small joining words aside), in order."""
    held = set(_WORD.findall(request.lower())) | _JOINING
    return [word for word in _WORD.findall(ask.lower()) if word not in held]


_LOG = logging.getLogger(__name__)


class LLMAskSplitter:
    """Splits a request into its asks with ``client``; None when the model gives nothing usable (the
    caller then splits by rule). Thread-safe; counts the requests it asked the model about
    (``asked``) and those the rules answered instead (``failed``: every answer refused, or the
    endpoint failed; the first failure of each kind is logged)."""

    def __init__(self, client: LLMClient, cached: int = CACHED_REQUESTS):
        self.client = client
        # Each distinct request asked once (the least recently used forgotten past ``cached``).
        self._split = lru_cache(maxsize=cached)(self._ask)
        self._lock = Lock()
        self.asked = 0
        self.failed = 0
        self._logged: set[str] = set()

    def __call__(self, request: str) -> list[str] | None:
        text = " ".join(request.split())
        return self._split(text) if text else None

    def _ask(self, text: str) -> list[str] | None:
        with self._lock:
            self.asked += 1
        try:
            answer = self.client.complete_json(SYSTEM_PROMPT, f"Request: {text}", AskAnswer, check=_checker(text))
        except LLMError as error:
            # Every answer refused (shape or words), or the endpoint failed: the rules answer.
            with self._lock:
                self.failed += 1
                first = type(error).__name__ not in self._logged
                self._logged.add(type(error).__name__)
            if first:
                _LOG.warning("kbgraph: the LLM did not split a request into its asks (%s); the rules split it", error)
            return None
        return [" ".join(ask.split()) for ask in answer.asks]


def _checker(request: str) -> Callable[[AskAnswer], str | None]:
    """Refuses an answer (asked again, up to the client's attempts) that lists an ask twice or whose
    asks hold words the request does not."""

    def check(answer: AskAnswer) -> str | None:
        said = [" ".join(ask.lower().split()) for ask in answer.asks]
        if len(set(said)) < len(said):
            return "an ask is listed twice; list each ask once"
        for ask in answer.asks:
            foreign = foreign_words(ask, request)
            if foreign:
                return f"the ask {ask!r} holds words the request does not: {', '.join(foreign[:5])}; copy the request's words"
        return None
    return check


def ask_splitter_from_settings(settings: Settings) -> LLMAskSplitter | None:
    """The LLM splitter of the configured endpoint when ``ask_splitter`` is ``llm``, else None (the
    rules split every request)."""
    if settings.ask_splitter != "llm":
        return None
    return LLMAskSplitter(LLMClient.from_settings(settings))
