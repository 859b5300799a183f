"""The range of numbers triage computes with.

A metric value, a gate, a reference or a condition's threshold lies within
±10^15: past that a float no longer holds every whole number, and sums,
spreads and chart scales of such values overflow.  Values outside are
refused where they enter (rule files, records, flags; a log line's match
does not count), so that one line such as ``acc=1.7e308`` cannot make an
investigation unreportable.  README.md ("Limits") documents the range.
"""

from __future__ import annotations

import math
from typing import Any, Optional

__all__ = ["MAGNITUDE", "out_of_range", "in_range"]

#: The largest magnitude of a value (module-level so a test can lift it).
MAGNITUDE = 1e15
#: The smallest magnitude of a value other than zero.
SMALLEST = 0.0


def out_of_range(value: Any) -> Optional[str]:
    """Why ``value`` (an int or a float) is no number triage computes with, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "expected a finite number"
    if abs(value) > MAGNITUDE:
        return f"out of range: numbers lie within ±{MAGNITUDE:g}"
    if value and abs(value) < SMALLEST:
        return f"out of range: numbers other than 0 are at least {SMALLEST:g} in size"
    return None


def in_range(value: float) -> bool:
    """Whether :func:`out_of_range` finds nothing wrong with ``value``: a float is
    checked here at once (every metric of every run read is asked about)."""
    if type(value) is float:  # NaN fails both comparisons, an infinity the first
        return -MAGNITUDE <= value <= MAGNITUDE and (not value or abs(value) >= SMALLEST)
    return out_of_range(value) is None
