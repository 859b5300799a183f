"""Numbers in words: a metric's value, a difference, a p-value, degrees of freedom."""

from __future__ import annotations

import math
from decimal import Decimal


def _plain(x: float) -> str:
    """Shortest decimal text of ``x``, never in scientific notation."""
    text = format(Decimal(repr(float(x))), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt(x: float) -> str:
    """Format a metric: 3 decimals below 10, then 2, then 1, then none."""
    if not math.isfinite(x):
        return str(x)
    for limit, digits in ((10.0, 3), (100.0, 2), (1e6, 1), (math.inf, 0)):
        text = f"{x:.{digits}f}"
        if abs(float(text)) < limit:  # 9.9996 -> "10.00", not "10.000"
            break
    if text.startswith("-") and float(text) == 0:
        text = text[1:]  # no "-0.000"
    return text


def fmt_delta(x: float) -> str:
    """Format a difference, always signed ("+0.001", "-0.065", "+0.000")."""
    text = fmt(x)
    return text if text.startswith("-") else "+" + text


def _fmt_p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def _fmt_df(df: float) -> str:
    return str(int(df)) if float(df).is_integer() else f"{df:.1f}"
