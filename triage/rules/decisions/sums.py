"""A pool's values as exact sums, kept with the pool and grown a value at a time.

A pool of a config's runs (:mod:`triage.rules.engine.pools`) is one measure,
compared with every recipe and rule that names it: its mean (``statistics.fmean``)
and its sample variance (``statistics.variance``, exact: in fractions) went through
all of its values at every evaluation, 73,000 of them for the base of a wide
investigation at a million runs, though an ``add-run`` adds one.

``statistics.variance`` works each value out as the ratio of two integers and sums,
per denominator, the numerators and their squares; the variance follows from those
sums and the count, exactly, then rounded once.  :class:`Sums` keeps the same sums
(and the lowest and highest value), so that a grown pool adds only its new values;
:meth:`Sums.mean` and :meth:`Sums.variance` are then what ``fmean`` and ``variance``
say of the values, to the last bit (the exact sum rounded once is what ``math.fsum``
gives; tested against both).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterable, Sequence


class Sums:
    """Finite values' count, and per denominator of their exact ratios the sum of the
    numerators and of their squares; their lowest and highest."""

    __slots__ = ("count", "sx", "sxx", "lo", "hi")

    def __init__(self, count: int = 0, sx: dict[int, int] | None = None, sxx: dict[int, int] | None = None,
                 lo: float = math.inf, hi: float = -math.inf) -> None:
        self.count, self.lo, self.hi = count, lo, hi
        self.sx: dict[int, int] = sx if sx is not None else {}
        self.sxx: dict[int, int] = sxx if sxx is not None else {}

    @classmethod
    def of(cls, values: Sequence[float]) -> Sums:
        return cls().plus(values)

    def plus(self, values: Sequence[float]) -> Sums:
        """These sums with ``values`` added (a new object: a kept pool's are shared)."""
        sx, sxx = dict(self.sx), dict(self.sxx)
        for value in values:
            n, d = value.as_integer_ratio()
            sx[d] = sx.get(d, 0) + n
            sxx[d] = sxx.get(d, 0) + n * n
        if not values:
            return Sums(self.count, sx, sxx, self.lo, self.hi)
        return Sums(self.count + len(values), sx, sxx, min(self.lo, min(values)), max(self.hi, max(values)))

    def _total(self) -> Fraction:
        return sum((Fraction(n, d) for d, n in self.sx.items()), Fraction(0))

    def mean(self) -> float:
        """``statistics.fmean`` of the values: their exact sum, rounded once, over their count."""
        return float(self._total()) / self.count

    def variance(self) -> float:
        """``statistics.variance`` of the values (at least two): exact, rounded once."""
        sx = self._total()
        sxx = sum((Fraction(n, d * d) for d, n in self.sxx.items()), Fraction(0))
        ssd = (self.count * sxx - sx * sx) / self.count
        return float(ssd / (self.count - 1))

    def spread(self) -> tuple[float, float]:
        """What :attr:`triage.rules.decisions.stats.Measure.spread` says of the values."""
        return self.variance(), self.hi - self.lo

    def encoded(self) -> list:
        """As a stored piece keeps them: integers of any size as text."""
        return [self.count, self.lo, self.hi, [[str(d), str(n), str(self.sxx[d])] for d, n in self.sx.items()]]

    @classmethod
    def decoded(cls, row: Sequence) -> Sums:
        count, lo, hi, parts = row
        return cls(count, {int(d): int(n) for d, n, _ in parts}, {int(d): int(nn) for d, _, nn in parts}, lo, hi)


def exact_values(values: Iterable[float]) -> bool:
    """Whether every value is a finite float (what :class:`Sums` holds, as a pool's are)."""
    return all(type(v) is float and math.isfinite(v) for v in values)
