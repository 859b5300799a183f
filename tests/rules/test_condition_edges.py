"""Conditions at their edges, as mutation testing found them untested (docs/mutation.md):
a bisect's state before it converges, `count:` and `distinct:` and what they say is needed,
`between:`, and advice that a benchmark's size cannot follow."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support.engine import BASE, inv, run
from triage.rules.decisions.conditions import _count, _on_bisect, _within_benchmark
from triage.rules.engine.evaluate import evaluate
from triage.rules.engine.records import V, BisectState, PointState, RunRec
from triage.rules.language.schema import Condition

LABELS = ("p0", "p1", "p2", "p3", "p4", "p5")


def bisect(last_good: str | None, first_bad: str | None, done: bool = False) -> SimpleNamespace:
    """A context holding one bisect `img` over p0..p5, each point with one run keyed by its label."""
    points = tuple(PointState(label, "untested", runs=(f"k-{label}",)) for label in LABELS)
    b = BisectState("img", "Image", "image", points, last_good, first_bad, None, (), 0, done=done)
    return SimpleNamespace(bisects={"img": b})


def on(cond: dict, ctx: SimpleNamespace):
    return _on_bisect(Condition.model_validate({"bisect": "img"} | cond), ctx)


# ------------------------------------------------------------------ a bisect's state


def test_a_bisect_not_evaluated_has_no_data_and_says_so():
    r = _on_bisect(Condition.model_validate({"bisect": "other", "done": True}), bisect("p1", "p4"))
    assert r.value is V.NODATA and r.parts == ["bisect other: not evaluated"] and r.runs == []


@pytest.mark.parametrize("done, want, value", [(True, True, V.TRUE), (True, False, V.FALSE),
                                               (False, True, V.FALSE), (False, False, V.TRUE)])
def test_done_reads_whether_the_bisect_converged(done, want, value):
    r = on({"done": want}, bisect("p1", "p2" if done else "p4", done=done))
    assert r.value is value
    assert r.runs == ["k-p1", "k-p2" if done else "k-p4"]  # the last good and first bad points' runs only
    assert r.short == [f"bisect img {'done' if done else 'not done'}"]
    where = f"bisect img: last good p1, first bad {'p2' if done else 'p4'}"
    assert r.parts == [where if done else where + " (not converged)"]


def test_a_bisect_with_no_end_found_yet_says_none_yet():
    r = on({"done": True}, bisect(None, None))
    assert r.parts == ["bisect img: last good none yet, first bad none yet (not converged)"]
    assert r.value is V.FALSE and r.runs == []


# last good p1, first bad p4, not converged: the first bad point may still be p2, p3 or p4,
# the last good p1, p2 or p3; any other point is already excluded.
@pytest.mark.parametrize("want, value", [("p0", V.FALSE), ("p1", V.FALSE), ("p2", V.NODATA), ("p3", V.NODATA),
                                         ("p4", V.NODATA), ("p5", V.FALSE), ("nowhere", V.FALSE)])
def test_first_bad_before_convergence_is_unknown_only_where_the_bisect_may_still_land(want, value):
    r = on({"first_bad": want}, bisect("p1", "p4"))
    assert r.value is value
    assert r.short == ["bisect img: first bad p4"]


@pytest.mark.parametrize("want, value", [("p0", V.FALSE), ("p1", V.NODATA), ("p2", V.NODATA), ("p3", V.NODATA),
                                         ("p4", V.FALSE), ("p5", V.FALSE), ("nowhere", V.FALSE)])
def test_last_good_before_convergence_is_unknown_only_where_the_bisect_may_still_land(want, value):
    r = on({"last_good": want}, bisect("p1", "p4"))
    assert r.value is value
    assert r.short == ["bisect img: last good p1"]


@pytest.mark.parametrize("key, want, value", [("first_bad", "p0", V.NODATA), ("first_bad", "p5", V.NODATA),
                                              ("last_good", "p0", V.NODATA), ("last_good", "p5", V.NODATA)])
def test_with_neither_end_found_every_point_is_still_possible(key, want, value):
    r = on({key: want}, bisect(None, None))
    assert r.value is value and r.short == [f"bisect img: {key.replace('_', ' ')} none yet"]


def test_first_bad_with_only_the_last_good_found_may_be_the_last_point_but_not_the_last_good():
    assert on({"first_bad": "p5"}, bisect("p2", None)).value is V.NODATA
    assert on({"first_bad": "p2"}, bisect("p2", None)).value is V.FALSE
    assert on({"last_good": "p2"}, bisect(None, "p3")).value is V.NODATA
    assert on({"last_good": "p3"}, bisect(None, "p3")).value is V.FALSE


@pytest.mark.parametrize("key", ["first_bad", "last_good"])
def test_once_converged_the_answer_is_plain(key):
    ctx = bisect("p2", "p3", done=True)
    have = "p3" if key == "first_bad" else "p2"
    assert on({key: have}, ctx).value is V.TRUE
    others = [p for p in LABELS if p != have]
    assert all(on({key: p}, ctx).value is V.FALSE for p in others)


# ------------------------------------------------------------------ count: and distinct:


def runs_of(n: int, **prov: list[str]) -> list[RunRec]:
    return [RunRec(run_id=str(i), config="c", status="passed",
                   provenance={k: v[i] for k, v in prov.items() if i < len(v) and v[i] is not None})
            for i in range(n)]


@pytest.mark.parametrize("n, count, text, needed", [
    (0, 1, "0 valid runs of 1", ["1 more valid run"]),
    (1, 3, "1 valid run of 3", ["2 more valid runs"]),
    (2, 3, "2 valid runs of 3", ["1 more valid run"]),
    (3, 3, "3 valid runs ≥ 3", []),
    (1, 1, "1 valid run ≥ 1", []),
])
def test_count_is_never_false_and_says_how_many_more_runs(n, count, text, needed):
    valid = runs_of(n)
    r = _count(Condition.model_validate({"count": count}), valid)
    assert r.value is (V.TRUE if not needed else V.UNKNOWN)
    assert (r.parts, r.short, r.needed, r.runs) == ([text], [text], needed, [v.key for v in valid])


def test_distinct_counts_the_values_of_a_key_and_names_them():
    valid = runs_of(4, sha=["b", "a", None, "a"])
    r = _count(Condition.model_validate({"distinct": "sha", "at_least": 3}), valid)
    assert r.value is V.UNKNOWN
    assert r.short == ["2 distinct sha of 3"] and r.parts == ["2 distinct sha of 3 (a, b)"]
    assert r.needed == ["runs on 1 more sha value"]
    assert r.runs == [valid[0].key, valid[1].key, valid[3].key]  # the runs that recorded it
    r = _count(Condition.model_validate({"distinct": "sha", "at_least": 2}), valid)
    assert (r.value, r.short, r.needed) == (V.TRUE, ["2 distinct sha ≥ 2"], [])


def test_distinct_says_how_many_more_values_are_needed():
    r = _count(Condition.model_validate({"distinct": "sha", "at_least": 4}), runs_of(1, sha=["x"]))
    assert (r.value, r.needed) == (V.UNKNOWN, ["runs on 3 more sha values"])
    r = _count(Condition.model_validate({"distinct": "sha", "at_least": 1}), runs_of(2))
    assert (r.value, r.parts, r.needed, r.runs) == (V.UNKNOWN, ["0 distinct sha of 1"], ["runs on 1 more sha value"], [])


# ------------------------------------------------------------------ between:

BETWEEN = """
rules:
  - {id: mid, hypothesis: backend, when: {config: a, between: [0.5, 0.9]}, then: confirmed}
