"""The noise model's distributions against scipy (a test dependency only), to 1e-9."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

scipy_stats = pytest.importorskip("scipy.stats")

from triage.rules.decisions.distributions import fisher_exact, newcombe, t_quantile, wilson, z_quantile  # noqa: E402

Z95 = z_quantile(0.975)


@pytest.mark.parametrize("df", [1, 1.5, 2, 3, 4.5, 7, 10, 29, 30, 100, 1000, 12345.6, 2e5])
@pytest.mark.parametrize("p", [0.55, 0.8, 0.9, 0.95, 0.975, 0.995, 0.9995])
def test_t_quantile_matches_scipy(p: float, df: float) -> None:
    assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("df", [53.034517797005144])  # Welch's df of 23 runs against 9
def test_t_quantile_whose_newton_step_is_below_a_float_step_matches_scipy(df: float) -> None:
    """Newton's step at this df was smaller than one float step: the new point equalled the
    old one, failed the bracket's check and was halved towards an open end (infinity), and
    the next step took the log of 0 ("math domain error" out of a comparison)."""
    assert t_quantile(0.975, df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("k", "n"),
    [(0, 1), (1, 1), (0, 4), (4, 4), (1, 20), (3, 20), (7, 50), (0, 50), (50, 50),
     (91, 100), (470, 511), (1158, 1319), (1245, 1319), (1, 100000)],
)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy(k: int, n: int, confidence: float) -> None:
    ref = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    z = z_quantile((1 + confidence) / 2)
    lo, hi = wilson(k / n, n, z)
    assert lo == pytest.approx(ref.low, abs=1e-9)
    assert hi == pytest.approx(ref.high, abs=1e-9)
    assert hi - lo > 0  # never zero-width while n is finite


@pytest.mark.parametrize(
    ("k1", "n1", "k2", "n2"),
    [(0, 1, 4, 4), (7, 50, 0, 50), (3, 20, 0, 20), (1, 10, 9, 10), (5, 5, 0, 5), (0, 10, 0, 10),
     (10, 10, 10, 10), (1158, 1319, 1245, 1319), (1159, 1319, 1158, 1319), (12, 40, 30, 60),
     (2, 3, 1, 300), (470, 511, 482, 511)],
)
def test_fisher_exact_matches_scipy(k1: int, n1: int, k2: int, n2: int) -> None:
    table = [[k1, n1 - k1], [k2, n2 - k2]]
    ref = scipy_stats.fisher_exact(table, alternative="two-sided").pvalue
    assert fisher_exact(k1, n1, k2, n2) == pytest.approx(ref, abs=1e-9, rel=1e-9)


def test_fisher_worked_example() -> None:
    # "main fails 7/50, revert 0/50": Fisher p = 0.012
    assert fisher_exact(7, 50, 0, 50) == pytest.approx(0.0125, abs=5e-4)
    assert fisher_exact(0, 1, 4, 4) == pytest.approx(0.2)


@pytest.mark.parametrize(("k1", "n1", "k2", "n2"), [(7, 50, 0, 50), (56, 70, 48, 80), (9, 10, 3, 10)])
def test_newcombe_from_scipy_wilson(k1: int, n1: int, k2: int, n2: int) -> None:
    # Newcombe's method 10 built from scipy's Wilson limits.
    w1 = scipy_stats.binomtest(k1, n1).proportion_ci(0.95, method="wilson")
    w2 = scipy_stats.binomtest(k2, n2).proportion_ci(0.95, method="wilson")
    p1, p2 = k1 / n1, k2 / n2
    lo_ref = p1 - p2 - math.hypot(p1 - w1.low, w2.high - p2)
    hi_ref = p1 - p2 + math.hypot(w1.high - p1, p2 - w2.low)
    lo, hi = newcombe(p1, n1, p2, n2, Z95)
    assert lo == pytest.approx(lo_ref, abs=1e-9)
    assert hi == pytest.approx(hi_ref, abs=1e-9)


@given(p=st.floats(0.5001, 0.99999), df=st.floats(1.0, 2e6))
@settings(max_examples=400, deadline=None, derandomize=True)
def test_t_quantile_matches_scipy_anywhere(p: float, df: float) -> None:
    """Any confidence and any degrees of freedom a Welch comparison gives (fractional, from
    about 1 to millions): the quantile is scipy's, to 1e-9 (the two differ by up to 2.4e-10
    between 50,000 and 80,000 degrees of freedom, as the first form of this function did)."""
    t_quantile.cache_clear()  # worked out here, not recalled
    assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("df", [4.5, 10, 29, 78.3, 822.6, 12927.0, 15515.8])
def test_t_quantile_few_tail_evaluations(df: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quantile at the degrees of freedom a comparison of repeats gives costs one or two
    evaluations of the tail (each a continued fraction of up to hundreds of terms): it starts
    from the Cornish-Fisher expansion, and stops once Newton's step is below what it can move."""
    from triage.rules.decisions import distributions

    calls = []
    tail = distributions._t_sf
    monkeypatch.setattr(distributions, "_t_sf", lambda t, d: calls.append(t) or tail(t, d))
    t_quantile.cache_clear()
    got = t_quantile(0.975, df)
    assert got == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-11)
    assert len(calls) <= (3 if df < 10 else 2)
