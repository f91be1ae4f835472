"""Reading what decays by calendar day, twice, within one UTC day.

Utility decays by whole calendar days (UTC), so two ways of asking it a few seconds apart give the
same number — unless UTC midnight falls between them: then every experience is a day older for
the second. Tests that compare such readings exactly read them with :func:`on_one_utc_day`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import TypeVar

T = TypeVar("T")


def utc_today() -> date:
    return datetime.now(UTC).date()


def on_one_utc_day(read: Callable[[], T], today: Callable[[], date] = utc_today) -> T:
    """``read()``, done again when UTC midnight passed while it ran (the second time starts on the
    new day). ``read`` must not change what it reads."""
    day = today()
    value = read()
    if today() == day:
        return value
    return read()
