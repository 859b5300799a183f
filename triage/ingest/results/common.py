"""What a results file gave, whatever its format."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from triage.numbers import in_range

__all__ = ["Found", "metric_name", "number"]

_BAD = re.compile(r"[^A-Za-z0-9_.:-]")


@dataclass
class Found:
    """One file's metrics (name -> ``{value, n}``), repeats (name -> values of
    the run's repetitions), a status (JUnit: a failed or errored test fails the
    run), provenance, and the lines that say what was read."""

    metrics: dict[str, dict] = field(default_factory=dict)
    repeats: dict[str, list[float]] = field(default_factory=dict)
    status: Optional[str] = None
    provenance: dict[str, str] = field(default_factory=dict)
    said: list[str] = field(default_factory=list)

    def add(self, name: str, value: float, n: Optional[int] = None) -> None:
        self.metrics[unique(name, self)] = {"value": value} | ({"n": n} if n is not None else {})


def metric_name(text: str) -> str:
    """``text`` as a metric name: each character a name cannot hold becomes ``_``,
    and a name that does not start with a letter gets ``t_`` before it."""
    name = _BAD.sub("_", text.strip())
    return name if name[:1].isalpha() and name[:1].isascii() else "t_" + name


def unique(name: str, found: Found) -> str:
    """``name``, or ``name:2``, ``name:3``… when the file already gave it."""
    if name not in found.metrics and name not in found.repeats:
        return name
    k = 2
    while f"{name}:{k}" in found.metrics or f"{name}:{k}" in found.repeats:
        k += 1
    return f"{name}:{k}"


def number(value: Any) -> Optional[float]:
    """``value`` as a finite number in range, or None (text, booleans, NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        v = float(value)
    except OverflowError:
        return None
    return v if in_range(v) else None
