"""What a decision says, word for word: the summary of each direction word in each case, the noise
phrase of each method, and the numbers in them (mutation survivors that changed only the words;
docs/mutation.md). A verdict with the wrong words reads as another verdict."""

from __future__ import annotations

import math

import pytest

from tests.support.engine import BASE, inv, run
from triage.rules.decisions.conditions import evaluate_condition
from triage.rules.decisions.stats import Measure, Tolerance, _fmt_p, _plain, compare, fmt
from triage.rules.engine.context import Context
from triage.rules.language.schema import Condition

LOWER = BASE.replace("  metric: acc\n", "  metric: acc\n  direction: lower\n")
CASES = {  # a against b, 1,319 samples each unless said
    "a higher": ((0.96, 1319), (0.88, 1319)),
    "a lower": ((0.80, 1319), (0.88, 1319)),
    "a hair apart": ((0.881, 1319), (0.88, 1319)),
    "too few samples": ((0.90, 100), (0.88, 100)),
}
WORDS = ("better_than", "worse_than", "no_worse_than")


def said(case: "str | tuple", direction: str) -> list[tuple[str, str, str]]:
    (va, na), (vb, nb) = CASES[case] if isinstance(case, str) else case
    ctx = Context(inv(runs=[run("1", "a", va, n=na), run("2", "b", vb, n=nb)],
                      base=BASE if direction == "higher" else LOWER))
    out = []
    for word in WORDS:
        r = evaluate_condition(Condition.model_validate({"config": "a", word: {"config": "b"}}), ctx, None)
        out.append((word, r.value.name, r.short[0]))
    for word in ("passes", "fails"):
        r = evaluate_condition(Condition.model_validate({"config": "a", word: vb}), ctx, None)
        out.append((word, r.value.name, r.short[0]))
    return out


EXPECTED = {
    ("a higher", "higher"): ("TRUE FALSE TRUE TRUE FALSE", "a 0.960 better than b 0.880", "a 0.960 better than 0.880"),
    ("a lower", "higher"): ("FALSE TRUE FALSE FALSE TRUE", "a 0.800 worse than b 0.880", "a 0.800 worse than 0.880"),
    ("a higher", "lower"): ("FALSE TRUE FALSE FALSE TRUE", "a 0.960 worse than b 0.880", "a 0.960 worse than 0.880"),
    ("a lower", "lower"): ("TRUE FALSE TRUE TRUE FALSE", "a 0.800 better than b 0.880", "a 0.800 better than 0.880"),
    # within the margin (half the good-bad gap): the same for the margin words; passes and
    # fails have no margin, and cannot tell a hair
    ("a hair apart", "higher"): ("FALSE FALSE TRUE UNKNOWN UNKNOWN", "a 0.881 ≈ b 0.880", "a 0.881 vs 0.880: can't tell"),
    ("a hair apart", "lower"): ("FALSE FALSE TRUE UNKNOWN UNKNOWN", "a 0.881 ≈ b 0.880", "a 0.881 vs 0.880: can't tell"),
    ("too few samples", "higher"): ("UNKNOWN UNKNOWN UNKNOWN UNKNOWN UNKNOWN", "a 0.900 vs b 0.880: can't tell",
                                    "a 0.900 vs 0.880: can't tell"),
}


@pytest.mark.parametrize("case, direction", EXPECTED)
def test_each_direction_word_says_its_verdict(case, direction):
    verdicts, by_margin, by_number = EXPECTED[(case, direction)]
    got = said(case, direction)
    assert " ".join(v for _, v, _ in got) == verdicts
    assert {s for w, _, s in got if w in WORDS} == {by_margin}
    assert {s for w, _, s in got if w not in WORDS} == {by_number}


def test_contradicted_or_held_without_being_shown_different_says_not_better_or_not_worse():
    """400 samples: 0.86 vs 0.88 cannot be better by the margin, yet is not shown worse; 0.90 vs
    0.88 cannot be worse by it: "not better than", "not worse than", not "can't tell"."""
    low, high = said(((0.86, 400), (0.88, 400)), "higher"), said(((0.90, 400), (0.88, 400)), "higher")
    assert low[0] == ("better_than", "FALSE", "a 0.860 not better than b 0.880")
    assert low[1] == ("worse_than", "UNKNOWN", "a 0.860 vs b 0.880: can't tell")
    assert high[1] == ("worse_than", "FALSE", "a 0.900 not worse than b 0.880")
    assert high[2] == ("no_worse_than", "TRUE", "a 0.900 not worse than b 0.880")


# ------------------------------------------------------------------ the noise phrase of each method


