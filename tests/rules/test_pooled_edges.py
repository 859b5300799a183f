"""`stats.compare` at its edges, each one a mutant that survived the other tests
(docs/mutation.md): what a can't-tell asks for (n per run, or repeats), checked against the
interval it promises; percentages on their scale; the exact path with a margin; Welch's degrees
of freedom against scipy; and the words of the noise phrase."""

from __future__ import annotations

import math

import pytest

from triage.rules.decisions.distributions import newcombe, t_quantile, wilson
from triage.rules.decisions.stats import Measure, Outcome, Tolerance, compare

Z95 = 1.959963984540054


def _n_of(needed: str) -> int:
    assert needed.startswith("n ≥ ") and needed.endswith(" per run"), needed
    return int(needed[4:-8].replace(",", ""))


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_two_proportions_ask_for_the_smallest_n_whose_interval_would_decide(scale):
    """0.90 vs 0.88 on 200 samples cannot tell; the n asked for is the first whose Newcombe
    half-width, on the metric's scale, is below what would decide it (the difference here)."""
    a, b = Measure(0.90 * scale, n=200, scale=scale), Measure(0.88 * scale, n=200, scale=scale)
    c = compare(a, b)
    assert c.outcome is Outcome.CANT_TELL and c.method == "fisher"
    n = _n_of(c.needed)

    def half(k: int) -> float:
        lo, hi = newcombe(0.90, k, 0.88, k, Z95)
        return (hi - lo) / 2 * scale

    target = abs(c.delta)
    assert half(n) < target <= half(n - 1)


@pytest.mark.parametrize("scale", [1.0, 100.0])
def test_a_proportion_against_a_number_asks_for_the_smallest_n_whose_wilson_interval_would_decide(scale):
    a, gate = Measure(0.93 * scale, n=300, scale=scale), Measure(0.92 * scale, fixed=True)
    c = compare(a, gate)
    assert c.outcome is Outcome.CANT_TELL and c.method == "wilson"
    n = _n_of(c.needed)

    def half(k: int) -> float:
        lo, hi = wilson(0.93, k, Z95)
        return (hi - lo) / 2 * scale

    assert half(n) < abs(c.delta) <= half(n - 1)
    # and the interval itself is Wilson's on the scale, on whichever side the proportion is
    lo, hi = wilson(0.93, 300, Z95)
    assert (c.lo, c.hi) == pytest.approx((lo * scale - 0.92 * scale, hi * scale - 0.92 * scale))
    d = compare(gate, a)
    assert (d.lo, d.hi) == pytest.approx((0.92 * scale - hi * scale, 0.92 * scale - lo * scale))


def test_repeats_ask_for_the_smallest_count_per_side_and_two_can_be_enough():
    """Repeats with a spread: the count asked for is the smallest k whose band would be narrower
    than the difference, per side when both sides are runs, as runs when one side is a number;
    it can be 2 (the fewest that give a spread)."""
    a, b = Measure.of([10.0, 10.4, 9.6]), Measure.of([9.0, 9.3, 8.7])
    c = compare(a, b)
    assert c.outcome is Outcome.DIFFERENT
    wide_a, wide_b = Measure.of([10.0, 13.0, 7.0]), Measure.of([9.0, 12.0, 6.0])
    c = compare(wide_a, wide_b)
    assert c.outcome is Outcome.CANT_TELL and c.needed.endswith(" repeats per side")
    k = int(c.needed.split()[1])
    var = 9.0  # each side's sample variance

    def band(k: int) -> float:
        return t_quantile(0.975, 2 * k - 2) * math.sqrt(2 * var / k)

    assert band(k) < 1.0 <= band(k - 1)
    near = compare(Measure.of([10.0, 10.2, 9.8]), Measure(9.5, fixed=True))
    assert near.outcome is Outcome.DIFFERENT
    one = compare(Measure.of([10.0, 10.9, 9.1]), Measure(9.0, fixed=True))
    assert one.outcome is Outcome.CANT_TELL and one.needed.endswith(" repeats") and "per side" not in one.needed
    k = int(one.needed.split()[1])
    assert t_quantile(0.975, k - 1) * math.sqrt(0.81 / k) < 1.0 <= t_quantile(0.975, k - 2) * math.sqrt(0.81 / (k - 1))


