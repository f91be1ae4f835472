"""Figures of benchmark timings: percentiles of a list of times, and how a time grows each time the
knowledge base doubles. Pure; every benchmark prints these."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = ["Figure", "growth_per_doubling", "growth_rows", "ms_text", "p50_p95_text", "percentiles"]


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99 and mean (linear interpolation), rounded to 0.01; zeros for no values."""
    if not values:
        return {"n": 0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "mean": 0.0, "max": 0.0}
    data = np.asarray(values, dtype=np.float64)
    p50, p95, p99 = np.percentile(data, [50, 95, 99])
    return {"n": len(values), "p50": round(float(p50), 3), "p95": round(float(p95), 3), "p99": round(float(p99), 3),
            "mean": round(float(data.mean()), 3), "max": round(float(data.max()), 3)}


def growth_per_doubling(small: tuple[int, float], large: tuple[int, float]) -> float | None:
    """How much a time grows each time the KB doubles: (t₂/t₁)^(1/log₂(n₂/n₁))."""
    (n1, t1), (n2, t2) = small, large
    if n1 <= 0 or n2 <= n1 or t1 <= 0 or t2 <= 0:
        return None
    return float((t2 / t1) ** (1 / math.log2(n2 / n1)))


def growth_rows(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Growth between successive sizes at least a doubling apart (closer sizes only amplify noise)."""
    ordered = sorted(runs, key=lambda r: int(r["experiences"]))
    rows: list[dict[str, Any]] = []
    for a, b in zip(ordered, ordered[1:], strict=False):
        if int(b["experiences"]) < 2 * int(a["experiences"]):
            continue
        row: dict[str, Any] = {"from": a["experiences"], "to": b["experiences"]}
        for system in ("kbgraph_ms", "brute_force_ms"):
            for stat in ("p50", "p95"):
                g = growth_per_doubling((a["experiences"], a[system][stat]), (b["experiences"], b[system][stat]))
                row[f"{system.removesuffix('_ms')}_{stat}"] = round(g, 3) if g is not None else None
        rows.append(row)
    return rows


@dataclass(frozen=True)
class Figure:
    """One row of a benchmark's table: what was measured, its baseline from the same run, its target."""

    figure: str
    measured: str
    baseline: str
    target: str
    met: bool | None  # None: no target at this size

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ms_text(value: float) -> str:
    """Milliseconds as a table shows them."""
    return f"{value:.1f}"


def p50_p95_text(stats: dict[str, Any]) -> str:
    """``p50 · p95 ms`` of :func:`percentiles`' figures."""
    return f"{ms_text(stats['p50'])} · {ms_text(stats['p95'])} ms"
