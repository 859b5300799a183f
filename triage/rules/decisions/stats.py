"""Noise-aware comparison of CI metrics (standard library only).

A rule asks whether two numbers are the SAME, DIFFERENT, or whether we CAN'T
TELL, and every answer carries a short phrase naming the method and the noise
it assumed ("±0.025 at n=1319, Fisher p < 0.001", "±8.9 over 2 repeats (t, 1 df)",
"±7.4 from tolerance ±0.5%").

How ``compare(a, b)`` picks its method
--------------------------------------
All intervals are two-sided at ``confidence``; ``z`` is the normal quantile.

1. **Fisher + Newcombe** -- both sides are proportions (a value with ``n``,
   in [0, scale]).  DIFFERENT when Fisher's exact test on the counts
   (k = round(p n)) gives p < 1 - confidence; the band is Newcombe's hybrid
   score interval for the difference (from two Wilson intervals).
2. **Wilson** -- one side is a proportion, the other a fixed number (or a
   value without ``n``): the Wilson score interval of the proportion.
   Neither interval is ever zero-width while n is finite.
3. **noise / tolerance / t** -- otherwise each side gets a per-run variance:
   a fixed reference (a number in the rule file) none; a side with a known
   run-to-run noise (``Measure.noise``, an SD) that noise, or, without one,
   the tolerance read as the band of one run (SD = tolerance / z); repeats
   whose spread stays within that noise keep it (the band shrinks as 1/√k),
   repeats that disagree beyond it use their sample variance with a t
   quantile (Welch-Satterthwaite degrees of freedom).  Without any noise,
   repeats use their sample variance (t), and a single run borrows the other
   side's variance.  Band = q·√(Σ var/k).
4. **exact** -- no noise anywhere: SAME iff Δ == 0.

Decision, from the interval [lo, hi] of Δ = a - b and the ``margin`` m (the
difference that matters; 0 without one): SAME when the whole interval lies
within ±m (two one-sided tests: "not shown different" is never "the same";
without a margin only an exact equality is); else DIFFERENT when the interval
excludes 0 (method 1: by Fisher's p); else CAN'T TELL, with ``needed`` saying
what would decide it at the current estimate (n per run, or repeats).
``beyond_margin`` says the interval lies wholly outside ±m.

``judge`` reads a comparison for a direction ("higher" or "lower" is better):
better_than, worse_than, no_worse_than, passes, fails, each holds, contradicted
or can't tell (the table in its docstring and in the README).  ``at_least`` and
``below`` check one measure against a fixed limit with the same band.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Callable, Optional

from triage.rules.decisions.formats import _fmt_df, _fmt_p, _plain, fmt, fmt_delta  # noqa: F401  (re-exported)
from triage.rules.decisions.distributions import (
    _ceil,
    _smallest,
    _two_sided_q,
    fisher_exact,
    newcombe,
    t_quantile,
    wilson,
    z_quantile,
)

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
    "judge",
    "t_quantile",
    "z_quantile",
]

_EPS = 1e-12  # absolute slack for "equal" in float comparisons
_INF = math.inf


# --------------------------------------------------------------------------
# Values


@dataclass(frozen=True)
class Measure:
    """One side of a comparison."""

    value: float  # point estimate (the mean when there are repeats)
    n: int | None = None  # binomial sample count, if known
    repeats: tuple[float, ...] = ()  # individual values when >= 2 runs were averaged
    noise: float | None = None  # known run-to-run SD of one run (absolute)
    fixed: bool = False  # a number given in a rule file: it adds no variance
    scale: float = 1.0  # a proportion's full scale: 1, or 100 for percentages

    def __post_init__(self) -> None:
        if self.n is not None and self.n < 1:
            raise ValueError(f"sample count n must be at least 1, got {self.n}")
        if self.noise is not None and not (math.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"noise must be a finite SD >= 0, got {self.noise}")
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale must be positive, got {self.scale}")

    @classmethod
    def of(cls, values: list[float], n: int | None = None, *, noise: float | None = None,
           scale: float = 1.0, sums: Any = None) -> Measure:
        """Build a measure from one or more run values (the mean when several).

        ``n`` is the per-run sample count; pass it only if every run had it.  ``sums``: the
        values' exact sums (:class:`triage.rules.decisions.sums.Sums`, kept with a pool),
        which give their mean and spread without going through them.
        """
        vals = [float(v) for v in values]
        if not vals:
            raise ValueError("Measure.of needs at least one value")
        if len(vals) == 1:
            return cls(vals[0], n, (), noise, False, scale)
        if sums is None:
            return cls(statistics.fmean(vals), n, tuple(vals), noise, False, scale)
        made = cls(sums.mean(), n, tuple(vals), noise, False, scale)
        made.__dict__["spread"] = sums.spread()  # as the cached property would say
        return made

    @property
    def runs(self) -> int:
        """Number of runs behind the value (1 without at least two repeats)."""
        return len(self.repeats) if len(self.repeats) >= 2 else 1

    @property
    def values(self) -> tuple[float, ...]:
        return self.repeats if len(self.repeats) >= 2 else (self.value,)

    @functools.cached_property
    def spread(self) -> tuple[float, float]:
        """The repeats' sample variance (exact: in fractions) and their range, worked out once
        per measure: a pool of a config's 100,000 runs is one measure, compared with each of
        the recipes and rules that name it, each comparison asking for both sides' noise."""
        return _variance(self.repeats), max(self.repeats) - min(self.repeats)

    @property
    def proportion(self) -> bool:
        """A sample proportion: it has ``n`` and lies in [0, scale]."""
        return self.n is not None and not self.fixed and 0.0 <= self.value / self.scale <= 1.0

    def __hash__(self) -> int:
        """The fields' hash (as a frozen dataclass's), worked out once: a pool's measure holds
        each of its thousands of runs' values, and every comparison, cached by its two
        measures, hashed them all again."""
        h = self.__dict__.get("_hash")
        if h is None:
            h = self.__dict__["_hash"] = hash((self.value, self.n, self.repeats, self.noise, self.fixed, self.scale))
        return h


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
    band: float | None  # half-width of the noise band; None without one
    margin: float | None  # the difference that matters, if any
    method: str  # "fisher" | "wilson" | "noise" | "tolerance" | "t" | "exact"
    noise: str  # short phrase, e.g. "±0.025 at n=1319, Fisher p < 0.001"
    needed: str | None = None  # for CANT_TELL: what would decide it
    lo: float | None = None  # the interval of delta (exact: delta itself)
    hi: float | None = None
    p: float | None = None  # Fisher's p-value (method "fisher")
    different: bool = False  # shown different: the interval excludes 0 (two proportions: Fisher's p)

    @property
    def beyond_margin(self) -> bool:
        """Shown different by more than the margin: the interval lies wholly outside ±margin
        (without a margin: shown different at all)."""
        if not self.margin:
            return self.different
        lo = self.delta if self.lo is None else self.lo
        hi = self.delta if self.hi is None else self.hi
        return lo > self.margin + _EPS or hi < -self.margin - _EPS


