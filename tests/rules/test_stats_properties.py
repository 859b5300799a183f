"""Properties of the noise model over random proportions and random repeat sets."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

hyp = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from triage.rules.decisions.stats import SAME_WORDS, WORDS, Measure, Outcome, Tolerance, at_least, compare, judge  # noqa: E402

SETTINGS = settings.get_profile("stats-properties")  # tests/conftest.py: 300 examples, fewer under mutation

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


def _verdicts(c) -> dict[str, bool | None]:
    """Every word's reading of one comparison, both directions."""
    out: dict[str, bool | None] = {f"{w}/{d}": judge(c, w, d) for w in WORDS for d in ("higher", "lower")}
    out.update((w, judge(c, w)) for w in SAME_WORDS)
    return out


@SETTINGS
@given(repeat_sets, noises, values, tolerances, margins, confidences, st.booleans())
def test_a_run_at_the_mean_never_turns_a_verdict_into_its_opposite(vals, noise, ref, tol, margin, confidence,
                                                                   fixed) -> None:
    a = _measure(vals, noise)
    b = Measure(ref, fixed=fixed, noise=noise)
    more = _measure(vals + [statistics.fmean(vals)], noise)
    before = compare(a, b, margin=margin, tolerance=tol, confidence=confidence)
    after = compare(more, b, margin=margin, tolerance=tol, confidence=confidence)
    for word, was in _verdicts(before).items():
        now = _verdicts(after)[word]
        assert was is None or now is None or now is was, word
    check_before = at_least(a, ref, tolerance=tol, confidence=confidence)
    check_after = at_least(more, ref, tolerance=tol, confidence=confidence)
    assert check_before.result is None or check_after.result in (None, check_before.result)


@SETTINGS
@given(repeat_sets, noises, values, tolerances, confidences, st.booleans())
def test_more_data_never_widens_a_band(vals, noise, ref, tol, confidence, fixed) -> None:
    b = Measure(ref, fixed=fixed, noise=noise)
    before = compare(_measure(vals, noise), b, tolerance=tol, confidence=confidence)
    after = compare(_measure(vals + [statistics.fmean(vals)], noise), b, tolerance=tol, confidence=confidence)
    # rounding: the mean of equal values need not equal them to the last bit, so a band of 0
    # may become one of a few units in the last place of the values' size
    rounding = 1e-12 * max(1.0, abs(ref), *map(abs, vals))
    assert (after.band or 0.0) <= (before.band or 0.0) * (1 + 1e-9) + rounding


@SETTINGS
@given(proportions(), st.integers(min_value=2, max_value=20), confidences)
def test_a_larger_sample_at_the_same_rate_never_widens_a_band(a: Measure, factor: int, confidence: float) -> None:
    b = Measure(0.5 * a.scale, fixed=True)
    wide = compare(a, b, confidence=confidence)
    narrow = compare(replace(a, n=(a.n or 1) * factor), b, confidence=confidence)
    assert narrow.band is not None and wide.band is not None and narrow.band <= wide.band * (1 + 1e-9)


@SETTINGS
@given(st.one_of(repeat_sets.map(lambda v: _measure(v, None)), proportions()),
       st.floats(min_value=-2, max_value=2), st.floats(min_value=0.001, max_value=100), tolerances, confidences)
def test_the_same_implies_a_difference_within_the_margin(a, offset, margin, tol, confidence) -> None:
    # the reference lies within two margins of the value: "the same" comes up often, and each time
    # the whole interval, and so the difference, lies within ±margin
    c = compare(a, Measure(a.value + offset * margin, fixed=True), margin=margin, tolerance=tol,
                confidence=confidence)
    same = c.outcome is Outcome.SAME
    hyp.event(f"same: {same}")
    assert not same or (abs(c.delta) <= margin + 1e-9 and c.lo is not None and c.hi is not None
                        and -margin - 1e-9 <= c.lo <= c.hi <= margin + 1e-9)
    assert not same or judge(c, "same_as") is True


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


def _fisher_every_table(k1: int, n1: int, k2: int, n2: int) -> float:
    """Fisher's two-sided p as the plain sum over every table (the definition)."""
    import math

    from triage.rules.decisions.distributions import _log_factorials

    total, successes = n1 + n2, k1 + k2
    lo, hi = max(0, successes - n2), min(n1, successes)
    lf = _log_factorials(total)
    denom = lf[total] - lf[successes] - lf[total - successes]
    logs = [(lf[n1] - lf[x] - lf[n1 - x]) + (lf[n2] - lf[successes - x] - lf[n2 - successes + x]) - denom
            for x in range(lo, hi + 1)]
    cut = logs[k1 - lo] + math.log1p(1e-7)
    return min(1.0, math.fsum(math.exp(v) for v in logs if v <= cut))


@st.composite
def two_by_two(draw: st.DrawFn) -> tuple[int, int, int, int]:
    n1 = draw(st.integers(min_value=1, max_value=3000))
    n2 = draw(st.one_of(st.just(n1), st.integers(min_value=1, max_value=3000)))
    k1 = draw(st.integers(min_value=0, max_value=n1))
    near = min(n2, max(0, round(k1 / n1 * n2) + draw(st.integers(min_value=-8, max_value=8))))
    return k1, n1, draw(st.one_of(st.just(near), st.integers(min_value=0, max_value=n2))), n2


@SETTINGS
@given(two_by_two())
def test_fisher_sums_only_what_counts_and_gets_the_same_bits(table: tuple[int, int, int, int]) -> None:
    # fisher_exact leaves out the tables e^100 less likely than the observed one: the
    # exactly rounded sum is the same float as the sum over every table
    from triage.rules.decisions.distributions import fisher_exact

    assert fisher_exact(*table) == _fisher_every_table(*table)


@st.composite
def any_measures(draw: st.DrawFn) -> Measure:
    kind = draw(st.sampled_from(["proportion", "repeats", "noise", "fixed"]))
    if kind == "proportion":
        return draw(proportions())
    if kind == "fixed":
        return Measure(draw(values), fixed=True)
    return Measure.of(draw(repeat_sets), noise=draw(noises) if kind == "noise" else None)


@SETTINGS
@given(any_measures(), any_measures(), tolerances, confidences)
def test_shown_different_is_the_comparisons_own_answer(a: Measure, b: Measure, tolerance: Tolerance | None,
                                                        confidence: float) -> None:
    from triage.rules.decisions.stats import shown_different

    got = shown_different(a, b, tolerance=tolerance, confidence=confidence)
    assert got == compare(a, b, tolerance=tolerance, confidence=confidence).different


def test_repeats_a_hair_apart_against_a_known_noise_are_compared() -> None:
    """Two repeats 2e-39 apart against a run with a known noise: the t quantile's degrees of
    freedom near 1e156 (the repeats' variance near 0) gave an OverflowError; now the normal
    quantile, as the t distribution tends to it."""
    from triage.rules.decisions.distributions import t_quantile, z_quantile

    a = Measure.of([0.0, 2.244787644968601e-39])
    b = Measure(0.0, noise=1.0)
    c = compare(a, b, confidence=0.9)
    assert c.outcome is Outcome.CANT_TELL and not c.different
    assert abs(t_quantile(0.95, 1e156) - z_quantile(0.95)) < 1e-12
