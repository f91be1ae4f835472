"""Fails a test that drops a Neo4j session or driver it opened without closing it.

neo4j's own signal, an "unclosed Session" ResourceWarning from ``__del__``, is ignored by default
and, raised from a finalizer, cannot fail anything. Here the driver's session and driver classes
(sync and async) are wrapped once: each object made while a test runs carries that test's token,
and a close() called on it marks it. When one is freed while its test still runs, never closed,
the test fails at teardown, naming where the object was opened.

It flags only what is certain: an object still referenced at teardown (a fixture's, a worker
abandoned on a frozen server) is not freed, so not flagged; nor is one freed after its test ended
(a reference cycle collected later); one whose close() was called but raised (the server gone) is
not flagged either.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import neo4j
import pytest

TESTS = str(Path(__file__).resolve().parent)


class _Watch:
    token: object | None = None
    leaked: list[str] = []


def _opened_at() -> str:
    """The innermost line of the tests that opened the object (else the outermost frame's)."""
    frame = sys._getframe(2)
    last = frame
    while frame is not None:
        if frame.f_code.co_filename.startswith(TESTS) and frame.f_code.co_filename != __file__:
            return f"{Path(frame.f_code.co_filename).relative_to(Path(TESTS).parent)}:{frame.f_lineno}"
        last, frame = frame, frame.f_back
    return f"{last.f_code.co_filename}:{last.f_lineno}"


def _wrap(cls: type, close_name: str) -> None:
    init: Callable[..., None] = cls.__init__  # type: ignore[misc]
    delete: Callable[[Any], None] = cls.__del__  # type: ignore[attr-defined]
    close: Callable[..., Any] = getattr(cls, close_name)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        self._test_token, self._test_close_called = _Watch.token, False
        if _Watch.token is not None:
            self._test_opened_at = _opened_at()
        init(self, *args, **kwargs)

    def closing(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._test_close_called = True
        return close(self, *args, **kwargs)

    def __del__(self: Any, *args: Any) -> None:
        token = getattr(self, "_test_token", None)
        if token is not None and token is _Watch.token and not getattr(self, "_test_close_called", True) \
                and not getattr(self, "_closed", True):
            _Watch.leaked.append(f"{type(self).__name__} opened at {self._test_opened_at}")
        delete(self, *args)

    cls.__init__ = __init__  # type: ignore[misc]
    cls.__del__ = __del__  # type: ignore[attr-defined]
    setattr(cls, close_name, closing)


# A session's __exit__ calls its close().
for _cls in (neo4j.Session, neo4j.AsyncSession, neo4j.Driver, neo4j.AsyncDriver):
    _wrap(_cls, "close")


@pytest.fixture(autouse=True)
def neo4j_sessions_closed() -> Iterator[None]:
    """Fails the test when a session or driver it opened was freed unclosed (see the module)."""
    _Watch.token, _Watch.leaked = object(), []
    try:
        yield
        leaked = list(_Watch.leaked)
    finally:
        _Watch.token = None
    if leaked:
        pytest.fail("opened and never closed (use `with`): " + "; ".join(sorted(set(leaked))), pytrace=False)