"""


@pytest.mark.parametrize("acc, holds", [(0.3, False), (0.49, False), (0.5, True), (0.7, True), (0.9, False),
                                        (0.95, False)])
def test_between_is_at_least_its_first_bound_and_below_its_second(acc, holds):
    ev = evaluate(inv(BETWEEN, [run("1", "a", acc, n=None)]))
    found = [e for e in ev.evidence if e.rule == "mid"]
    assert (ev.statuses["backend"] == "confirmed") is holds
    if holds:
        (item,) = found
        assert item.reason == f"a {acc:.3f} ≥ 0.500; a {acc:.3f} < 0.900"
    else:  # contradicted, not can't tell: no evidence at all
        assert found == []


def test_below_alone_is_below_not_at_least():
    text = "rules:\n  - {id: low, hypothesis: backend, when: {config: a, below: 0.5}, then: confirmed}\n"
    assert evaluate(inv(text, [run("1", "a", 0.3, n=None)])).statuses["backend"] == "confirmed"
    assert evaluate(inv(text, [run("1", "a", 0.7, n=None)])).statuses["backend"] != "confirmed"


# ------------------------------------------------------------------ advice a benchmark can follow


@pytest.mark.parametrize("needed, n_max, said", [
    ("n ≥ 5,000 per side", 1319, "4 repeats of the full benchmark (n ≥ 5,000 beyond its 1,319), if each repeat "
                                  "samples afresh; else the benchmark cannot decide it"),
    ("n ≥ 1,320", 1319, "2 repeats of the full benchmark (n ≥ 1,320 beyond its 1,319), if each repeat samples "
                        "afresh; else the benchmark cannot decide it"),
    ("n ≥ 1,319", 1319, "n ≥ 1,319"),  # within the benchmark: as it is
    ("n ≥ 5,000", None, "n ≥ 5,000"),  # no known size
    ("3 more repeats", 10, "3 more repeats"),  # not a sample size
])
def test_a_sample_size_beyond_the_benchmark_becomes_full_repeats(needed, n_max, said):
    assert _within_benchmark(needed, n_max) == said


NEAR = "rules:\n  - {id: near, hypothesis: backend, when: {config: a, at_least: 0.93}, then: confirmed}\n"


@pytest.mark.parametrize("n_max", [None, 1319])
def test_a_threshold_that_cannot_tell_names_repeats_when_the_benchmark_is_too_small(n_max):
    """Close to the bound, one GSM8K run cannot tell: the advice is a sample size, and with the
    benchmark's size known, full repeats of it instead."""
    base = BASE.replace("  metric: acc\n", "  metric: acc\n  metrics: {acc: {n_max: 1319}}\n") if n_max else BASE
    ev = evaluate(inv(NEAR, [run("1", "a", 0.935, n=1319)], base=base))
    (item,) = [e for e in ev.evidence if e.rule == "near"]
    assert item.verdict == "inconclusive" and item.needed
    if n_max:
        assert all("repeats of the full benchmark" in n and "beyond its 1,319" in n for n in item.needed)
    else:
        assert all(n.startswith("n ≥") for n in item.needed)


