"""Tests for triage.rules.stats, checked against numbers derived by hand."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from triage.rules.stats import (
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


# ---------------------------------------------------------------- compare: binomial


def test_binomial_same() -> None:
    c = compare(Measure(0.879, 1319), Measure(0.878, 1319), margin=0.033)
    expected = 1.96 * math.sqrt(0.879 * 0.121 / 1319 + 0.878 * 0.122 / 1319)  # ~0.0250
    assert c.method == "binomial"
    assert c.band == pytest.approx(expected, rel=1e-3)
    assert c.band == pytest.approx(0.02493, abs=1e-5)
    assert c.outcome is Outcome.SAME
    assert c.delta == pytest.approx(0.001)
    assert c.margin == 0.033
    assert c.noise == "±0.025 at n=1319"
    assert c.needed is None


def test_binomial_different() -> None:
    c = compare(Measure(0.879, 1319), Measure(0.944, 1319), margin=0.033)
    assert c.outcome is Outcome.DIFFERENT
    assert c.band == pytest.approx(binomial_band((0.879, 1319), (0.944, 1319)))
    assert c.delta == pytest.approx(-0.065)


def test_binomial_cant_tell_and_needed_n_decides() -> None:
    a, b = Measure(0.90, 200), Measure(0.878, 200)
    c = compare(a, b, margin=0.033)
    assert c.band == pytest.approx(binomial_band((0.90, 200), (0.878, 200)))
    assert c.band == pytest.approx(0.06153, abs=1e-5)
    assert c.outcome is Outcome.CANT_TELL
    # n = ceil(q^2 (p1(1-p1) + p2(1-p2)) / margin^2) = ceil(695.3) = 696
    n = math.ceil(Z**2 * (0.90 * 0.10 + 0.878 * 0.122) / 0.033**2)
    assert n == 696
    assert c.needed == "n ≥ 696 per run"
    bigger = compare(Measure(0.90, n), Measure(0.878, n), margin=0.033)
    assert bigger.outcome is not Outcome.CANT_TELL
    assert bigger.outcome is Outcome.SAME
    smaller = compare(Measure(0.90, n - 1), Measure(0.878, n - 1), margin=0.033)
    assert smaller.outcome is Outcome.CANT_TELL


def test_binomial_needed_uses_thousands_separator() -> None:
    c = compare(Measure(0.90, 1319), Measure(0.89, 1319), margin=0.01)
    n = math.ceil(Z**2 * (0.90 * 0.10 + 0.89 * 0.11) / 0.01**2)  # ceil(7218.1)
    assert c.outcome is Outcome.CANT_TELL
    assert c.needed == f"n ≥ {n:,} per run" and "," in c.needed


def test_binomial_mixed_n_and_fixed_reference() -> None:
    c = compare(Measure(0.90, 1319), Measure(0.878, 200))
    assert c.noise.endswith("at n=1319+200")
    assert c.band == pytest.approx(binomial_band((0.90, 1319), (0.878, 200)))
    fixed = compare(Measure(0.90, 1319), Measure(0.878))
    assert fixed.band == pytest.approx(binomial_band((0.90, 1319)))
    assert fixed.noise == f"±{fmt(fixed.band)} at n=1319"
    assert fixed.outcome is Outcome.DIFFERENT  # 0.022 > 0.0162


def test_binomial_needs_values_in_unit_interval() -> None:
    c = compare(Measure(1.5, 100), Measure(1.4, 100))
    assert c.method == "exact"


def test_no_margin_means_no_cant_tell() -> None:
    c = compare(Measure(0.90, 200), Measure(0.878, 200))
    assert c.outcome is Outcome.SAME


def test_confidence_changes_quantile() -> None:
    c = compare(Measure(0.879, 1319), Measure(0.878, 1319), confidence=0.99)
    z99 = NormalDist().inv_cdf(0.995)
    assert c.band == pytest.approx(binomial_band((0.879, 1319), (0.878, 1319)) / Z * z99)
    with pytest.raises(ValueError):
        compare(Measure(0.5, 10), Measure(0.5, 10), confidence=1.0)


# ---------------------------------------------------------------- compare: welch


def test_welch_different() -> None:
    a, b = Measure.of([100, 102, 98]), Measure.of([110, 111, 109])
    c = compare(a, b)
    # s1^2 = 4, s2^2 = 1; SE = sqrt(4/3 + 1/3); df = (5/3)^2 / ((4/3)^2/2 + (1/3)^2/2) = 50/17
    se = math.sqrt(5 / 3)
    assert c.method == "welch"
    assert c.band == pytest.approx(t_quantile(0.975, 50 / 17) * se, rel=1e-9)
    assert 3.182446 * se < c.band < 4.302653 * se
    assert c.outcome is Outcome.DIFFERENT
    assert c.delta == -10
    assert c.noise == f"±{fmt(c.band)} over 3+3 repeats"


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


def test_welch_single_value_borrows_variance() -> None:
    # SE = sqrt(4/3 + 4/1), df = 2: band = 4.302653 * 2.309401 = 9.93655
    a = Measure.of([100, 102, 98])
    c = compare(a, Measure(110))
    assert c.band == pytest.approx(4.302653 * math.sqrt(16 / 3), abs=1e-5)
    assert c.outcome is Outcome.DIFFERENT
    assert c.noise.endswith("over 3+1 repeats")
    assert compare(a, Measure(109)).outcome is Outcome.SAME


def test_welch_zero_variance_falls_back() -> None:
    a, b = Measure.of([5.0, 5.0, 5.0]), Measure.of([5.0, 5.0])
    assert compare(a, b).method == "exact"
    assert compare(a, b).outcome is Outcome.SAME
    assert compare(a, Measure.of([5.1, 5.1])).outcome is Outcome.DIFFERENT
    tol = compare(a, Measure.of([5.1, 5.1]), tolerance=Tolerance.parse("0.2"))
    assert tol.method == "tolerance" and tol.outcome is Outcome.SAME


# ---------------------------------------------------------------- compare: tolerance / exact


def test_relative_tolerance() -> None:
    tol = Tolerance.parse("5%")  # 5% of 0.878 = 0.0439
    same = compare(Measure(0.918), Measure(0.878), tolerance=tol)
    assert same.method == "tolerance" and same.outcome is Outcome.SAME
    assert same.band is None
    assert same.noise == "tolerance ±5% (±0.044)"
    diff = compare(Measure(0.828), Measure(0.878), tolerance=tol)
    assert diff.outcome is Outcome.DIFFERENT


def test_absolute_tolerance_boundary() -> None:
    tol = Tolerance.parse("0.01")
    c = compare(Measure(0.888), Measure(0.878), tolerance=tol)
    assert c.outcome is Outcome.SAME  # |Δ| == 0.01 within float slack
    assert c.noise == "tolerance ±0.01"
    assert compare(Measure(0.889), Measure(0.878), tolerance=tol).outcome is Outcome.DIFFERENT


def test_tolerance_unused_when_noise_known() -> None:
    c = compare(
        Measure(0.879, 1319), Measure(0.878, 1319), margin=0.033, tolerance=Tolerance(0.0)
    )
    assert c.method == "binomial" and c.outcome is Outcome.SAME


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


def test_at_least_binomial() -> None:
    # b = 1.96 sqrt(.939 * .061 / 1319) = 0.0129 -> 0.926 >= 0.92
    yes = at_least(Measure(0.939, 1319), 0.92)
    assert isinstance(yes, Check)
    assert yes.result is True
    assert yes.band == pytest.approx(binomial_band((0.939, 1319)))
    assert yes.noise == "±0.013 at n=1319"
    # b = 0.0170 -> 0.905 < 0.92
    assert at_least(Measure(0.888, 1319), 0.92).result is False
    # b = 0.0142 straddles 0.92; n = ceil(z^2 * .925 * .075 / .005^2) = ceil(10660.05)
    maybe = at_least(Measure(0.925, 1319), 0.92)
    assert maybe.result is None
    n = math.ceil(Z**2 * 0.925 * 0.075 / (0.925 - 0.92) ** 2)
    assert n == 10661
    assert maybe.needed == "n ≥ 10,661"
    assert at_least(Measure(0.925, n), 0.92).result is True
    assert at_least(Measure(0.925, n - 1), 0.92).result is None


def test_at_least_exactly_at_limit_has_no_needed() -> None:
    c = at_least(Measure(0.92, 1319), 0.92)
    assert c.result is None and c.needed is None


def test_below_binomial() -> None:
    assert below(Measure(0.888, 1319), 0.92).result is True
    assert below(Measure(0.939, 1319), 0.92).result is False
    maybe = below(Measure(0.925, 1319), 0.92)
    assert maybe.result is None and maybe.needed == "n ≥ 10,661"


def test_checks_with_repeats() -> None:
    # s = 2, k = 3: b = 4.302653 * 2 / sqrt(3) = 4.968
    a = Measure.of([100, 102, 98])
    c = at_least(a, 90)
    assert c.result is True
    assert c.band == pytest.approx(4.302653 * 2 / math.sqrt(3), abs=1e-5)
    assert c.noise == "±4.968 over 3 repeats"
    assert below(a, 106).result is True
    assert at_least(a, 106).result is False
    # gap 3: smallest k with t(0.975, k-1) * 2 / sqrt(k) <= 3 is k = 5
    #   (k=3: 4.968; k=4: 3.182446 * 2 / 2 = 3.182; k=5: 2.776445 * 2 / 2.236 = 2.483)
    unsure = at_least(a, 103)
    assert unsure.result is None and unsure.needed == "≥ 5 repeats"


def test_checks_without_noise_are_plain_comparisons() -> None:
    assert at_least(Measure(5.0), 5.0) == Check(True, None, "no noise estimate")
    assert below(Measure(5.0), 5.0).result is False
    assert below(Measure(4.9), 5.0).result is True
    assert at_least(Measure(4.9), 5.0).result is False


def test_decision_boundary_is_the_band() -> None:
    # a fixed reference contributes no noise: band = z * sqrt(.5 * .5 / 10000) = 0.0098
    band = Z * 0.005
    just_out = compare(Measure(0.5, 10000), Measure(0.5 - band - 1e-6))
    just_in = compare(Measure(0.5, 10000), Measure(0.5 - band + 1e-6))
    assert just_out.band == pytest.approx(0.0098, abs=1e-6)
    assert just_out.outcome is Outcome.DIFFERENT
    assert just_in.outcome is Outcome.SAME
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