@dataclass(frozen=True)
class Check:
    """Result of :func:`at_least` / :func:`below`; ``result`` None = can't tell."""

    result: bool | None
    band: float | None
    noise: str
    needed: str | None = None


# --------------------------------------------------------------------------
# The noise of each side


@dataclass(frozen=True)
class _Side:
    k: int  # runs behind the value
    var: float  # per-run variance (0: none)
    df: float  # degrees of freedom of var (inf: known)
    kind: str  # "fixed" | "noise" | "tolerance" | "t" | "none"


def _side(m: Measure, tol_sd: float | None, z: float) -> _Side:
    k = m.runs
    if m.fixed:
        return _Side(1, 0.0, _INF, "fixed")
    sigma, kind = (m.noise, "noise") if m.noise else (tol_sd, "tolerance") if tol_sd else (None, "none")
    if k >= 2:
        s2, spread = m.spread
        if sigma is not None:
            if spread <= z * sigma * math.sqrt(2) + _EPS or s2 <= sigma**2:
                return _Side(k, sigma**2, _INF, kind)  # repeats agree: the known noise holds
            return _Side(k, s2, k - 1, "t")  # they disagree beyond it: their own spread
        return _Side(k, s2, k - 1, "t") if s2 > 0 else _Side(k, 0.0, _INF, "none")
    return _Side(1, sigma**2, _INF, kind) if sigma is not None else _Side(1, 0.0, _INF, "none")