# ------------------------------------------------------------------ what a comparison is against


def against(cond: dict, runs=(run("1", "a", 0.95), run("2", "b", 0.88), run("3", "b", 0.881))):
    from triage.rules.decisions.conditions import evaluate_condition
    from triage.rules.engine.context import Context

    return evaluate_condition(Condition.model_validate({"config": "a"} | cond), Context(inv(runs=list(runs))), None)


def test_a_selector_with_no_valid_run_or_the_compared_runs_decides_nothing_and_says_why():
    r = against({"same_as": {"config": "zz"}})
    assert (r.value, r.parts, r.runs) == (V.NODATA, ["the other runs (no valid run): no value yet"], [])
    r = against({"same_as": {"config": "a"}})
    assert (r.value, r.parts) == (V.NODATA, ["a (the same runs as compared: name other runs): no value yet"])
    r = against({"better_than": "nosuch"})
    assert (r.value, r.parts) == (V.NODATA, ["nosuch: no value yet"])


def test_the_gate_is_a_fixed_number_and_other_runs_are_pooled_with_their_keys():
    r = against({"better_than": "gate"})
    assert r.value is V.TRUE and r.runs == ["1/a"]
    assert r.parts[0].startswith("a 0.950 vs gate 0.920: Δ +0.030, beyond noise") and "Wilson" in r.parts[0]
    r = against({"better_than": {"config": "b"}})
    assert r.value is V.TRUE and r.runs == ["1/a", "2/b", "3/b"]
    assert r.parts[0].startswith("a 0.950 vs b (×2) 0.881: Δ +0.069")
    r = against({"differs_from": {"config": "b"}})
    assert r.value is V.TRUE and r.parts[0].startswith("a 0.950 vs b (×2) 0.881")
    assert against({"same_as": {"config": "b"}}).value is V.FALSE


# ------------------------------------------------------------------ which runs a node reads