def test_two_runs_per_side_can_be_enough():
    """Known noise 0.5 on each side, a difference of 1: one run each cannot tell (band 1.386);
    two each would (z·√(2·0.25/2) = 0.98), and that is what is asked for."""
    c = compare(Measure(10.0, noise=0.5), Measure(9.0, noise=0.5))
    assert c.outcome is Outcome.CANT_TELL and c.needed == "≥ 2 repeats per side"
    assert Z95 * math.sqrt(2 * 0.25 / 2) < 1.0 <= c.band
    c = compare(Measure.of([10.0, 10.1, 9.9]), Measure(9.0, fixed=True))
    assert c.outcome is Outcome.DIFFERENT


def test_repeats_with_no_spread_are_exact_and_a_margin_still_makes_them_the_same():
    a, b = Measure.of([5.0, 5.0]), Measure.of([5.001, 5.001, 5.001])
    c = compare(a, b)
    assert (c.outcome, c.method, c.band, c.noise) == (Outcome.DIFFERENT, "exact", 0.0, "no spread over 2+3 repeats")
    c = compare(a, b, margin=0.01)
    assert c.outcome is Outcome.SAME and c.band == 0.0
    c = compare(Measure.of([5.0, 5.0]), Measure(5.0, fixed=True))
    assert (c.outcome, c.noise) == (Outcome.SAME, "no spread over 2 repeats")
    c = compare(Measure(5.0), Measure.of([5.2, 5.2]))
    assert c.noise == "no spread over 1+2 repeats"


def test_single_runs_without_noise_are_exact_and_a_margin_makes_them_the_same():
    c = compare(Measure(5.0), Measure(5.004))
    assert (c.outcome, c.method, c.band, c.noise) == (Outcome.DIFFERENT, "exact", None, "no noise estimate")
    assert compare(Measure(5.0), Measure(5.004), margin=0.01).outcome is Outcome.SAME
    assert compare(Measure(5.0), Measure(5.0)).outcome is Outcome.SAME


def test_welch_degrees_of_freedom_match_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    xa, xb = [10.0, 10.4, 9.5, 10.9, 10.2], [9.0, 12.0]
    c = compare(Measure.of(xa), Measure.of(xb))
    res = scipy_stats.ttest_ind(xa, xb, equal_var=False)
    ci = res.confidence_interval(0.95)
    assert (c.lo, c.hi) == pytest.approx((ci.low, ci.high), rel=1e-9)
    assert f"{res.df:.1f} df" in c.noise


def test_one_side_with_no_spread_leaves_the_degrees_of_freedom_to_the_other():
    scipy_stats = pytest.importorskip("scipy.stats")
    xa, xb = [10.0, 10.4, 9.5], [9.0, 9.0, 9.0, 9.0]
    c = compare(Measure.of(xa), Measure.of(xb))
    half = scipy_stats.t.ppf(0.975, 2) * math.sqrt(scipy_stats.tstd(xa) ** 2 / 3)
    assert c.hi - c.lo == pytest.approx(2 * half, rel=1e-9)
    assert "2 df" in c.noise


def test_a_single_run_borrows_the_repeats_degrees_of_freedom():
    xa = [10.0, 10.4, 9.5, 10.9]
    c = compare(Measure(9.0), Measure.of(xa))
    var = sum((x - sum(xa) / 4) ** 2 for x in xa) / 3
    half = t_quantile(0.975, 3) * math.sqrt(var / 4 + var)
    assert c.hi - c.lo == pytest.approx(2 * half, rel=1e-9) and "3 df" in c.noise


def test_the_noise_phrase_counts_runs_only_beyond_one_each():
    one = compare(Measure(10.0, noise=0.5), Measure(9.0, noise=0.5))
    assert one.noise == "±1.386 from run noise ±0.500 SD"
    tol = compare(Measure(10.0), Measure(9.0), tolerance=Tolerance.parse("2%"))
    assert "from tolerance ±2%" in tol.noise and " over " not in tol.noise
    many = compare(Measure.of([10.0, 10.0, 10.0], noise=0.5), Measure(9.0, noise=0.5))
    assert many.method == "noise" and many.noise.endswith(" over 3+1 runs")


@pytest.mark.parametrize("kw, message", [
    ({"n": 0}, "sample count n must be at least 1, got 0"),
    ({"noise": -0.1}, "noise must be a finite SD >= 0, got -0.1"),
    ({"noise": math.inf}, "noise must be a finite SD >= 0, got inf"),
    ({"scale": 0.0}, "scale must be positive, got 0.0"),
    ({"scale": math.inf}, "scale must be positive, got inf"),
])
def test_a_measure_refuses_what_it_cannot_be_and_says_why(kw, message):
    with pytest.raises(ValueError) as e:
        Measure(1.0, **kw)
    assert str(e.value) == message