@functools.lru_cache(maxsize=256)
def _variance(repeats: tuple[float, ...]) -> float:
    """The sample variance of repeats (exact: in fractions), once for each pool: a pool
    of a config's runs, compared with each of the recipes that name it, is one tuple."""
    return statistics.variance(repeats)


def _sides(a: Measure, b: Measure, tolerance: Tolerance | None, z: float) -> tuple[_Side, _Side, bool]:
    """Both sides' noise; a single run with none borrows the other side's (third: borrowed)."""
    tol_sd = tolerance.absolute(b.value) / z if tolerance is not None else None
    sa, sb = _side(a, tol_sd, z), _side(b, tol_sd, z)
    if sa.kind == "none" and sa.k == 1 and sb.var > 0:
        return _Side(1, sb.var, sb.df, sb.kind), sb, True
    if sb.kind == "none" and sb.k == 1 and sa.var > 0:
        return sa, _Side(1, sa.var, sa.df, sa.kind), True
    return sa, sb, False


def _band_at(sa: _Side, sb: _Side, borrowed: bool, p: float, k: int | None = None) -> float:
    """q·SE, with ``k`` runs on every non-fixed side when given (t sides then have k - 1 df)."""
    def n_of(s: _Side) -> int:
        return s.k if k is None or s.kind == "fixed" else k

    def df_of(s: _Side) -> float:
        return s.df if k is None or not math.isfinite(s.df) else k - 1

    w = [(s.var / n_of(s), df_of(s)) for s in (sa, sb) if s.var > 0]
    se2 = sum(x for x, _ in w)
    df = next((d for _, d in w if math.isfinite(d)), _INF) if borrowed else _welch_df(w)
    q = z_quantile(p) if math.isinf(df) else t_quantile(p, df)
    return q * math.sqrt(se2)