RUNS = (run("1", "a", 0.95, status="passed", provenance={"img": "new"}),
        run("2", "b", 0.2, status="failed", provenance={"img": "new"}),
        run("3", "a", None, status="crashed"),
        run("4", "b", 0.5, status="timeout", provenance={"img": "old"}))


def node(cond: dict, runs=RUNS):
    from triage.rules.decisions.conditions import evaluate_condition
    from triage.rules.engine.context import Context

    return evaluate_condition(Condition.model_validate(cond), Context(inv(runs=list(runs))), None)


def test_a_selector_alone_holds_when_it_has_a_valid_run_and_lists_the_invalid_ones_briefly():
    r = node({"config": "a"})
    assert (r.value, r.parts, r.runs, r.invalid) == (V.TRUE, [], ["1/a"], [("3/a", "a", "crashed")])
    r = node({"config": "zz"})
    assert (r.value, r.runs, r.invalid) == (V.NODATA, [], [])
    r = node({"config": "a"}, runs=RUNS[2:3])
    assert (r.value, r.runs, r.invalid) == (V.NODATA, [], [("3/a", "a", "crashed")])


def test_too_few_valid_runs_is_no_data_and_says_how_many():
    r = node({"config": "a", "min_runs": 3, "at_least": 0.5})
    assert r.value is V.NODATA and r.parts[0] == "needs 3 valid runs, has 1"


def test_the_parts_of_a_node_read_its_selection():
    assert node({"config": "a", "all": [{"at_least": 0.9}]}).value is V.TRUE  # a alone, not a and b pooled
    assert node({"config": "a", "not": {"below": 0.9}}).value is V.TRUE
    assert node({"config": "b", "any": [{"at_least": 0.5}]}).value is V.FALSE
    assert node({"status": "passed", "all": [{"at_least": 0.9}]}).value is V.TRUE  # the passed run only
    # a provenance within a selection narrows it; a config chooses afresh
    r = node({"config": "a", "any": [{"provenance": {"img": "new"}, "below": 0.6}]})
    assert r.value is V.FALSE and r.runs == ["1/a"]
    r = node({"config": "a", "all": [{"config": "b", "below": 0.6}]})
    assert r.value is V.TRUE and r.runs == ["2/b"]


def test_parts_with_no_selection_above_them_each_read_every_run():
    r = node({"all": [{"at_least": 0.5}, {"count": 2}]})
    assert r.value is V.TRUE and r.parts == ["a, b 0.575 ≥ 0.500 (±0.027 at n=1319, Wilson)", "2 valid runs ≥ 2"]
    for alone in ({"min_runs": 2}, {"status": "failed"}, {"count": 2}, {"distinct": "img", "at_least": 1},
                  {"at_least": 0.5}, {"metric": "acc", "at_least": 0.5}):
        assert node(alone).value is V.TRUE, alone
    # a node of parts lists the invalid runs its parts read, not every invalid run
    r = node({"all": [{"config": "a", "at_least": 0.5}]})
    assert r.invalid == [("3/a", "a", "crashed")]


def test_count_with_no_valid_run_at_all_has_no_data():
    assert node({"config": "a", "count": 1}, runs=RUNS[2:3]).value is V.NODATA


def test_a_bisect_beside_other_keys_is_read_with_them():
    from triage.rules.decisions.conditions import evaluate_condition
    from triage.rules.engine.context import Context

    ctx = Context(inv(runs=list(RUNS)))
    ctx.bisects = bisect("p1", "p2", done=True).bisects
    both = Condition.model_validate({"config": "a", "bisect": "img", "done": True})
    r = evaluate_condition(both, ctx, None)
    assert r.value is V.TRUE and r.runs == ["k-p1", "k-p2"] and r.invalid == [("3/a", "a", "crashed")]
    r = evaluate_condition(Condition.model_validate({"bisect": "img", "done": False}), ctx, None)
    assert r.value is V.FALSE and r.runs == ["k-p1", "k-p2"] and r.invalid == []
    # a bisect node with parts, under a selection: the invalid runs of what its parts read
    nested = Condition.model_validate({"config": "a", "all": [{"bisect": "img", "done": True,
                                                               "any": [{"at_least": 0.5}]}]})
    assert evaluate_condition(nested, ctx, None).invalid == [("3/a", "a", "crashed")]


