"""Properties of the noise model over random proportions and random repeat sets."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

hyp = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from triage.rules.stats import WORDS, Measure, Outcome, Tolerance, at_least, compare, judge  # noqa: E402

SETTINGS = settings(max_examples=300, deadline=None)

values = st.floats(min_value=-1e4, max_value=1e4, allow_nan=False, allow_infinity=False)
repeat_sets = st.lists(values, min_size=1, max_size=6)
noises = st.one_of(st.none(), st.floats(min_value=0.01, max_value=100))
tolerances = st.one_of(st.none(), st.floats(min_value=0.001, max_value=50).map(Tolerance),
                       st.floats(min_value=0.0001, max_value=0.2).map(lambda x: Tolerance(x, relative=True)))
margins = st.one_of(st.none(), st.floats(min_value=0.01, max_value=100))
confidences = st.sampled_from([0.9, 0.95, 0.99])


@st.composite
def proportions(draw: st.DrawFn) -> Measure:
    n = draw(st.integers(min_value=1, max_value=5000))
    k = draw(st.integers(min_value=0, max_value=n))
    scale = draw(st.sampled_from([1.0, 100.0]))
    return Measure(k / n * scale, n, scale=scale)


@SETTINGS
@given(proportions(), st.one_of(proportions(), st.floats(min_value=0, max_value=1).map(lambda v: Measure(v, fixed=True))),
       confidences)
def test_no_band_is_zero_while_n_is_finite(a: Measure, b: Measure, confidence: float) -> None:
    if b.fixed:
        b = replace(b, value=b.value * a.scale)
    c = compare(a, b, confidence=confidence)
    assert c.band is not None and c.band > 0
    assert c.lo is not None and c.hi is not None and c.lo < c.hi


def _measure(vals: list[float], noise: float | None) -> Measure:
    return Measure.of(vals, noise=noise)


@SETTINGS
@given(repeat_sets, noises, values, tolerances, margins, confidences, st.booleans())
def test_a_run_at_the_mean_never_loses_a_decision(vals, noise, ref, tol, margin, confidence, fixed) -> None:
    a = _measure(vals, noise)
    b = Measure(ref, fixed=fixed, noise=noise)
    before = compare(a, b, margin=margin, tolerance=tol, confidence=confidence)
    after = compare(_measure(vals + [statistics.fmean(vals)], noise), b, margin=margin, tolerance=tol,
                    confidence=confidence)
    if before.outcome is not Outcome.CANT_TELL:
        assert after.outcome is not Outcome.CANT_TELL
    if before.outcome is Outcome.DIFFERENT:
        assert after.outcome is Outcome.DIFFERENT
    check_before = at_least(a, ref, tolerance=tol, confidence=confidence)
    check_after = at_least(_measure(vals + [statistics.fmean(vals)], noise), ref, tolerance=tol,
                           confidence=confidence)
    if check_before.result is not None:
        assert check_after.result is check_before.result


@SETTINGS
@given(repeat_sets, values, noises, values, tolerances, confidences)
def test_an_extra_run_that_agrees_never_loses_a_decision(vals, extra, noise, limit, tol, confidence) -> None:
    # every run, and the extra one, alone reads the same against the limit: so does the pool
    singles = {at_least(Measure(v, noise=noise), limit, tolerance=tol, confidence=confidence).result
               for v in vals + [extra]}
    if len(singles) != 1 or None in singles:
        return
    (alone,) = singles
    assert at_least(_measure(vals, noise), limit, tolerance=tol, confidence=confidence).result is alone
    pooled = at_least(_measure(vals + [extra], noise), limit, tolerance=tol, confidence=confidence)
    assert pooled.result is alone


def _negate(m: Measure) -> Measure:
    return replace(m, value=-m.value, repeats=tuple(-v for v in m.repeats))


@SETTINGS
@given(repeat_sets, repeat_sets, noises, st.booleans(), tolerances, margins, st.sampled_from(WORDS))
def test_swapping_direction_and_negating_values_mirrors_the_verdict(va, vb, noise, fixed, tol, margin, word) -> None:
    a = _measure(va, noise)
    b = Measure(vb[0], fixed=True) if fixed else _measure(vb, noise)
    up = judge(compare(a, b, margin=margin, tolerance=tol), word, "higher")
    down = judge(compare(_negate(a), _negate(b), margin=margin, tolerance=tol), word, "lower")
    assert up is down