def _welch_df(w: list[tuple[float, float]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of variances ``(var/k, df)``."""
    top = max((x for x, _ in w), default=0.0)
    if top <= 0:
        return _INF
    u = [(x / top, d) for x, d in w]  # scaled: tiny variances must not underflow
    den = sum(x * x / d for x, d in u if math.isfinite(d))
    return sum(x for x, _ in u) ** 2 / den if den > 0 else _INF


# --------------------------------------------------------------------------
# compare


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
    return _compare_once(a, b, margin, tolerance, confidence, _kind(a), _kind(b))


def _kind(m: Measure) -> tuple:
    """What equal measures may still differ in: the type and sign of their value
    (``1`` and ``1.0``, ``0.0`` and ``-0.0`` compare equal but print apart)."""
    return type(m.value), math.copysign(1.0, m.value) if isinstance(m.value, float) else 1.0


@functools.lru_cache(maxsize=16384)
def _compare_once(a: Measure, b: Measure, margin: float | None, tolerance: Tolerance | None, confidence: float,
                  *_kinds: Any) -> Comparison:
    """:func:`compare`, once per distinct question: runs judged one by one (a bisect's
    points, repeats) mostly ask the same few."""
    if not (math.isfinite(a.value) and math.isfinite(b.value)):
        raise ValueError(f"cannot compare non-finite values {a.value!r} and {b.value!r}")
    if margin is not None and (math.isnan(margin) or margin < 0):
        raise ValueError(f"margin must not be negative, got {margin}")
    return _pooled(a, b, margin, tolerance, confidence)


def shown_different(a: Measure, b: Measure, *, tolerance: Tolerance | None = None,
                    confidence: float = 0.95) -> bool:
    """``compare(a, b).different``: whether the two are shown different at all.  Two
    proportions ask Fisher's test alone, without the rest of a comparison (its
    interval, its words): a pass over thousands of pairs, most of them not different,
    asks for the whole comparison of the few that are."""
    if a.proportion and b.proportion and math.isfinite(a.value) and math.isfinite(b.value):
        return _fisher_p(a, b) < 1.0 - confidence
    return compare(a, b, tolerance=tolerance, confidence=confidence).different


def _fisher_p(a: Measure, b: Measure) -> float:
    """Fisher's p for two proportions, their counts rounded from value × n."""
    na, nb = a.n or 1, b.n or 1
    return fisher_exact(round(a.value / a.scale * na), na, round(b.value / b.scale * nb), nb)


def _pooled(a: Measure, b: Measure, margin: float | None, tolerance: Tolerance | None,
            confidence: float) -> Comparison:
    delta = a.value - b.value
    p = (1.0 + confidence) / 2.0
    z = _two_sided_q(confidence)

    if a.proportion and b.proportion:
        s = a.scale
        pa, pb = a.value / a.scale, b.value / b.scale
        na, nb = a.n or 1, b.n or 1
        lo, hi = (x * s for x in newcombe(pa, na, pb, nb, z))
        pval = _fisher_p(a, b)
        ns = str(na) if na == nb else f"{na}+{nb}"
        noise = f"±{fmt((hi - lo) / 2)} at n={ns}, Fisher {_fmt_p(pval)}"

        def half_n(n: int) -> float:
            lo_n, hi_n = newcombe(pa, n, pb, n, z)
            return (hi_n - lo_n) / 2 * s

        return _decide(delta, lo, hi, pval < 1.0 - confidence, margin, "fisher", noise,
                       lambda target: _needed_n(half_n, target, s, (pa, pb), z), pval)

    if a.proportion or b.proportion:
        prop = a if a.proportion else b
        s = prop.scale
        pp, n0 = prop.value / s, prop.n or 1
        lo_p, hi_p = wilson(pp, n0, z)
        lo, hi = (lo_p * s - b.value, hi_p * s - b.value) if prop is a else (a.value - hi_p * s, a.value - lo_p * s)
        noise = f"±{fmt((hi - lo) / 2)} at n={n0}, Wilson"

        def half_w(n: int) -> float:
            lo_n, hi_n = wilson(pp, n, z)
            return (hi_n - lo_n) / 2 * s

        return _decide(delta, lo, hi, lo > 0 or hi < 0, margin, "wilson", noise,
                       lambda target: _needed_n(half_w, target, s, (pp,), z))

    sa, sb, borrowed = _sides(a, b, tolerance, z)
    if sa.var == 0 and sb.var == 0:
        if a.runs > 1 or b.runs > 1:
            counts = "+".join(str(m.runs) for m in (a, b) if not m.fixed)
            c = _decide(delta, delta, delta, abs(delta) > _EPS, margin, "exact", f"no spread over {counts} repeats",
                        lambda target: None)
            return replace(c, band=0.0)
        c = _decide(delta, delta, delta, abs(delta) > _EPS, margin, "exact", "no noise estimate", lambda target: None)
        return replace(c, band=None)
    band = _band_at(sa, sb, borrowed, p)
    kinds = {sa.kind, sb.kind}
    counts = "+".join(str(s.k) for s in (sa, sb) if s.kind != "fixed")
    if "t" in kinds:
        df = next(s.df for s in (sa, sb) if s.kind == "t") if borrowed else None
        method, how = "t", f"over {counts} repeats (t"
        if df is None:
            df = _welch_df([(s.var / s.k, s.df) for s in (sa, sb) if s.var > 0])
        how += f", {_fmt_df(df)} df)"
    elif "noise" in kinds:
        sd = math.sqrt(max(s.var for s in (sa, sb)))
        method, how = "noise", f"from run noise ±{fmt(sd)} SD" + (f" over {counts} runs" if counts not in ("1", "1+1") else "")
    else:
        method, how = "tolerance", f"from tolerance ±{tolerance}" + (f" over {counts} runs" if counts not in ("1", "1+1") else "")
    noise = f"±{fmt(band)} {how}"
    both = sa.kind != "fixed" and sb.kind != "fixed"

    def needed_k(target: float) -> str | None:
        # Every side with a variance has k runs: the band is q·√(Σvar / k) with q ≥ z, so no k
        # below z²·Σvar / target² will do; the search starts there (its answer is the same).
        start = _ceil(z * z * (sa.var + sb.var) / target**2) if target > 0 else 2
        k = _search(max(2, start), lambda k: _band_at(sa, sb, borrowed, p, k) < target, 2)
        return None if k is None else f"≥ {k:,} repeats per side" if both else f"≥ {k:,} repeats"

    return _decide(delta, delta - band, delta + band, abs(delta) > band + _EPS, margin, method, noise, needed_k)


def _search(start: int, ok: Callable[[int], bool], lowest: int) -> int | None:
    """:func:`_smallest`, or None when no count a float can hold would do."""
    try:
        return _smallest(start, ok, lowest)
    except (OverflowError, ZeroDivisionError):
        return None


def _needed_n(half: Callable[[int], float], target: float, scale: float, ps: tuple[float, ...],
              z: float) -> str | None:
    pq = sum(max(x * (1 - x), 1e-6) for x in ps)
    start = _ceil(z * z * pq * scale * scale / target**2)
    n = _search(start, lambda n: half(n) < target, 1)
    return None if n is None else f"n ≥ {n:,} per run"


def _decide(delta: float, lo: float, hi: float, different: bool, margin: float | None, method: str,
            noise: str, needed: Callable[[float], str | None], p: float | None = None) -> Comparison:
    """SAME when the whole interval lies within ±margin (two one-sided tests; without a margin only
    an exact equality), else DIFFERENT when it is shown different, else CAN'T TELL with the n or
    repeats that would decide it at the current estimate: a band narrower than the difference
    (different), or than what the margin leaves of it (the same)."""
    band = (hi - lo) / 2
    m = margin or 0.0
    if lo >= -m - _EPS and hi <= m + _EPS:
        outcome = Outcome.SAME
    elif different:
        outcome = Outcome.DIFFERENT
    else:
        target = max(m - abs(delta), abs(delta))
        advice = needed(target) if target > _EPS else None
        return Comparison(Outcome.CANT_TELL, delta, band, margin, method, noise, advice, lo, hi, p, different)
    return Comparison(outcome, delta, band, margin, method, noise, None, lo, hi, p, different)


# --------------------------------------------------------------------------
# Direction


WORDS = ("better_than", "worse_than", "no_worse_than", "passes", "fails")
SAME_WORDS = ("same_as", "differs_from")  # no direction: within ±margin, or wholly outside it


def judge(c: Comparison, word: str, direction: str = "higher") -> Optional[bool]:
    """Read ``a`` vs ``b`` for a direction: True (holds), False (contradicted) or None (can't tell).

    With d the difference signed so that positive is better, [dlo, dhi] its interval and m the
    margin (0 without one):

    - better_than: holds when shown better; contradicted when dhi < m (not better by the margin);
      both (shown better by less than the margin): can't tell, but for an exact comparison (holds);
    - worse_than: holds when shown worse; contradicted when dlo > -m; both: as better_than;
    - no_worse_than: holds when dlo ≥ -m (worse by less than the margin at most); contradicted
      when dhi < -m (shown worse by more than the margin; without one, shown worse);
    - passes / fails (a threshold, compared without a margin): shown on one side or the other;
      exactly at it, with no noise, passes;
    - same_as: holds when the whole interval lies within ±m, contradicted when wholly outside it;
      differs_from the other way round.
    """
    if word in ("same_as", "differs_from"):
        same = True if c.outcome is Outcome.SAME else False if c.beyond_margin else None
        return same if word == "same_as" or same is None else not same
    if word not in WORDS:
        raise ValueError(f"unknown direction word {word!r}; expected one of {', '.join(WORDS + SAME_WORDS)}")
    sign = 1.0 if direction == "higher" else -1.0
    better = c.different and sign * c.delta > 0
    worse = c.different and sign * c.delta < 0
    lo = c.delta if c.lo is None else c.lo
    hi = c.delta if c.hi is None else c.hi
    dlo, dhi = (lo, hi) if sign > 0 else (-hi, -lo)
    m = c.margin or 0.0
    # Shown better holds, and not better by the margin is contradicted: an interval between 0 and
    # the margin is both, and can't tell, so that a narrower interval around the same estimate
    # never turns one answer into the other (an exact comparison, which runs never narrow, holds)
    if word == "better_than":
        short = dhi < m + _EPS  # not better by the margin
        if better:
            return None if short and m and c.method != "exact" else True
        return False if short else None
    if word == "worse_than":
        short = dlo > -m - _EPS  # not worse by the margin
        if worse:
            return None if short and m and c.method != "exact" else True
        return False if short else None
    if word == "no_worse_than":
        return True if dlo >= -m - _EPS else False if dhi < -m - _EPS or (worse and not m) else None
    at_it = c.method == "exact" and not c.different
    if word == "passes":
        return True if better or at_it else False if worse else None
    return True if worse else False if better or at_it else None  # fails


# --------------------------------------------------------------------------
# at_least / below


def _check(a: Measure, limit: float, confidence: float, upper: bool, tolerance: Tolerance | None) -> Check:
    """Shared body: ``upper`` False for at_least, True for below."""
    kind = type(limit), math.copysign(1.0, limit) if isinstance(limit, float) else 1.0
    return _check_once(a, limit, confidence, upper, tolerance, _kind(a), kind)


@functools.lru_cache(maxsize=16384)
def _check_once(a: Measure, limit: float, confidence: float, upper: bool, tolerance: Tolerance | None,
                *_kinds: Any) -> Check:
    """:func:`_check`, once per distinct question (see :func:`_compare_once`)."""
    if not math.isfinite(a.value):
        raise ValueError(f"cannot check non-finite value {a.value!r}")
    fixed = Measure(limit, fixed=True)
    c = compare(a, fixed, tolerance=tolerance, confidence=confidence)
    result = _side_of(c, upper)
    noise = c.noise
    needed = None
    if result is None and abs(a.value - limit) > 0:
        needed = _needed_decide(a, fixed, tolerance, confidence)
    return Check(result, c.band, noise, needed)


def _side_of(c: Comparison, upper: bool) -> bool | None:
    at_or_above = judge(c, "passes", "higher")
    return at_or_above if at_or_above is None or not upper else not at_or_above


def _needed_decide(a: Measure, fixed: Measure, tolerance: Tolerance | None, confidence: float) -> str | None:
    """The n per run, or the repeats, that would put ``fixed`` outside a's band."""
    decided = lambda m: compare(m, fixed, tolerance=tolerance, confidence=confidence).different  # noqa: E731
    if a.proportion:
        z = _two_sided_q(confidence)
        pp = a.value / a.scale
        gap = abs(a.value - fixed.value) / a.scale
        start = _ceil(z * z * max(pp * (1 - pp), 1e-6) / gap**2)
        n = _search(start, lambda n: decided(replace(a, n=n)), 1)
        return None if n is None else f"n ≥ {n:,}"
    z = _two_sided_q(confidence)
    sa, sb, borrowed = _sides(a, fixed, tolerance, z)
    if sa.var == 0:
        return None
    p = (1.0 + confidence) / 2.0
    gap = abs(a.value - fixed.value)
    k = _search(2, lambda k: _band_at(sa, sb, borrowed, p, k) < gap, 2)
    return None if k is None else f"≥ {k} repeats"


def at_least(a: Measure, limit: float, *, confidence: float = 0.95, tolerance: Tolerance | None = None) -> Check:
    """Is ``a`` at least ``limit``?  True / False / None (can't tell)."""
    return _check(a, limit, confidence, False, tolerance)


def below(a: Measure, limit: float, *, confidence: float = 0.95, tolerance: Tolerance | None = None) -> Check:
    """Is ``a`` below ``limit``?  True / False / None (can't tell)."""
    return _check(a, limit, confidence, True, tolerance)