def test_no_noise_and_a_scale_of_a_hundred_are_measures():
    assert Measure(1.0, noise=0.0).noise == 0.0 and Measure(50.0, n=10, scale=100.0).proportion


# ------------------------------------------------------------------ whose noise a side takes


def test_a_single_run_without_noise_borrows_the_noise_of_the_other_side():
    c = compare(Measure(10.0), Measure(9.0, noise=0.5))
    assert c.method == "noise" and c.band == pytest.approx(Z95 * math.sqrt(0.25 + 0.25))
    spread = [10.0, 10.2, 9.8]
    c = compare(Measure(9.0), Measure.of(spread))
    assert c.band == pytest.approx(t_quantile(0.975, 2) * math.sqrt(0.04 / 3 + 0.04))
    c = compare(Measure.of(spread), Measure(9.0))
    assert c.band == pytest.approx(t_quantile(0.975, 2) * math.sqrt(0.04 / 3 + 0.04))


def test_a_run_with_its_own_noise_keeps_it():
    c = compare(Measure(10.0, noise=0.1), Measure(9.0, noise=0.5))
    assert c.band == pytest.approx(Z95 * math.sqrt(0.01 + 0.25))


def test_repeats_keep_the_known_noise_until_their_own_spread_is_larger():
    """Known noise 0.5: ten repeats with one at 1.5 spread beyond z·σ·√2 yet vary less than σ²
    (0.2025): the known noise holds; five with one at 1.6 vary by 0.512: their own spread."""
    keeps = compare(Measure.of([0.0] * 9 + [1.5], noise=0.5), Measure(0.0, fixed=True))
    assert keeps.method == "noise" and keeps.band == pytest.approx(Z95 * 0.5 / math.sqrt(10))
    own = compare(Measure.of([0.0] * 4 + [1.6], noise=0.5), Measure(0.0, fixed=True))
    assert own.method == "t" and own.band == pytest.approx(t_quantile(0.975, 4) * math.sqrt(0.512 / 5))


def test_repeats_with_no_spread_beside_repeats_with_one_count_both_sides():
    c = compare(Measure.of([5.0, 5.0, 5.0]), Measure.of([4.0, 4.5, 3.5]))
    assert c.noise == "±1.242 over 3+3 repeats (t, 2 df)"


def test_repeats_against_a_number_on_either_side_ask_for_repeats_not_per_side():
    for c in (compare(Measure(9.0, fixed=True), Measure.of([10.0, 10.9, 9.1])),
              compare(Measure.of([10.0, 10.9, 9.1]), Measure(9.0, fixed=True))):
        assert c.outcome is Outcome.CANT_TELL and c.needed.endswith(" repeats") and "per side" not in c.needed


def test_a_tolerance_of_nothing_is_a_tolerance():
    assert (Tolerance.parse(0).amount, Tolerance.parse("0%").relative) == (0.0, True)


# ------------------------------------------------------------------ what a threshold asks for


def test_a_proportion_near_its_bound_asks_for_more_samples_at_the_confidence_asked():
    from triage.rules.decisions.stats import at_least

    for confidence in (0.95, 0.99):
        check = at_least(Measure(0.93, n=300), 0.92, confidence=confidence)
        assert check.result is None
        n = int(check.needed.removeprefix("n ≥ ").replace(",", ""))
        decided = [compare(Measure(0.93, n=k), Measure(0.92, fixed=True), confidence=confidence).different
                   for k in (n - 1, n)]
        assert decided == [False, True], confidence


def test_a_single_run_with_a_tolerance_asks_for_repeats_and_two_can_be_enough():
    from triage.rules.decisions.stats import at_least, below

    check = at_least(Measure(10.0), 9.91, tolerance=Tolerance.parse(0.1))
    assert (check.result, check.needed) == (None, "≥ 2 repeats")
    check = below(Measure(10.0), 10.02, tolerance=Tolerance.parse(0.1))
    k = int(check.needed.split()[1])
    sd = 0.1 / Z95
    assert Z95 * sd / math.sqrt(k) < 0.02 <= Z95 * sd / math.sqrt(k - 1)
    assert at_least(Measure(10.0), 9.91).needed is None  # no noise to repeat: nothing would decide it
