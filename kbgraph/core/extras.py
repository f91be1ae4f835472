"""kbgraph's optional extras (``[project.optional-dependencies]`` in pyproject.toml). The core
imports none of their modules; a feature that needs one asks for it through :func:`require`,
which fails with one line naming the extra to install instead of a traceback from deep inside."""

from __future__ import annotations

import importlib
from types import ModuleType

from kbgraph.core.errors import KbgraphError

__all__ = ["MissingExtraError", "require"]


class MissingExtraError(KbgraphError):
    """A feature was used whose optional dependencies are not installed."""


def require(module: str, extra: str, feature: str) -> ModuleType:
    """``module`` imported, or MissingExtraError: "FEATURE needs the 'EXTRA' extra (… is not
    installed): pip install 'kbgraph[EXTRA]'"."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(f"{feature} needs the {extra!r} extra ({exc.name or module} is not installed): "
                                f"pip install 'kbgraph[{extra}]'") from None
