"""Noise-aware comparison of CI metrics (standard library only).

A rule asks whether two numbers are the SAME, DIFFERENT, or whether we CAN'T
TELL, and every answer carries a short phrase naming the noise it assumed
("±0.025 at n=1319", "±4.145 over 3+3 repeats", "tolerance ±0.01").

How ``compare(a, b)`` picks its method
--------------------------------------
All tests are two-sided; ``q`` is the quantile at ``(1 + confidence) / 2``.

1. **binomial** -- at least one side has ``n`` (an accuracy over ``n``
   questions) and both values lie in [0, 1].  ``SE = sqrt(sum p(1-p)/n)`` over
   the sides that have ``n``; a side without ``n`` is a fixed reference and
   adds nothing.  ``q`` is the normal quantile.  (When a side has both ``n``
   and repeats, ``n`` wins: repeats over the same questions are not new
   samples.)
2. **welch** -- otherwise, at least one side has two or more repeats.
   ``SE = sqrt(s1²/k1 + s2²/k2)`` with sample variances; a side with a single
   value borrows the other side's variance with ``k = 1``.  ``q`` is the
   Student t quantile with the Welch-Satterthwaite degrees of freedom (``k - 1``
   of the side with repeats when the other side borrows).  If every repeat is
   identical (zero variance), there is no noise to measure: the tolerance path
   is used when a tolerance is given, else the comparison is **exact**.
3. **tolerance** -- otherwise, when a tolerance is given: SAME if
   ``|Δ| <= tolerance`` (a relative tolerance is relative to ``b``, the
   reference), else DIFFERENT.  A given ``margin`` is ignored here.
4. **exact** -- otherwise: SAME iff ``Δ == 0`` (within 1e-12), else DIFFERENT.

With a noise band ``band = q * SE`` (methods 1 and 2), and ``Δ = a - b``:

* DIFFERENT when ``|Δ| > band``;
* SAME when ``|Δ| <= band`` and no margin is given or ``band <= margin``;
* CAN'T TELL otherwise: the difference is within noise, but the noise is wider
  than the difference that matters.  ``needed`` then says what would decide
  it: the ``n`` per run (binomial) or the repeats per side (welch) that make
  ``band <= margin``.  A tolerance is not used by methods 1 and 2.

The comparison is symmetric except for a relative tolerance (which scales
with ``b``): ``compare(a, b).delta == -compare(b, a).delta`` with the same
outcome.  "Lower is better" is the caller's business (flip the signs).

``at_least(a, limit)`` and ``below(a, limit)`` check one measure against a
fixed limit with a band from ``a`` alone (binomial, repeats with a t quantile
at ``k - 1`` degrees of freedom, or none), returning True, False or None
(can't tell) with what would decide it.

The Student t quantile comes from the regularized incomplete beta function
(Lentz continued fraction) inverted by a safeguarded Newton iteration.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Callable

__all__ = [
    "Check",
    "Comparison",
    "Measure",
    "Outcome",
    "Tolerance",
    "at_least",
    "below",
    "compare",
    "fmt",
    "fmt_delta",
    "t_quantile",
    "z_quantile",
]

_EPS = 1e-12  # absolute slack for "equal" in float comparisons
_NORMAL = statistics.NormalDist()


# --------------------------------------------------------------------------
# Values


@dataclass(frozen=True)
class Measure:
    """One side of a comparison."""

    value: float  # point estimate (the mean when there are repeats)
    n: int | None = None  # binomial sample count, if known
    repeats: tuple[float, ...] = ()  # individual values when >= 2 runs were averaged

    def __post_init__(self) -> None:
        if self.n is not None and self.n < 1:
            raise ValueError(f"sample count n must be at least 1, got {self.n}")

    @classmethod
    def of(cls, values: list[float], n: int | None = None) -> Measure:
        """Build a measure from one or more run values (the mean when several).

        ``n`` is the per-run sample count; pass it only if every run had it.
        """
        vals = [float(v) for v in values]
        if not vals:
            raise ValueError("Measure.of needs at least one value")
        if len(vals) == 1:
            return cls(vals[0], n)
        return cls(statistics.fmean(vals), n, tuple(vals))


class Outcome(str, Enum):
    """Verdict of a comparison."""

    SAME = "same"
    DIFFERENT = "different"
    CANT_TELL = "cant_tell"


@dataclass(frozen=True)
class Tolerance:
    """An absolute (``0.01``) or relative (``5%``) allowed difference."""

    amount: float
    relative: bool = False

    @classmethod
    def parse(cls, text: str | float | int) -> Tolerance:
        """Parse ``0.01``, ``"0.01"``, ``"5%"`` or ``"2.5 %"``.

        Raises ValueError for empty, non-numeric, negative or non-finite input.
        """
        if isinstance(text, bool):
            raise ValueError(f"tolerance must be a number or a percentage, got {text!r}")
        relative = False
        if isinstance(text, (int, float)):
            amount = float(text)
        else:
            s = str(text).strip()
            if s.endswith("%"):
                relative, s = True, s[:-1].strip()
            try:
                amount = float(s)
            except ValueError:
                raise ValueError(
                    f"tolerance must be a number like 0.01 or a percentage like 5%, got {text!r}"
                ) from None
            if relative:
                amount /= 100.0
        if not math.isfinite(amount):
            raise ValueError(f"tolerance must be finite, got {text!r}")
        if amount < 0:
            raise ValueError(f"tolerance must not be negative, got {text!r}")
        return cls(amount, relative)

    def absolute(self, reference: float) -> float:
        """The allowed difference around ``reference``."""
        return self.amount * abs(reference) if self.relative else self.amount

    def __str__(self) -> str:
        if self.relative:
            return _plain(round(self.amount * 100, 10)) + "%"
        return _plain(self.amount)


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare`."""

    outcome: Outcome
    delta: float  # a.value - b.value
    band: float | None  # half-width of the noise band (q*SE); None without one
    margin: float | None  # the difference that matters, if any
    method: str  # "binomial" | "welch" | "tolerance" | "exact"
    noise: str  # short phrase, e.g. "±0.025 at n=1319"
    needed: str | None = None  # for CANT_TELL: what would decide it