@pytest.mark.parametrize("a, b, kw, method, noise, needed", [
    (Measure(10.0, noise=0.5), Measure(9.0, noise=0.5), {}, "noise", "±1.386 from run noise ±0.500 SD",
     "≥ 2 repeats per side"),
    (Measure(10.0), Measure(9.0), {"tolerance": Tolerance.parse("5%")}, "tolerance", "±0.636 from tolerance ±5%",
     None),
    (Measure.of([10.0, 10.5, 9.5]), Measure.of([9.0, 9.4, 8.6]), {}, "t", "±1.046 over 3+3 repeats (t, 3.8 df)",
     "≥ 4 repeats per side"),
    (Measure(9.0), Measure.of([10.0, 10.5, 9.5]), {}, "t", "±2.484 over 1+3 repeats (t, 2 df)",
     "≥ 5 repeats per side"),
    (Measure.of([10.0, 10.1]), Measure(9.0), {"tolerance": Tolerance.parse(0.3)}, "tolerance",
     "±0.367 from tolerance ±0.3 over 2+1 runs", None),
    (Measure.of([10.0, 10.4]), Measure(9.0, fixed=True), {}, "t", "±2.541 over 2 repeats (t, 1 df)", "≥ 3 repeats"),
])
def test_each_method_names_its_noise_and_what_would_decide(a, b, kw, method, noise, needed):
    c = compare(a, b, **kw)
    assert (c.method, c.noise, c.needed) == (method, noise, needed)


# ------------------------------------------------------------------ numbers in words


@pytest.mark.parametrize("x, text", [(0.8781, "0.878"), (9.9996, "10.00"), (99.996, "100.0"), (123456.78, "123456.8"),
                                     (999999.96, "1000000"), (2e6, "2000000"), (-0.0001, "0.000"), (-1.5, "-1.500"),
                                     (math.nan, "nan"), (math.inf, "inf")])
def test_fmt_keeps_three_significant_places_below_ten_and_fewer_above(x, text):
    assert fmt(x) == text


@pytest.mark.parametrize("x, text", [(1e-7, "0.0000001"), (1.50, "1.5"), (-0.0, "0"), (1e20, "100000000000000000000"),
                                     (2.0, "2"), (0.1, "0.1")])
def test_plain_numbers_have_no_exponent_and_no_trailing_zeros(x, text):
    assert _plain(x) == text


@pytest.mark.parametrize("p, text", [(0.0009, "p < 0.001"), (0.001, "p = 0.001"), (0.0512, "p = 0.051"), (0.54, "p = 0.54")])
def test_p_values_in_words(p, text):
    assert _fmt_p(p) == text


@pytest.mark.parametrize("given, shown, amount, relative", [("2.5 %", "2.5%", 0.025, True), (0.01, "0.01", 0.01, False),
                                                            ("0.10", "0.1", 0.1, False), ("12.5%", "12.5%", 0.125, True),
                                                            (3, "3", 3.0, False)])
def test_a_tolerance_reads_and_prints_as_written(given, shown, amount, relative):
    t = Tolerance.parse(given)
    assert (str(t), t.amount, t.relative) == (shown, pytest.approx(amount), relative)
    assert t.absolute(-200.0) == pytest.approx(amount * 200.0 if relative else amount)


@pytest.mark.parametrize("given, message", [
    (True, "tolerance must be a number or a percentage, got True"),
    ("abc", "tolerance must be a number like 0.01 or a percentage like 5%, got 'abc'"),
    ("", "tolerance must be a number like 0.01 or a percentage like 5%, got ''"),
    ("inf", "tolerance must be finite, got 'inf'"),
    ("nan%", "tolerance must be finite, got 'nan%'"),
    ("-1", "tolerance must not be negative, got '-1'"),
])
def test_a_bad_tolerance_says_what_it_must_be(given, message):
    with pytest.raises(ValueError) as e:
        Tolerance.parse(given)
    assert str(e.value) == message


def test_a_measure_of_runs_is_their_mean_with_the_repeats_kept_from_two():
    one = Measure.of([1.25], n=7, noise=0.1, scale=100.0)
    assert (one.value, one.n, one.repeats, one.noise, one.fixed, one.scale, one.runs) == (1.25, 7, (), 0.1, False, 100.0, 1)
    two = Measure.of([1, 2], n=5, noise=0.2, scale=100.0)
    assert (two.value, two.n, two.repeats, two.noise, two.scale, two.runs) == (1.5, 5, (1.0, 2.0), 0.2, 100.0, 2)
    assert isinstance(two.repeats[0], float)
    with pytest.raises(ValueError, match="^Measure.of needs at least one value$"):
        Measure.of([])
