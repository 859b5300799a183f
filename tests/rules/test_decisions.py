"""The three-way decisions at their edges: holds (True), contradicted (False), can't tell (None).

Each case names an interval of the difference a - b, whether it is shown different, and the
margin; the expected verdict follows the rule in ``stats.judge``'s docstring. These are the
cases mutation testing found untested (docs/mutation.md): a decision that flipped, or a bound
that moved by a hair, passed every other test.
"""

from __future__ import annotations

import math

import pytest

from triage.rules.decisions.stats import Comparison, Measure, Outcome, Tolerance, at_least, below, compare, judge

EPS = 1e-9  # the slack judge allows at a bound (stats._EPS)


def interval(lo: float, hi: float, *, different: bool, margin: float | None = None, method: str = "noise",
             delta: float | None = None) -> Comparison:
    """A comparison whose difference lies in [lo, hi] (delta: its middle unless given)."""
    m = margin or 0.0
    d = (lo + hi) / 2 if delta is None else delta
    outcome = (Outcome.SAME if lo >= -m and hi <= m else Outcome.DIFFERENT if different else Outcome.CANT_TELL)
    return Comparison(outcome, d, (hi - lo) / 2, margin, method, "noise", None, lo, hi, None, different)


WORDS = ("better_than", "worse_than", "no_worse_than", "passes", "fails")

# (lo, hi, different, margin) -> verdict per word, higher is better
CASES = {
    "shown better by more than the margin": ((2.0, 4.0, True, 1.0), (True, False, True, True, False)),
    "shown better, within the margin": ((0.2, 0.8, True, 1.0), (None, False, True, True, False)),
    "around zero, narrower than the margin": ((-0.5, 0.5, False, 1.0), (False, False, True, None, None)),
    "around zero, wider than the margin": ((-3.0, 3.0, False, 1.0), (None, None, None, None, None)),
    "shown worse by more than the margin": ((-4.0, -2.0, True, 1.0), (False, True, False, False, True)),
    "shown worse, within the margin": ((-0.8, -0.2, True, 1.0), (False, None, True, False, True)),
    "shown worse, no margin": ((-0.8, -0.2, True, None), (False, True, False, False, True)),
    "shown better, no margin": ((0.2, 0.8, True, None), (True, False, True, True, False)),
    "around zero, no margin": ((-0.5, 0.5, False, None), (None, None, None, None, None)),
    "better by less than one, shown": ((0.25, 0.75, True, None), (True, False, True, True, False)),
}


@pytest.mark.parametrize("name", CASES)
def test_each_word_reads_the_interval_for_higher_is_better(name: str) -> None:
    (lo, hi, different, margin), expected = CASES[name]
    c = interval(lo, hi, different=different, margin=margin)
    assert tuple(judge(c, word, "higher") for word in WORDS) == expected


@pytest.mark.parametrize("name", CASES)
def test_lower_is_better_reads_the_mirrored_interval(name: str) -> None:
    (lo, hi, different, margin), expected = CASES[name]
    c = interval(-hi, -lo, different=different, margin=margin)
    assert tuple(judge(c, word, "lower") for word in WORDS) == expected


def test_higher_is_better_unless_told() -> None:
    c = interval(2.0, 4.0, different=True)
    assert (judge(c, "better_than"), judge(c, "worse_than")) == (True, False)
    assert (judge(c, "passes"), judge(c, "fails")) == (True, False)


# ---------------------------------------------------------------- at the bounds


def test_better_than_is_contradicted_up_to_the_margin_itself() -> None:
    # shown better, and not better by the margin: both, so can't tell (a narrower interval
    # around the same estimate would otherwise turn one answer into the other)
    assert judge(interval(0.5, 1.0, different=True, margin=1.0, delta=0.75), "better_than") is None
    assert judge(interval(0.5, 1.0 + 10 * EPS, different=True, margin=1.0, delta=0.75), "better_than") is True
    assert judge(interval(0.5, 1.0, different=False, margin=1.0), "better_than") is False
    assert judge(interval(0.5, 1.0 + 10 * EPS, different=False, margin=1.0), "better_than") is None


