"""A pool's exact sums (:mod:`triage.rules.decisions.sums`) say what ``statistics.fmean`` and
``statistics.variance`` say of its values, to the last bit, however the values came in (all
at once, or a few at a time as runs are added), and after being stored and read back; a
measure made with them is the measure made from the values."""

from __future__ import annotations

import math
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.rules.decisions.stats import Measure
from triage.rules.decisions.sums import Sums, exact_values

# proportions near one another (what a pool of accuracies holds), and values of any size
near = st.floats(0.80, 0.95, allow_nan=False)
wide = st.floats(-1e15, 1e15, allow_nan=False, allow_infinity=False)
values = st.one_of(st.lists(near, min_size=2, max_size=60), st.lists(wide, min_size=2, max_size=60),
                   st.lists(st.one_of(near, wide, st.sampled_from([0.0, -0.0, 5e-324, 1e-300])), min_size=2))


@settings(settings.get_profile("stats-properties"))
@given(values, st.lists(st.integers(1, 5), max_size=6))
def test_sums_say_what_the_statistics_module_says(vals: list[float], cuts: list[int]) -> None:
    whole = Sums.of(vals)
    assert whole.mean() == statistics.fmean(vals) and whole.variance() == statistics.variance(vals)
    assert whole.spread() == (statistics.variance(vals), max(vals) - min(vals))
    # grown a few values at a time, as a pool is by add-runs, and read back as stored
    grown, at = Sums.of(vals[:1]), 1
    for cut in cuts + [len(vals)]:
        grown = Sums.decoded(grown.plus(vals[at:at + cut]).encoded())
        at += cut
    assert grown.count == len(vals) and grown.spread() == whole.spread() and grown.mean() == whole.mean()


@settings(settings.get_profile("stats-properties"))
@given(values, st.one_of(st.none(), st.integers(1, 5000)), st.one_of(st.none(), st.floats(0, 1)),
       st.sampled_from([1.0, 100.0]))
def test_a_measure_made_with_sums_is_the_measure_made_from_the_values(vals, n, noise, scale) -> None:
    plain = Measure.of(vals, n, noise=noise, scale=scale)
    summed = Measure.of(vals, n, noise=noise, scale=scale, sums=Sums.of(vals))
    assert "spread" in summed.__dict__  # given by the sums, not worked out from the values
    assert summed == plain and summed.value == plain.value and summed.spread == plain.spread


def test_adding_to_sums_leaves_them_as_they_were() -> None:
    """A kept pool's sums are shared by the pieces that read it: adding makes new ones."""
    kept = Sums.of([0.9, 0.91])
    grown = kept.plus([0.5])
    assert (kept.count, kept.lo, kept.mean()) == (2, 0.9, statistics.fmean([0.9, 0.91]))
    assert (grown.count, grown.lo) == (3, 0.5)


def test_only_finite_floats_are_summed() -> None:
    assert exact_values([0.5, 1e300, -0.0]) and not exact_values([0.5, 1]) and not exact_values([math.inf])


def test_a_pool_keeps_its_sums_and_grows_them_with_its_runs() -> None:
    from triage.rules.engine.evaluate import RunRec
    from triage.rules.engine.pools import POOLED

    runs = [RunRec(f"{i}", "base", "failed", {"acc": (0.88 + i / 1000, 1000)}) for i in range(5)]
    pool = POOLED.decode(POOLED.encode(_pooled(runs[:3])))
    grown = pool.added(runs[3:], "acc")
    assert grown is not None and grown.sums is not None
    assert grown.sums.spread() == Sums.of(grown.values).spread() == _pooled(runs).sums.spread()
    old = POOLED.encode(pool)[:5]  # kept by a triage that kept no sums: read back without them
    assert POOLED.decode(old).sums is None and POOLED.decode(old).values == pool.values


def _pooled(runs: list) -> object:
    from triage.rules.engine.pools import Pooled

    return Pooled.of("base", runs, "acc")