# ------------------------------------------------------------------ words, settings and references


def ctx_with(runs, base=BASE):
    from triage.rules.engine.context import Context

    return Context(inv(runs=list(runs), base=base))


def at(cond: dict, ctx, selection=None):
    from triage.rules.decisions.conditions import evaluate_condition

    return evaluate_condition(Condition.model_validate(cond), ctx, selection)


def test_passes_and_fails_compare_without_the_margin():
    """A hair from the number: within the margin it would read as the same ("within noise");
    passes and fails take no margin, so they cannot tell."""
    ctx = ctx_with([run("1", "a", 0.881)])
    for word in ("passes", "fails"):
        r = at({"config": "a", word: 0.88}, ctx)
        assert r.value is V.UNKNOWN and "can't tell" in r.parts[0] and "within" not in r.parts[0], word
    r = at({"config": "a", "no_worse_than": "bad"}, ctx)
    assert r.parts[0].startswith("a 0.881 vs bad 0.878: Δ +0.003, within noise")  # a margin word: the same


def test_a_same_as_that_cannot_tell_says_what_would():
    ctx = ctx_with([run("1", "a", 0.90, n=100), run("2", "b", 0.88, n=100)])
    r = at({"config": "a", "same_as": {"config": "b"}}, ctx)
    assert r.value is V.UNKNOWN and r.needed and r.needed[0].startswith("n ≥ ")


@pytest.mark.parametrize("cond, short", [({"config": "a", "at_least": 0.5}, "a 0.300 < 0.500"),
                                         ({"config": "b", "below": 0.5}, "b 0.700 ≥ 0.500")])
def test_a_contradicted_threshold_shows_the_other_symbol(cond, short):
    r = at(cond, ctx_with([run("1", "a", 0.3, n=None), run("2", "b", 0.7, n=None)]))
    assert r.value is V.FALSE and r.short == [short]


def test_without_a_gate_nothing_compared_with_it_is_decided():
    no_gate = BASE.replace("  gate: 0.92\n", "")
    ctx = ctx_with([run("1", "a", 0.95)], base=no_gate)
    for word in ("at_least", "better_than"):
        r = at({"config": "a", word: "gate"}, ctx)
        assert (r.value, r.parts) == (V.NODATA, ["gate: no value yet"]), word


def test_the_gate_adds_no_noise_of_its_own():
    """Three repeats without n against the gate: the gate is a number, so only the repeats'
    spread counts (were it a run, it would borrow that spread and could not tell)."""
    ctx = ctx_with([run(str(i), "a", v, n=None) for i, v in enumerate((0.95, 0.96, 0.94))])
    r = at({"config": "a", "better_than": "gate"}, ctx)
    assert r.value is V.TRUE and "over 3 repeats" in r.parts[0]


def test_the_investigations_confidence_and_tolerance_reach_every_decision():
    runs = [run("1", "a", 0.93, n=1319), run("2", "b", 0.88, n=1319), run("3", "c", 10.0, n=None)]
    plain = ctx_with(runs)
    strict = ctx_with(runs, base=BASE.replace("  gate: 0.92\n", "  gate: 0.92\n  confidence: 0.999\n"))
    loose = ctx_with(runs, base=BASE.replace("  gate: 0.92\n", "  gate: 0.92\n  tolerance: 0.5\n"))
    assert at({"config": "a", "at_least": 0.91}, plain).value is V.TRUE
    assert at({"config": "a", "at_least": 0.91}, strict).value is V.UNKNOWN
    assert at({"config": "a", "better_than": {"config": "b"}}, plain).parts[0] != \
        at({"config": "a", "better_than": {"config": "b"}}, strict).parts[0]
    assert at({"config": "c", "at_least": 9.9}, plain).value is V.TRUE  # one number, no noise: exact
    assert at({"config": "c", "at_least": 9.9}, loose).value is V.UNKNOWN  # within the tolerance


def test_a_relative_margin_is_taken_of_the_reference():
    ctx = ctx_with([run("1", "a", 10.0, n=None), run("2", "b", 10.3, n=None)])
    assert at({"config": "a", "same_as": {"config": "b"}, "margin": "5%"}, ctx).value is V.TRUE
    assert at({"config": "a", "same_as": {"config": "b"}, "margin": "1%"}, ctx).value is V.FALSE