def test_worse_than_is_contradicted_down_to_minus_the_margin_itself() -> None:
    assert judge(interval(-1.0, -0.5, different=False, margin=1.0), "worse_than") is False
    assert judge(interval(-1.0 - 10 * EPS, -0.5, different=False, margin=1.0), "worse_than") is None
    assert judge(interval(-1.0, 1.0, different=False, margin=1.0), "worse_than") is False
    assert judge(interval(-2.0, 1.0, different=False, margin=1.0), "worse_than") is None


def test_no_worse_than_holds_down_to_minus_the_margin_itself() -> None:
    assert judge(interval(-1.0, 0.5, different=False, margin=1.0), "no_worse_than") is True
    assert judge(interval(-1.0 - 10 * EPS, 0.5, different=False, margin=1.0), "no_worse_than") is None
    assert judge(interval(-3.0, -1.0, different=True, margin=1.0), "no_worse_than") is None
    assert judge(interval(-3.0, -1.0 - 10 * EPS, different=True, margin=1.0), "no_worse_than") is False


def test_no_worse_than_without_a_margin_is_contradicted_once_shown_worse() -> None:
    assert judge(interval(-0.8, -0.2, different=True), "no_worse_than") is False
    assert judge(interval(-0.8, 0.2, different=False), "no_worse_than") is None
    assert judge(interval(0.0, 0.2, different=False), "no_worse_than") is True


def test_exactly_at_the_threshold_with_no_noise_passes() -> None:
    at_it = interval(0.0, 0.0, different=False, method="exact")
    assert (judge(at_it, "passes"), judge(at_it, "fails")) == (True, False)
    noisy = interval(-1.0, 1.0, different=False, method="noise", delta=0.0)
    assert (judge(noisy, "passes"), judge(noisy, "fails")) == (None, None)


def test_an_interval_not_given_is_the_difference_itself() -> None:
    exact = Comparison(Outcome.DIFFERENT, -0.5, 0.0, 1.0, "exact", "no noise estimate", different=True)
    assert judge(exact, "no_worse_than") is True  # -0.5 is within the margin of 1
    assert judge(exact, "worse_than") is True  # exact: shown worse, and no run narrows it
    exact = Comparison(Outcome.DIFFERENT, 2.0, 0.0, 1.0, "exact", "no noise estimate", different=True)
    assert judge(exact, "better_than") is True and judge(exact, "worse_than") is False
    exact = Comparison(Outcome.SAME, 0.5, 0.0, 1.0, "exact", "no noise estimate")
    assert judge(exact, "better_than") is False  # not better by the margin


def test_an_unknown_word_is_refused_naming_the_words() -> None:
    with pytest.raises(ValueError, match=r"unknown direction word 'above'; expected one of better_than, "
                                         r"worse_than, no_worse_than, passes, fails, same_as, differs_from"):
        judge(interval(1.0, 2.0, different=True), "above")


# ---------------------------------------------------------------- from measures


def test_a_measured_difference_reads_through_judge() -> None:
    """The same decisions from compare: no noise, one run each (exact), and a known noise."""
    exact = compare(Measure(10.5), Measure(10.0))
    assert (judge(exact, "better_than"), judge(exact, "worse_than"), judge(exact, "fails")) == (True, False, False)
    assert judge(exact, "better_than", "lower") is False and judge(exact, "worse_than", "lower") is True
    noisy = compare(Measure(10.5, noise=1.0), Measure(10.0, fixed=True))  # ±1.96: can't tell
    assert [judge(noisy, w) for w in WORDS] == [None, None, None, None, None]
    with_margin = compare(Measure(10.5, noise=1.0), Measure(10.0, fixed=True), margin=3.0)
    assert [judge(with_margin, w) for w in WORDS] == [False, False, True, None, None]


