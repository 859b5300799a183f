"""Tests for triage.rules.decisions.stats, checked against numbers derived by hand."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from triage.rules.decisions.stats import (
    Check,
    Comparison,
    Measure,
    Outcome,
    Tolerance,
    _smallest,
    at_least,
    below,
    compare,
    fmt,
    fmt_delta,
    t_quantile,
    z_quantile,
)

Z = NormalDist().inv_cdf(0.975)  # 1.959964...


def binomial_band(*sides: tuple[float, int]) -> float:
    return Z * math.sqrt(sum(p * (1 - p) / n for p, n in sides))


# ---------------------------------------------------------------- quantiles


@pytest.mark.parametrize(
    ("df", "expected"),
    [
        (1, 12.706205),  # tan(0.475 pi)
        (2, 4.302653),
        (3, 3.182446),
        (4, 2.776445),
        (5, 2.570582),
        (10, 2.228139),
        (30, 2.042272),
        (100, 1.983972),
    ],
)
def test_t_quantile_table(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("p", [0.55, 0.8, 0.9, 0.975, 0.995, 0.9999])
def test_t_quantile_closed_forms(p: float) -> None:
    # df=1 is Cauchy: tan(pi (p - 1/2)); df=2: (2p-1) / sqrt(2 p (1-p)).
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)


def test_t_quantile_df4_closed_form() -> None:
    # df=4: a = 4p(1-p), q = cos(acos(sqrt(a))/3)/sqrt(a), t = 2 sqrt(q - 1).
    for p in (0.9, 0.975, 0.999):
        a = 4 * p * (1 - p)
        q = math.cos(math.acos(math.sqrt(a)) / 3) / math.sqrt(a)
        assert t_quantile(p, 4) == pytest.approx(2 * math.sqrt(q - 1), rel=1e-9)


def test_t_quantile_fractional_symmetric_and_limits() -> None:
    mid = t_quantile(0.975, 4.5)
    assert 2.570582 < mid < 2.776445
    assert t_quantile(0.025, 4.5) == pytest.approx(-mid, abs=1e-12)
    assert t_quantile(0.5, 7) == 0.0
    assert t_quantile(0.995, 3) == pytest.approx(5.840909, abs=1e-6)
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    # large df tends to the normal quantile: z + (z^3 + z) / (4 df)
    assert t_quantile(0.975, 1e6) == pytest.approx(Z + (Z**3 + Z) / 4e6, abs=1e-9)
    assert t_quantile(0.975, 1000) == pytest.approx(1.962339, abs=1e-6)
    # monotone in df
    values = [t_quantile(0.975, df) for df in (1, 1.5, 2, 2.9, 3, 8, 50, 1e4, 1e6)]
    assert values == sorted(values, reverse=True)


def test_quantile_errors() -> None:
    for p in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            t_quantile(p, 3)
    with pytest.raises(ValueError):
        t_quantile(0.9, 0)
    with pytest.raises(ValueError):
        t_quantile(0.9, -2)


def test_z_quantile() -> None:
    assert z_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)
    assert z_quantile(0.5) == 0.0


# ---------------------------------------------------------------- formatting


def test_fmt() -> None:
    assert fmt(0.879) == "0.879"
    assert fmt(0) == "0.000"
    assert fmt(-0.003) == "-0.003"
    assert fmt(-0.00001) == "0.000"
    assert fmt(1250.5) == "1250.5"
    assert fmt(12.354) == "12.35"
    assert fmt(123.44) == "123.4"
    assert fmt(9.9996) == "10.00"
    assert fmt(1234567.8) == "1234568"
    assert fmt(1e-7) == "0.000"
    assert "e" not in fmt(3.2e9)


def test_fmt_delta() -> None:
    assert fmt_delta(0.001) == "+0.001"
    assert fmt_delta(-0.065) == "-0.065"
    assert fmt_delta(0) == "+0.000"
    assert fmt_delta(0.0) == "+0.000"
    assert fmt_delta(12.5) == "+12.50"


# ---------------------------------------------------------------- Measure / Tolerance


def test_measure_of() -> None:
    assert Measure.of([0.879], n=1319) == Measure(0.879, 1319)
    m = Measure.of([100, 102, 98])
    assert m.value == 100 and m.repeats == (100, 102, 98) and m.n is None
    with pytest.raises(ValueError):
        Measure.of([])
    with pytest.raises(ValueError):
        Measure(0.5, n=0)


def test_tolerance_parse() -> None:
    assert Tolerance.parse("0.01") == Tolerance(0.01)
    assert Tolerance.parse(0.01) == Tolerance(0.01)
    assert Tolerance.parse(2) == Tolerance(2.0)
    assert Tolerance.parse("5%") == Tolerance(0.05, True)
    assert Tolerance.parse(" 2.5 % ") == Tolerance(0.025, True)
    assert str(Tolerance.parse("0.01")) == "0.01"
    assert str(Tolerance.parse("5%")) == "5%"
    assert str(Tolerance.parse("2.5 %")) == "2.5%"
    assert str(Tolerance.parse("7%")) == "7%"
    assert Tolerance.parse("5%").absolute(-0.878) == pytest.approx(0.0439)
    assert Tolerance.parse("0.01").absolute(50) == 0.01


@pytest.mark.parametrize("bad", ["", "  ", "abc", "-0.01", "-5%", "%", "nan", "inf", True, -1])
def test_tolerance_parse_errors(bad: object) -> None:
    with pytest.raises(ValueError, match="tolerance"):
        Tolerance.parse(bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------- compare: proportions


def wilson_half(p: float, n: int) -> float:
    z2 = Z * Z
    return Z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))


def newcombe_half(p1: float, n1: int, p2: float, n2: int) -> float:
    def bounds(p: float, n: int) -> tuple[float, float]:
        centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
        return centre - wilson_half(p, n), centre + wilson_half(p, n)

    (l1, u1), (l2, u2) = bounds(p1, n1), bounds(p2, n2)
    lo = math.hypot(p1 - l1, u2 - p2)
    hi = math.hypot(u1 - p1, p2 - l2)
    return (lo + hi) / 2


def test_two_proportions_same() -> None:
    c = compare(Measure(0.879, 1319), Measure(0.878, 1319), margin=0.033)
    assert c.method == "fisher"
    assert c.band == pytest.approx(newcombe_half(0.879, 1319, 0.878, 1319), rel=1e-12)
    assert c.band == pytest.approx(binomial_band((0.879, 1319), (0.878, 1319)), abs=3e-4)  # ≈ Wald at this n
    assert c.outcome is Outcome.SAME
    assert c.delta == pytest.approx(0.001)
    assert c.margin == 0.033
    assert c.p is not None and c.p > 0.9
    assert c.noise == f"±0.025 at n=1319, Fisher p = {c.p:.2g}"
    assert c.needed is None


def test_two_proportions_different() -> None:
    c = compare(Measure(0.879, 1319), Measure(0.944, 1319), margin=0.033)
    assert c.outcome is Outcome.DIFFERENT
    assert c.p is not None and c.p < 0.001 and c.noise.endswith("Fisher p < 0.001")
    assert c.lo is not None and c.hi is not None and c.lo < c.delta < c.hi < 0


def test_two_proportions_cant_tell_and_needed_n_decides() -> None:
    a, b = Measure(0.90, 200), Measure(0.878, 200)
    c = compare(a, b, margin=0.033)
    assert c.band == pytest.approx(newcombe_half(0.90, 200, 0.878, 200), rel=1e-12)
    assert c.outcome is Outcome.CANT_TELL
    # at this estimate (Δ 0.022) a band narrower than Δ would show them different; one
    # narrower than 0.033 - 0.022 would show them the same: the first comes sooner
    n = int(c.needed.removeprefix("n ≥ ").removesuffix(" per run").replace(",", ""))
    assert newcombe_half(0.90, n, 0.878, n) < 0.022 <= newcombe_half(0.90, n - 1, 0.878, n - 1)
    assert compare(Measure(0.90, 2 * n), Measure(0.878, 2 * n), margin=0.033).outcome is Outcome.DIFFERENT


def test_needed_n_uses_thousands_separator() -> None:
    c = compare(Measure(0.90, 1319), Measure(0.89, 1319), margin=0.01)
    assert c.outcome is Outcome.CANT_TELL
    assert c.needed is not None and "," in c.needed


def test_proportion_against_a_fixed_number_is_wilson() -> None:
    c = compare(Measure(0.90, 1319), Measure(0.878, 200))
    assert c.noise.split(", ")[0].endswith("at n=1319+200")
    fixed = compare(Measure(0.90, 1319), Measure(0.878, fixed=True))
    assert fixed.method == "wilson"
    assert fixed.band == pytest.approx(wilson_half(0.90, 1319), rel=1e-12)
    assert fixed.noise == f"±{fmt(fixed.band)} at n=1319, Wilson"
    assert fixed.outcome is Outcome.DIFFERENT


def test_zero_of_n_has_a_band() -> None:
    # sqrt(p(1-p)/n) is 0 at 0/n: Wilson is not.
    c = compare(Measure(0.0, 20), Measure(0.1, fixed=True))
    assert c.band is not None and c.band > 0.05
    assert c.outcome is Outcome.CANT_TELL  # 0/20 cannot rule out 10%, nor show it the same
    assert compare(Measure(0.0, 20), Measure(0.1, fixed=True), margin=0.2).outcome is Outcome.SAME


def test_zero_of_one_against_four_of_four_is_not_certain() -> None:
    # Fisher's exact p for 0/1 vs 4/4 is 0.2: not different.
    c = compare(Measure(0.0, 1), Measure(1.0, 4), margin=0.5)
    assert c.p == pytest.approx(0.2)
    assert c.outcome is not Outcome.DIFFERENT


def test_percentages_with_scale() -> None:
    pct = compare(Measure(91.0, 511, scale=100), Measure(94.4, 511, scale=100))
    unit = compare(Measure(0.91, 511), Measure(0.944, 511))
    assert pct.method == "fisher" and pct.outcome is unit.outcome
    assert pct.band == pytest.approx(unit.band * 100)
    # without a scale a percentage is not a proportion: no binomial band
    assert compare(Measure(91.0, 511), Measure(94.4, 511)).method == "exact"


def test_without_a_margin_nothing_noisy_is_the_same() -> None:
    # "not shown different" is never "the same": equivalence needs a margin
    c = compare(Measure(0.90, 200), Measure(0.878, 200))
    assert c.outcome is Outcome.CANT_TELL and not c.different


def test_confidence_changes_quantile() -> None:
    c95 = compare(Measure(0.879, 1319), Measure(0.878, 1319))
    c99 = compare(Measure(0.879, 1319), Measure(0.878, 1319), confidence=0.99)
    assert c99.band > c95.band * 1.25
    with pytest.raises(ValueError):
        compare(Measure(0.5, 10), Measure(0.5, 10), confidence=1.0)


# ---------------------------------------------------------------- compare: repeats (t)


def test_welch_different() -> None:
    a, b = Measure.of([100, 102, 98]), Measure.of([110, 111, 109])
    c = compare(a, b)
    # s1^2 = 4, s2^2 = 1; SE = sqrt(4/3 + 1/3); df = (5/3)^2 / ((4/3)^2/2 + (1/3)^2/2) = 50/17
    se = math.sqrt(5 / 3)
    assert c.method == "t"
    assert c.band == pytest.approx(t_quantile(0.975, 50 / 17) * se, rel=1e-9)
    assert 3.182446 * se < c.band < 4.302653 * se
    assert c.outcome is Outcome.DIFFERENT
    assert c.delta == -10
    assert c.noise == f"±{fmt(c.band)} over 3+3 repeats (t, 2.9 df)"


def test_welch_same_with_margin() -> None:
    c = compare(Measure.of([100, 102, 98]), Measure.of([101, 99, 100]), margin=5)
    assert c.outcome is Outcome.SAME
    assert c.delta == 0


def test_welch_cant_tell_needed_repeats() -> None:
    # k such that t(0.975, 2k-2) * sqrt(5/k) <= 2:
    #   k=6: 2.228139 * 0.912871 = 2.034 > 2;  k=7: 2.178813 * 0.845154 = 1.841 <= 2
    c = compare(Measure.of([100, 102, 98]), Measure.of([101, 99, 100]), margin=2)
    assert c.outcome is Outcome.CANT_TELL
    assert c.needed == "≥ 7 repeats per side"


def test_single_run_borrows_variance_but_a_fixed_number_adds_none() -> None:
    # SE = sqrt(4/3 + 4/1), df = 2: band = 4.302653 * 2.309401 = 9.93655
    a = Measure.of([100, 102, 98])
    c = compare(a, Measure(110))
    assert c.band == pytest.approx(4.302653 * math.sqrt(16 / 3), abs=1e-5)
    assert c.outcome is Outcome.DIFFERENT
    assert "over 3+1 repeats" in c.noise
    assert compare(a, Measure(101)).outcome is Outcome.CANT_TELL
    assert compare(a, Measure(101), margin=12).outcome is Outcome.SAME  # [-10.9, 8.9] within ±12
    # a number from the rule file: one-sample t, SE = 2/sqrt(3), over 3 repeats
    fixed = compare(a, Measure(101, fixed=True))
    assert fixed.band == pytest.approx(4.302653 * 2 / math.sqrt(3), abs=1e-5)
    assert fixed.noise == f"±{fmt(fixed.band)} over 3 repeats (t, 2 df)"
    assert fixed.outcome is Outcome.CANT_TELL
    assert compare(a, Measure(101, fixed=True), margin=6).outcome is Outcome.SAME


def test_zero_variance_falls_back() -> None:
    a, b = Measure.of([5.0, 5.0, 5.0]), Measure.of([5.0, 5.0])
    assert compare(a, b).method == "exact"
    assert compare(a, b).outcome is Outcome.SAME
    assert compare(a, Measure.of([5.1, 5.1])).outcome is Outcome.DIFFERENT
    tol = compare(a, Measure.of([5.1, 5.1]), tolerance=Tolerance.parse("0.2"), margin=0.5)
    assert tol.method == "tolerance" and tol.outcome is Outcome.SAME


# ---------------------------------------------------------------- prior noise


def test_known_noise_gives_one_run_a_band() -> None:
    c = compare(Measure(1487.4, noise=3.1), Measure(1478.95, fixed=True))
    assert c.method == "noise"
    assert c.band == pytest.approx(Z * 3.1)
    assert c.outcome is Outcome.DIFFERENT
    assert c.noise == f"±{fmt(Z * 3.1)} from run noise ±{fmt(3.1)} SD"


def test_agreeing_repeats_shrink_the_known_noise() -> None:
    c = compare(Measure.of([1486.0, 1487.4], noise=3.1), Measure(1478.95, fixed=True))
    assert c.band == pytest.approx(Z * 3.1 / math.sqrt(2))
    assert c.noise.endswith("over 2 runs")


def test_repeats_beyond_the_known_noise_widen_the_band() -> None:
    wild = Measure.of([1470.0, 1500.0, 1485.0], noise=1.0)
    c = compare(wild, Measure(1478.95, fixed=True))
    assert c.method == "t"
    assert c.band == pytest.approx(t_quantile(0.975, 2) * 15 / math.sqrt(3))


# ---------------------------------------------------------------- compare: tolerance / exact


def test_tolerance_is_the_band_of_one_run() -> None:
    tol = Tolerance.parse("5%")  # 5% of 0.878 = 0.0439
    same = compare(Measure(0.918), Measure(0.878, fixed=True), tolerance=tol, margin=0.1)
    assert same.method == "tolerance" and same.outcome is Outcome.SAME
    assert same.band == pytest.approx(0.0439)
    assert same.noise == "±0.044 from tolerance ±5%"
    diff = compare(Measure(0.828), Measure(0.878, fixed=True), tolerance=tol)
    assert diff.outcome is Outcome.DIFFERENT
    # two runs each carry it: the band of their difference is √2 wider
    runs = compare(Measure(0.918), Measure(0.878), tolerance=tol)
    assert runs.band == pytest.approx(0.0439 * math.sqrt(2))


def test_absolute_tolerance_boundary() -> None:
    tol = Tolerance.parse("0.01")
    c = compare(Measure(0.888), Measure(0.878, fixed=True), tolerance=tol)
    assert c.outcome is Outcome.CANT_TELL and not c.different  # |Δ| == 0.01 within float slack
    assert compare(Measure(0.888), Measure(0.878, fixed=True), tolerance=tol, margin=0.02).outcome is Outcome.SAME
    assert c.noise == "±0.010 from tolerance ±0.01"
    assert compare(Measure(0.889), Measure(0.878, fixed=True), tolerance=tol).outcome is Outcome.DIFFERENT


def test_tolerance_wider_than_the_margin_cannot_tell() -> None:
    # tolerance 2% of 1487 (29.7) against good 1470 / bad 1487: never both "≈ good" and "≈ bad"
    tol = Tolerance.parse("2%")
    run = Measure(1480.0)
    for ref in (1470.0, 1487.0):
        c = compare(run, Measure(ref, fixed=True), tolerance=tol, margin=8.5)
        assert c.outcome is Outcome.CANT_TELL


def test_tolerance_unused_when_noise_known() -> None:
    c = compare(
        Measure(0.879, 1319), Measure(0.878, 1319), margin=0.033, tolerance=Tolerance(0.0)
    )
    assert c.method == "fisher" and c.outcome is Outcome.SAME


def test_exact() -> None:
    c = compare(Measure(3.0), Measure(3.0))
    assert (c.method, c.outcome, c.band) == ("exact", Outcome.SAME, None)
    assert c.noise == "no noise estimate"
    assert compare(Measure(3.0), Measure(3.0001)).outcome is Outcome.DIFFERENT


def test_compare_rejects_nan() -> None:
    with pytest.raises(ValueError):
        compare(Measure(math.nan), Measure(1.0))


@pytest.mark.parametrize(
    ("a", "b", "kwargs"),
    [
        (Measure(0.879, 1319), Measure(0.878, 1319), {"margin": 0.033}),
        (Measure(0.879, 1319), Measure(0.944, 1319), {"margin": 0.033}),
        (Measure(0.90, 200), Measure(0.878, 200), {"margin": 0.033}),
        (Measure(0.90, 1319), Measure(0.878), {}),
        (Measure.of([100, 102, 98]), Measure.of([110, 111, 109]), {}),
        (Measure.of([100, 102, 98]), Measure(109), {}),
        (Measure(0.888), Measure(0.878), {"tolerance": Tolerance(0.01)}),
        (Measure(3.0), Measure(3.5), {}),
    ],
)
def test_compare_symmetric(a: Measure, b: Measure, kwargs: dict) -> None:
    ab, ba = compare(a, b, **kwargs), compare(b, a, **kwargs)
    assert isinstance(ab, Comparison)
    assert ab.delta == -ba.delta
    assert ab.outcome is ba.outcome
    assert ab.band == ba.band or ab.band == pytest.approx(ba.band)
    assert ab.method == ba.method


# ---------------------------------------------------------------- at_least / below


def test_at_least_proportion() -> None:
    yes = at_least(Measure(0.939, 1319), 0.92)
    assert isinstance(yes, Check)
    assert yes.result is True
    assert yes.band == pytest.approx(wilson_half(0.939, 1319))
    assert yes.noise == "±0.013 at n=1319, Wilson"
    assert at_least(Measure(0.888, 1319), 0.92).result is False
    maybe = at_least(Measure(0.925, 1319), 0.92)
    assert maybe.result is None
    n = int(maybe.needed.removeprefix("n ≥ ").replace(",", ""))
    assert at_least(Measure(0.925, n), 0.92).result is True
    assert at_least(Measure(0.925, n - 1), 0.92).result is None


def test_at_least_exactly_at_limit_has_no_needed() -> None:
    c = at_least(Measure(0.92, 1319), 0.92)
    assert c.result is None and c.needed is None


def test_below_proportion() -> None:
    assert below(Measure(0.888, 1319), 0.92).result is True
    assert below(Measure(0.939, 1319), 0.92).result is False
    maybe = below(Measure(0.925, 1319), 0.92)
    assert maybe.result is None and maybe.needed == at_least(Measure(0.925, 1319), 0.92).needed


def test_checks_with_repeats() -> None:
    # s = 2, k = 3: b = 4.302653 * 2 / sqrt(3) = 4.968
    a = Measure.of([100, 102, 98])
    c = at_least(a, 90)
    assert c.result is True
    assert c.band == pytest.approx(4.302653 * 2 / math.sqrt(3), abs=1e-5)
    assert c.noise == "±4.968 over 3 repeats (t, 2 df)"
    assert below(a, 106).result is True
    assert at_least(a, 106).result is False
    # 101 lies among the runs (98, 100, 102): gap 1, the smallest k with
    # t(0.975, k-1) * 2 / sqrt(k) < 1 is k = 18 (k=17: 2.119905 * 2 / 4.123 = 1.028; k=18: 0.994)
    unsure = at_least(a, 101)
    assert unsure.result is None and unsure.needed == "≥ 18 repeats"
    # every run below 103, but three runs this spread cannot show their mean is
    assert at_least(a, 103).result is None and at_least(a, 103).needed == "≥ 5 repeats"


def test_checks_use_the_tolerance() -> None:
    # 1487.4 is not "below" 1487.5 when one run is only known to ±0.5%
    tol = Tolerance.parse("0.5%")
    assert below(Measure(1487.4), 1487.5).result is True
    assert below(Measure(1487.4), 1487.5, tolerance=tol).result is None
    assert at_least(Measure(1487.4), 1478.95, tolerance=tol).result is True


def test_checks_without_noise_are_plain_comparisons() -> None:
    assert at_least(Measure(5.0), 5.0) == Check(True, None, "no noise estimate")
    assert below(Measure(5.0), 5.0).result is False
    assert below(Measure(4.9), 5.0).result is True
    assert at_least(Measure(4.9), 5.0).result is False


def test_two_runs_without_any_noise_use_their_own_spread() -> None:
    # one run with no noise known is a plain comparison; two runs show their spread (t, 1 df),
    # which cannot yet tell: never the opposite answer
    assert at_least(Measure(1487.4), 1478.95).result is True
    two = at_least(Measure.of([1486.0, 1487.4]), 1478.95)
    assert two.result is None and two.needed == "≥ 3 repeats"
    # with the noise declared, agreeing runs keep the decision
    assert at_least(Measure.of([1486.0, 1487.4], noise=2.0), 1478.95).result is True


def test_decision_boundary_is_the_band() -> None:
    # a fixed reference contributes no noise: the Wilson band of 0.5 at n=10000
    band = wilson_half(0.5, 10000)
    just_out = compare(Measure(0.5, 10000), Measure(0.5 - band - 1e-6, fixed=True))
    just_in = compare(Measure(0.5, 10000), Measure(0.5 - band + 1e-6, fixed=True))
    assert just_out.band == pytest.approx(0.0098, abs=1e-5)
    assert just_out.outcome is Outcome.DIFFERENT
    assert just_in.outcome is Outcome.CANT_TELL
    # the margin boundary: band <= margin is SAME, just above is CANT_TELL
    assert compare(Measure(0.5, 10000), Measure(0.5), margin=band + 1e-9).outcome is Outcome.SAME
    assert (
        compare(Measure(0.5, 10000), Measure(0.5), margin=band - 1e-6).outcome
        is Outcome.CANT_TELL
    )


def test_needed_n_for_a_value_a_hair_from_its_limit_is_quick() -> None:
    # (0.85 + 0.95) / 2 is 0.8999999999999999: a gap of ~1e-16 to a 0.9 gate
    # asks for an astronomical n; finding it must not walk there one by one.
    import time

    started = time.monotonic()
    c = below(Measure.of([0.85, 0.95], 1000), 0.9)
    assert c.result is None and c.needed is not None and c.needed.startswith("n ≥ ")
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("start", [1, 5, 17, 40, 10**6])
def test_smallest_finds_the_boundary_from_any_start(start) -> None:
    calls = []

    def ok(n: int) -> bool:
        calls.append(n)
        return n >= 17

    assert _smallest(start, ok, 1) == 17
    assert len(calls) < 60
    assert _smallest(start, lambda n: True, 3) == 3


def test_a_pools_noise_is_worked_out_once_however_many_comparisons_name_it(monkeypatch) -> None:
    """A pool of a config's runs is one measure, compared with each recipe and rule that names
    it: its variance and range are worked out once, not in each comparison (each asked the
    cache again, hashing the pool's 100,000 values, then went through them twice more)."""
    from triage.rules.decisions import stats

    asked: list[int] = []
    plain = stats._variance
    monkeypatch.setattr(stats, "_variance", lambda repeats: asked.append(len(repeats)) or plain(repeats))
    pool = Measure.of([0.88 + (i % 7) * 0.001 for i in range(5000)], noise=0.002)
    for value in (0.87, 0.88, 0.9, 0.95):
        compare(Measure.of([value, value + 0.001]), pool, tolerance=Tolerance(0.01))
    assert asked.count(5000) == 1


def test_a_measure_hashes_as_its_fields_once_and_anew_when_replaced() -> None:
    """A measure's hash is its fields' (as a frozen dataclass's), worked out once: equal
    measures hash alike, a measure made from another with a field changed has its own."""
    from dataclasses import astuple, replace

    a, b = Measure.of([0.91, 0.93, 0.92], 1319), Measure.of([0.91, 0.93, 0.92], 1319)
    assert a == b and a is not b and hash(a) == hash(b) == hash(astuple(a))
    assert a.__dict__["_hash"] == hash(a)  # kept with it
    a.__dict__["_hash"] += 1
    assert hash(a) == hash(b) + 1  # and read back, not worked out again
    for changed in (replace(a, n=1000), replace(a, noise=0.01), replace(a, repeats=(0.91, 0.93)),
                    replace(a, fixed=True), replace(a, scale=100.0), replace(a, value=0.5)):
        assert hash(changed) == hash(astuple(changed)) != hash(a)
