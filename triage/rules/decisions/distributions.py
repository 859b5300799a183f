"""Distributions behind the noise model (standard library only).

Student t quantiles (regularized incomplete beta by a Lentz continued
fraction, inverted by a safeguarded Newton iteration), Wilson score intervals
for a proportion, Newcombe's hybrid score interval for a difference of two
proportions, and Fisher's exact test.  The tests check them against scipy.
"""

from __future__ import annotations

import functools
import math
import statistics
from typing import Callable

_NORMAL = statistics.NormalDist()


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


@functools.lru_cache(maxsize=4096)  # the search for the repeats that would decide asks the same df again
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
        return _cornish_fisher(z, df)
    # Newton on log sf(t) = log(1 - p), safeguarded by the bracket [lo, hi] the iterates give
    # (sf decreasing), from the expansion: within 1e-4 from 10 degrees of freedom on, 1e-11
    # from 800, so that a step or two lands (each a continued fraction of up to hundreds of
    # terms).  Near the root Newton's error squares each step: once a step is below 1e-7
    # the next would be below the last bits, and is not taken.
    target = math.log(1.0 - p)
    lo, hi = 0.0, math.inf
    t = _cornish_fisher(z, df) if df >= 3 else z
    for _ in range(200):
        sf = _t_sf(t, df)
        g = math.log(sf) - target
        if g == 0:
            return t
        if g > 0:
            lo = t
        else:
            hi = t
        step = g * sf / _t_pdf(t, df)  # the sign of g: past lo when g > 0, short of hi when g < 0
        new = t + step
        if abs(step) <= 1e-7 * max(1.0, abs(t)):  # converged (a step below a float's leaves t as it is)
            return new
        if not lo < new < hi:  # only below 0 (a step back from far too high): halve
            new = 0.5 * (lo + hi)
        if abs(new - t) <= 1e-14 * max(1.0, abs(t)):
            return new
        t = new
    return t


def _cornish_fisher(z: float, df: float) -> float:
    """The t quantile at the normal's ``z`` to three terms in 1/df (an error in 1/df⁴)."""
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    inv = 1.0 / df  # powers of 1/df, not of df: a df of 1e150 (one side's variance near 0) overflows
    return z + (g1 + (g2 + g3 * inv) * inv) * inv


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
# Proportions


def wilson(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson score interval for a proportion ``p`` observed over ``n``.

    Never zero-width while ``n`` is finite: at 0/n it is [0, z²/(n+z²)].
    """
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(p1: float, n1: float, p2: float, n2: float, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval for ``p1 - p2`` (his method 10)."""
    l1, u1 = wilson(p1, n1, z)
    l2, u2 = wilson(p2, n2, z)
    d = p1 - p2
    return d - math.hypot(p1 - l1, u2 - p2), d + math.hypot(u1 - p1, p2 - l2)


_LOG_FACTORIALS: list[float] = [0.0]


def _log_factorials(n: int) -> list[float]:
    """``log(i!)`` for i up to ``n`` at least, each ``math.lgamma(i + 1)``: the same values, looked up."""
    table = _LOG_FACTORIALS
    if len(table) <= n:
        table.extend(math.lgamma(i + 1) for i in range(len(table), n + 1))
    return table


#: Terms of Fisher's sum this far (in natural log) below the observed table's are left out:
#: together they are below e^-100 of the sum, far under a double's last bit.
_NEGLIGIBLE = 100.0


@functools.lru_cache(maxsize=65536)
def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test for k1/n1 against k2/n2.

    The sum of the hypergeometric probabilities of every table no more likely
    than the one observed (with scipy's relative slack of 1e-7).  Only the
    tables within e^100 of the observed one's probability are summed: the
    probabilities fall away from the mode on both sides, so the others lie in
    the far tails, where together they cannot move the sum (``math.fsum``,
    exactly rounded) by a representable amount.  At n = 1000 a side that is
    about 200 tables instead of 2000.
    """
    if not (0 <= k1 <= n1 and 0 <= k2 <= n2):
        raise ValueError(f"counts out of range: {k1}/{n1}, {k2}/{n2}")
    total, successes = n1 + n2, k1 + k2
    lo, hi = max(0, successes - n2), min(n1, successes)
    lf = _log_factorials(total)
    denom = lf[total] - lf[successes] - lf[total - successes]
    d = n2 - successes

    def logp(x: int) -> float:  # as the whole sum works it out, to the bit
        return (lf[n1] - lf[x] - lf[n1 - x]) + (lf[n2] - lf[successes - x] - lf[d + x]) - denom

    observed = logp(k1)
    cut = observed + math.log1p(1e-7)
    floor = cut - _NEGLIGIBLE
    mode = min(hi, max(lo, (n1 + 1) * (successes + 1) // (total + 2)))
    first = _crossing(logp, lo, mode, floor, rising=True)
    last = _crossing(logp, mode, hi, floor, rising=False)
    logs = [logp(x) for x in range(first, last + 1)]
    return min(1.0, math.fsum(math.exp(v) for v in logs if v <= cut))


def _crossing(f: Callable[[int], float], lo: int, hi: int, floor: float, *, rising: bool) -> int:
    """On ``[lo, hi]``, where ``f`` rises (``rising``) or falls: the first x (rising) or the
    last (falling) with ``f(x) > floor``; the mode's end (``hi`` rising, ``lo`` falling) is one."""
    inside, outside = (hi, lo) if rising else (lo, hi)
    if f(outside) > floor:
        return outside
    while abs(inside - outside) > 1:  # f(inside) > floor >= f(outside)
        mid = (inside + outside) // 2
        if f(mid) > floor:
            inside = mid
        else:
            outside = mid
    return inside