def test_cant_tell_keeps_the_margin_it_was_judged_with() -> None:
    c = compare(Measure(10.5, noise=1.0), Measure(10.0, fixed=True), margin=2.0)  # [-1.46, 2.46] vs ±2
    assert (c.outcome, c.margin) == (Outcome.CANT_TELL, 2.0)
    assert (judge(c, "no_worse_than"), judge(c, "better_than"), judge(c, "same_as")) == (True, None, None)


def test_at_least_and_below_are_two_sides_of_one_decision() -> None:
    assert (at_least(Measure(10.5), 10.0).result, below(Measure(10.5), 10.0).result) == (True, False)
    assert (at_least(Measure(9.5), 10.0).result, below(Measure(9.5), 10.0).result) == (False, True)
    assert (at_least(Measure(10.0), 10.0).result, below(Measure(10.0), 10.0).result) == (True, False)
    noisy = Measure(10.5, noise=1.0)
    assert (at_least(noisy, 10.0).result, below(noisy, 10.0).result) == (None, None)


def test_equal_questions_of_another_type_or_sign_are_answered_apart() -> None:
    """compare keeps its answers; 1 and 1.0, 0.0 and -0.0 are equal but print apart, so each
    gets its own."""
    assert type(compare(Measure(3), Measure(1)).delta) is int
    assert type(compare(Measure(3.0), Measure(1)).delta) is float
    assert type(compare(Measure(3), Measure(1.0)).delta) is float
    assert math.copysign(1.0, compare(Measure(-0.0), Measure(0.0)).delta) == -1.0
    assert math.copysign(1.0, compare(Measure(-0.0), Measure(-0.0)).delta) == 1.0
    assert math.copysign(1.0, compare(Measure(0.0), Measure(0.0)).delta) == 1.0


@pytest.mark.parametrize("values, noise, method", [
    ([10.0, 12.0], 1.0, "noise"),   # spread 2 ≤ z·σ·√2 = 2.77: they agree, though their variance is 2σ²
    ([10.0, 15.0], 2.0, "noise"),   # spread 5 ≤ 5.54
    ([10.0, 16.0], 2.0, "t"),       # spread 6 > 5.54: their own spread
    ([10.0, 14.0], 1.0, "t"),       # spread 4 > 2.77
])
def test_repeats_keep_the_known_noise_while_their_spread_agrees_with_it(values, noise, method) -> None:
    c = compare(Measure.of(values, noise=noise), Measure(0.0, fixed=True))
    assert c.method == method


def test_a_run_at_the_mean_keeps_better_than_as_it_read() -> None:
    """One run 1.0 below a fixed 1.0 (lower is better), tolerance ±1, margin 2: not better by
    the margin. A second run at the same value narrows the interval to [0.29, 1.71] better:
    shown better, and still not by the margin: can't tell, never "holds"."""
    one, two, ref = Measure.of([0.0]), Measure.of([0.0, 0.0]), Measure(1.0, fixed=True)
    verdicts = [judge(compare(m, ref, margin=2.0, tolerance=Tolerance(1.0), confidence=0.9), "better_than", "lower")
                for m in (one, two)]
    assert verdicts == [False, None]  # not better by the margin; then shown better too: can't tell
    assert compare(two, ref, margin=2.0, tolerance=Tolerance(1.0), confidence=0.9).different


def test_more_runs_at_the_mean_never_turn_better_than_from_holds_to_contradicted() -> None:
    """Two runs 8 below a fixed 8 (lower is better), tolerance ±9, margin 14: shown better,
    and the interval of the improvement [1.6, 14.4] reaches the margin: holds. A third run at
    the same value narrows it to [2.8, 13.2]: now also not better by the margin: can't tell,
    never contradicted."""
    ref = Measure(8.0, fixed=True)
    verdicts = [judge(compare(Measure.of([0.0] * k), ref, margin=14.0, tolerance=Tolerance(9.0), confidence=0.9),
                      "better_than", "lower") for k in (2, 3)]
    assert verdicts == [True, None]