def test_a_metric_with_its_own_direction_is_judged_by_it():
    base = BASE.replace("  metric: acc\n", "  metric: acc\n  metrics: {lat: {direction: lower}}\n")
    ctx = ctx_with([run("1", "a", metrics={"lat": (10.0, None)}), run("2", "b", metrics={"lat": (20.0, None)})], base)
    r = at({"config": "a", "metric": "lat", "better_than": {"config": "b"}}, ctx)
    assert r.value is V.TRUE and r.parts[1] == "lower is better"


FAIL_RATE = """
schema_version: 1
investigation: {id: f, repo: o/r, pr: 1, title: flaky, metric: fail_rate, direction: lower,
                references: {good: {value: 0}, bad: {config: B}}}
hypotheses: [{id: h, title: H}]
"""


def test_a_fail_rate_is_said_in_counts_not_as_pooled_runs():
    runs = [run(f"b{i}", "B", status="failed", metrics={}) for i in range(3)]
    runs += [run(f"a{i}", "A", status="passed" if i else "failed", metrics={}) for i in range(3)]
    ctx = ctx_with(runs, base=FAIL_RATE)
    r = at({"config": "A", "same_as": {"config": "B"}}, ctx)
    assert r.parts[0].startswith("A fails 1/3 vs B fails 3/3: Δ -0.667"), r.parts


def test_status_takes_one_outcome_or_a_list():
    ctx = ctx_with(RUNS)
    assert at({"status": ["passed", "failed"], "count": 2}, ctx).value is V.TRUE
    assert at({"status": "passed", "count": 2}, ctx).value is V.UNKNOWN


def test_a_provenance_within_a_selection_narrows_it():
    runs = RUNS + (run("5", "a", 0.1, status="passed", provenance={"img": "old"}),)
    r = at({"config": "a", "any": [{"provenance": {"img": "new"}, "below": 0.6}]}, ctx_with(runs))
    assert r.value is V.FALSE and r.runs == ["1/a"]  # not a's two runs pooled (0.525)


def test_a_node_with_checks_of_its_own_and_parts_reads_every_run():
    ctx = ctx_with(RUNS)
    assert at({"count": 2, "all": [{"config": "a", "at_least": 0.5}]}, ctx).value is V.TRUE
    assert at({"at_least": 0.5, "all": [{"config": "a", "count": 1}]}, ctx).value is V.TRUE
    assert at({"distinct": "img", "at_least": 1, "any": [{"config": "a", "count": 1}]}, ctx).value is V.TRUE


def test_an_invalid_run_is_listed_with_its_brief_reason():
    runs = (run("1", "a", 0.95, status="passed"), run("3", "a", None, status="crashed", note="oom at step 3"))
    r = at({"config": "a"}, ctx_with(runs))
    assert r.invalid == [("3/a", "a", "crashed")]


def test_a_bisect_node_lists_the_invalid_runs_of_its_selection_only_when_a_part_reads_runs():
    ctx = ctx_with(RUNS)
    ctx.bisects = bisect("p1", "p2", done=True).bisects
    mine = [r for r in ctx.runs if r.config == "a"]
    reads = at({"bisect": "img", "done": True, "any": [{"config": "b", "at_least": 0.1}]}, ctx, mine)
    assert ("3/a", "a", "crashed") in reads.invalid
    negated = at({"bisect": "img", "done": True, "not": {"config": "b", "below": 0.1}}, ctx, mine)
    assert ("3/a", "a", "crashed") in negated.invalid
    only = at({"bisect": "img", "done": True, "all": [{"bisect": "img", "first_bad": "p2"}]}, ctx, mine)
    assert only.invalid == []


def test_first_bad_and_last_good_name_the_runs_of_the_two_ends():
    assert on({"first_bad": "p3"}, bisect("p1", "p4")).runs == ["k-p1", "k-p4"]
    assert on({"last_good": "p1"}, bisect("p1", "p2", done=True)).runs == ["k-p1", "k-p2"]


def test_a_run_named_within_a_selection_is_found_outside_it():
    r = at({"config": "a", "all": [{"run": "2", "below": 0.6}]}, ctx_with(RUNS))
    assert r.value is V.TRUE and r.runs == ["2/b"]