@dataclass(frozen=True)
class Check:
    """Result of :func:`at_least` / :func:`below`; ``result`` None = can't tell."""

    result: bool | None
    band: float | None
    noise: str
    needed: str | None = None


# --------------------------------------------------------------------------
# Formatting


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


# --------------------------------------------------------------------------
# Quantiles


def z_quantile(p: float) -> float:
    """Standard normal inverse CDF."""
    return _NORMAL.inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 20000):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betai(a: float, b: float, x: float, y: float) -> float:
    """Regularized incomplete beta I_x(a, b), with ``y = 1 - x`` given exactly."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, y) / b


def _t_sf(t: float, df: float) -> float:
    """Upper tail P(T > t) of Student's t with ``df`` degrees of freedom."""
    if t < 0:
        return 1.0 - _t_sf(-t, df)
    t2 = t * t
    return 0.5 * _betai(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2))


def _t_pdf(t: float, df: float) -> float:
    log_pdf = (
        math.lgamma((df + 1) / 2)
        - math.lgamma(df / 2)
        - 0.5 * math.log(df * math.pi)
        - (df + 1) / 2 * math.log1p(t * t / df)
    )
    return math.exp(log_pdf)


def t_quantile(p: float, df: float) -> float:
    """Student t inverse CDF; ``df`` may be fractional, ``df=inf`` is the normal."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"probability must be strictly between 0 and 1, got {p}")
    if math.isnan(df) or df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    z = z_quantile(p)
    if df > 1e5:  # Cornish-Fisher expansion: error far below 1e-9 here
        z2 = z * z
        g1 = (z2 + 1) * z / 4
        g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
        g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
        return z + g1 / df + g2 / df**2 + g3 / df**3
    # Solve log sf(t) = log(1 - p) on the bracket [lo, hi] (sf decreasing).
    target = math.log(1.0 - p)
    lo, hi = 0.0, max(2.0 * z, 1.0)
    while math.log(_t_sf(hi, df)) > target:
        lo, hi = hi, hi * 2.0
    t = min(max(z, lo), hi)
    for _ in range(200):
        sf = _t_sf(t, df)
        g = math.log(sf) - target
        if g > 0:
            lo = t
        else:
            hi = t
        step = g * sf / _t_pdf(t, df)  # Newton on the log tail
        new = t + step
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if abs(new - t) <= 1e-14 * max(1.0, abs(t)):
            return new
        t = new
    return t


def _two_sided_q(confidence: float, df: float = math.inf) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    p = (1.0 + confidence) / 2.0
    return z_quantile(p) if math.isinf(df) else t_quantile(p, df)


def _smallest(start: int, ok: Callable[[int], bool], lowest: int) -> int:
    """Smallest integer >= ``lowest`` with ``ok`` true, searching near ``start``.

    ``ok`` must be monotone (false ... false true true ...).  Galloping
    then bisecting, so a start that is far off (a value a hair away from its
    limit asks for n in the 10^30s) costs a few dozen calls, not a loop.
    """
    hi = max(lowest, start)
    step = 1
    while not ok(hi):  # gallop up to a true
        hi, step = hi + step, step * 2
    lo, step = hi - 1, 1
    while lo >= lowest and ok(lo):  # gallop down to a false (or below lowest)
        hi, lo, step = lo, lo - step, step * 2
    lo = max(lo, lowest - 1)
    while hi - lo > 1:  # invariant: ok(hi), and lo < lowest or not ok(lo)
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _ceil(x: float) -> int:
    return math.ceil(x) if math.isfinite(x) else 1


# --------------------------------------------------------------------------
# compare


def _is_prob(x: float) -> bool:
    return 0.0 <= x <= 1.0


def _runs(m: Measure) -> int:
    """Number of runs behind the value (1 without at least two repeats)."""
    return len(m.repeats) if len(m.repeats) >= 2 else 1


def _var(m: Measure) -> float:
    return statistics.variance(m.repeats) if _runs(m) >= 2 else 0.0


def compare(
    a: Measure,
    b: Measure,
    *,
    margin: float | None = None,
    tolerance: Tolerance | None = None,
    confidence: float = 0.95,
) -> Comparison:
    """Say whether ``a`` and ``b`` are the same, different, or can't tell.

    See the module docstring for the method choice and the decision rule.
    """
    if not (math.isfinite(a.value) and math.isfinite(b.value)):
        raise ValueError(f"cannot compare non-finite values {a.value!r} and {b.value!r}")
    if margin is not None and (math.isnan(margin) or margin < 0):
        raise ValueError(f"margin must not be negative, got {margin}")
    delta = a.value - b.value
    sided = [m for m in (a, b) if m.n is not None]

    if sided and _is_prob(a.value) and _is_prob(b.value):
        q = _two_sided_q(confidence)
        pq = sum(m.value * (1 - m.value) for m in sided)
        se2 = sum(m.value * (1 - m.value) / m.n for m in sided)  # type: ignore[operator]
        band = q * math.sqrt(se2)
        ns = "+".join(str(m.n) for m in sided) if a.n != b.n else str(a.n)
        noise = f"±{fmt(band)} at n={ns}"

        def needed_n() -> str | None:
            if not margin:
                return None
            n = _smallest(
                _ceil(q * q * pq / margin**2), lambda n: q * math.sqrt(pq / n) <= margin, 1
            )
            return f"n ≥ {n:,} per run"

        return _decide(delta, band, margin, "binomial", noise, needed_n)

    ka, kb = _runs(a), _runs(b)
    if ka >= 2 or kb >= 2:
        va, vb = _var(a), _var(b)
        if ka < 2:
            va = vb  # a single value borrows the other side's variance
        if kb < 2:
            vb = va
        if va > 0 or vb > 0:
            wa, wb = va / ka, vb / kb
            if ka >= 2 and kb >= 2:
                df = (wa + wb) ** 2 / (wa**2 / (ka - 1) + wb**2 / (kb - 1))
            else:
                df = max(ka, kb) - 1
            band = _two_sided_q(confidence, df) * math.sqrt(wa + wb)
            noise = f"±{fmt(band)} over {ka}+{kb} repeats"
            s2 = va + vb

            def needed_k() -> str | None:
                if not margin:
                    return None
                p = (1.0 + confidence) / 2.0
                k = _smallest(
                    _ceil(z_quantile(p) ** 2 * s2 / margin**2),
                    lambda k: t_quantile(p, 2 * k - 2) * math.sqrt(s2 / k) <= margin,
                    2,
                )
                return f"≥ {k} repeats per side"

            return _decide(delta, band, margin, "welch", noise, needed_k)
        if tolerance is None:
            same = abs(delta) <= _EPS
            outcome = Outcome.SAME if same else Outcome.DIFFERENT
            return Comparison(
                outcome, delta, 0.0, margin, "exact", f"no spread over {ka}+{kb} repeats"
            )

    if tolerance is not None:
        allowed = tolerance.absolute(b.value)
        noise = f"tolerance ±{tolerance}"
        if tolerance.relative:
            noise += f" (±{fmt(allowed)})"
        outcome = Outcome.SAME if abs(delta) <= allowed + _EPS else Outcome.DIFFERENT
        return Comparison(outcome, delta, None, allowed, "tolerance", noise)

    outcome = Outcome.SAME if abs(delta) <= _EPS else Outcome.DIFFERENT
    return Comparison(outcome, delta, None, margin, "exact", "no noise estimate")


def _decide(
    delta: float,
    band: float,
    margin: float | None,
    method: str,
    noise: str,
    needed: Callable[[], str | None],
) -> Comparison:
    if abs(delta) > band + _EPS:
        outcome = Outcome.DIFFERENT
    elif margin is None or band <= margin:
        outcome = Outcome.SAME
    else:
        return Comparison(Outcome.CANT_TELL, delta, band, margin, method, noise, needed())
    return Comparison(outcome, delta, band, margin, method, noise)


# --------------------------------------------------------------------------
# at_least / below


def _check(a: Measure, limit: float, confidence: float, upper: bool) -> Check:
    """Shared body: ``upper`` False for at_least, True for below."""
    if not math.isfinite(a.value):
        raise ValueError(f"cannot check non-finite value {a.value!r}")
    v = a.value

    def verdict(band: float) -> bool | None:
        if upper:  # below
            return True if v + band < limit else False if v - band >= limit else None
        return True if v - band >= limit else False if v + band < limit else None

    gap = abs(v - limit)
    p = (1.0 + confidence) / 2.0
    if a.n is not None and _is_prob(v):
        q = _two_sided_q(confidence)
        pq = v * (1 - v)
        band = q * math.sqrt(pq / a.n)
        noise = f"±{fmt(band)} at n={a.n}"
        result = verdict(band)
        needed = None
        if result is None and gap > 0:
            n = _smallest(
                _ceil(q * q * pq / gap**2),
                lambda n: verdict(q * math.sqrt(pq / n)) is not None,
                1,
            )
            needed = f"n ≥ {n:,}"
        return Check(result, band, noise, needed)
    k = _runs(a)
    if k >= 2:
        s = math.sqrt(_var(a))
        band = t_quantile(p, k - 1) * s / math.sqrt(k)
        noise = f"±{fmt(band)} over {k} repeats"
        result = verdict(band)
        needed = None
        if result is None and gap > 0:
            k = _smallest(
                _ceil((z_quantile(p) * s / gap) ** 2),
                lambda k: verdict(t_quantile(p, k - 1) * s / math.sqrt(k)) is not None,
                2,
            )
            needed = f"≥ {k} repeats"
        return Check(result, band, noise, needed)
    _two_sided_q(confidence)  # validate confidence even without a band
    return Check(verdict(0.0), None, "no noise estimate")


def at_least(a: Measure, limit: float, *, confidence: float = 0.95) -> Check:
    """Is ``a`` at least ``limit``?  True / False / None (can't tell)."""
    return _check(a, limit, confidence, upper=False)


def below(a: Measure, limit: float, *, confidence: float = 0.95) -> Check:
    """Is ``a`` below ``limit``?  True / False / None (can't tell)."""
    return _check(a, limit, confidence, upper=True)
