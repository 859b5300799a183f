"""The engine on small, hand-built investigations (no database)."""

from __future__ import annotations

from typing import Any

import textwrap

import pytest

from triage.rules.engine.evaluate import Context, RunRec, SignatureInfo, combined_command, evaluate
from tests.support.engine import BASE, BISECT, RANKING, bisect_of, img, inv, run


def evidence_for(ev, hyp):
    return [e for e in ev.evidence if e.hypothesis == hyp]


def test_no_runs_everything_open_and_recipes_suggested():
    ev = evaluate(inv())
    assert ev.statuses == {"backend": "open", "graph": "open", "mode": "open"}
    assert [s.recipe for s in ev.suggestions] == ["swap", "eager"]  # swap decides two
    assert ev.evidence == []


def test_prediction_contradicted_rules_out_and_same_as_bad_only_supports():
    ev = evaluate(inv(runs=[run("1", "swap", 0.879)]))
    assert ev.statuses["backend"] == "ruled_out"
    assert ev.statuses["mode"] == "open"  # a prediction that comes true only supports
    (out,) = evidence_for(ev, "backend")
    assert out.verdict == "rules_out"
    assert "0.879 vs good 0.944: Δ -0.065, beyond noise" in out.reason
    assert "0.879 vs bad 0.878: Δ +0.001, within noise (±0.025 at n=1319, Fisher p = 1)" in out.reason
    (sup,) = evidence_for(ev, "mode")
    assert sup.verdict == "supports"


def test_predicted_recovery_that_happens_confirms():
    ev = evaluate(inv(runs=[run("1", "eager", 0.941, status="passed")]))
    assert ev.statuses["graph"] == "confirmed"


def test_cant_tell_is_inconclusive_with_sample_advice():
    ev = evaluate(inv(runs=[run("1", "swap", 0.91, n=100)]))
    assert ev.statuses["backend"] == "inconclusive"
    (e,) = evidence_for(ev, "backend")
    assert e.verdict == "inconclusive"
    assert "can't tell" in e.reason
    assert "would be decided by n ≥" in e.reason
    # the recipe is suggested again, since its result did not decide
    assert "swap" in [s.recipe for s in ev.suggestions]


def test_crashed_run_never_rules_out():
    ev = evaluate(inv(runs=[run("1", "swap", status="crashed", note="SIGABRT at init")]))
    assert ev.statuses["backend"] == "inconclusive"
    (e,) = evidence_for(ev, "backend")
    assert e.verdict == "inconclusive" and "invalid-run" in e.flags
    assert "never rules anything out" in e.reason


def test_signature_match_makes_even_a_number_inconclusive():
    sigs = {"blob": SignatureInfo("blob", "infra", "log purged", "re-run")}
    ev = evaluate(inv(runs=[run("1", "swap", 0.879, signature="blob")], signatures=sigs))
    assert ev.statuses["backend"] == "inconclusive"
    assert any("known failure blob (infra)" in w.message and "re-run" in w.message for w in ev.warnings)


def test_excluded_run_decides_nothing_and_valid_run_beside_it_does():
    runs = [run("1", "swap", 0.95, excluded=True, excluded_reason="wrong base"), run("2", "swap", 0.88)]
    ev = evaluate(inv(runs=runs))
    assert ev.statuses["backend"] == "ruled_out"
    verdicts = sorted(e.verdict for e in evidence_for(ev, "backend"))
    assert verdicts == ["inconclusive", "rules_out"]


def test_conflicting_evidence_is_shown_not_hidden():
    extra = """
    rules:
      - id: manual-says-backend
        hypothesis: backend
        when: {config: other, at_least: gate}
        then: confirmed
    """
    runs = [run("1", "swap", 0.879), run("2", "other", 0.95, status="passed")]
    ev = evaluate(inv(extra, runs))
    assert ev.statuses["backend"] == "conflicting"
    assert any(w.kind == "conflict" and "backend" in w.message for w in ev.warnings)


def test_supersedes_discounts_the_older_reading():
    extra = """
    rules:
      - id: early
        hypothesis: graph
        when: {config: probe-short, metric: zero_rows, at_least: 1}
        then: confirmed
      - id: late
        hypothesis: graph
        when: {config: probe-long, metric: zero_rows, below: 1}
        then: ruled_out
        supersedes: [early]
    """
    short = run("1", "probe-short", metrics={"zero_rows": (5.0, None)})
    ev = evaluate(inv(extra, [short]))
    assert ev.statuses["graph"] == "confirmed"
    long = run("2", "probe-long", metrics={"zero_rows": (0.0, None)})
    ev = evaluate(inv(extra, [short, long]))
    assert ev.statuses["graph"] == "ruled_out"
    flags = {e.rule: e.flags for e in evidence_for(ev, "graph")}
    assert "superseded" in flags["early"]
    assert "zero_rows 0 < 1" in [e for e in evidence_for(ev, "graph") if e.rule == "late"][0].reason


def test_all_any_not_and_min_runs():
    extra = """
    rules:
      - id: both
        hypothesis: mode
        when:
          all:
            - {config: a, same_as: bad}
            - any:
                - {config: b, at_least: gate}
                - {config: c, at_least: gate}
            - not: {config: d, at_least: gate}
        then: confirmed
      - id: repeats
        hypothesis: graph
        when: {config: r, min_runs: 3, below: gate}
        then: ruled_out
    """
    runs = [run("1", "a", 0.88), run("2", "b", 0.80), run("3", "c", 0.95), run("4", "d", 0.85),
            run("5", "r", 0.80), run("6", "r", 0.81)]
    ev = evaluate(inv(extra, runs))
    assert ev.statuses["mode"] == "confirmed"
    assert ev.statuses["graph"] == "open"  # only 2 of the 3 runs it needs
    ev = evaluate(inv(extra, runs + [run("7", "r", 0.82)]))
    assert ev.statuses["graph"] == "ruled_out"
    ev = evaluate(inv(extra, runs[:3] + [run("4", "d", 0.95)]))
    assert ev.statuses["mode"] == "open"  # `not` now fails


def test_run_vs_run_comparison_and_tolerance_without_n():
    base = BASE.replace("    bad: {value: 0.878, n: 1319}\n    good: {value: 0.944, n: 1319}\n", "    bad: {config: base}\n")
    base = base.replace("  gate: 0.92\n", "  gate: 0.92\n  tolerance: 5%\n")
    base = base.split("recipes:")[0]
    extra = """
    rules:
      - id: same-throughput
        hypothesis: graph
        when: {config: eager, same_as: {config: base}, margin: 12}
        then: ruled_out
    """
    # each run is known to ±5% (5.0 here): their difference to ±7.07, [-3.1, 11.1] within ±12
    runs = [run("1", "base", 100.0, n=None), run("2", "eager", 104.0, n=None)]
    ev = evaluate(inv(extra, runs, base=base))
    assert ev.statuses["graph"] == "ruled_out"
    assert "within tolerance" in evidence_for(ev, "graph")[0].reason
    # [0.9, 15.1]: different, but maybe by less than the margin: can't tell
    ev = evaluate(inv(extra, [runs[0], run("2", "eager", 108.0, n=None)], base=base))
    assert ev.statuses["graph"] == "inconclusive"
    # [17.9, 32.1]: beyond the margin, so not the same
    ev = evaluate(inv(extra, [runs[0], run("2", "eager", 125.0, n=None)], base=base))
    assert ev.statuses["graph"] == "open"


def test_repeats_use_their_spread():
    base = BASE.split("recipes:")[0].replace("  gate: 0.92\n", "  gate: 0.92\n  direction: lower\n")
    extra = """
    rules:
      - id: slower
        hypothesis: graph
        when: {config: eager, differs_from: {config: base}}
        then: confirmed
    """
    runs = [run(str(i), "base", v, n=None) for i, v in enumerate((100.0, 102.0, 98.0))]
    runs += [run(str(i + 10), "eager", v, n=None) for i, v in enumerate((110.0, 111.0, 109.0))]
    ev = evaluate(inv(extra, runs, base=base))
    assert ev.statuses["graph"] == "confirmed"
    assert "repeats" in evidence_for(ev, "graph")[0].reason


def test_lower_is_better_gate_reading():
    base = BASE.split("recipes:")[0].replace("  gate: 0.92\n", "  gate: 200\n  direction: lower\n")
    base = base.replace("    bad: {value: 0.878, n: 1319}\n    good: {value: 0.944, n: 1319}\n", "    bad: {value: 250}\n")
    ev = evaluate(inv("", [run("1", "x", 150.0, n=None), run("2", "y", 250.0, n=None)], base=base))
    assert ev.readings["1/x"] == "passes gate"
    assert ev.readings["2/y"] == "≈ bad, fails gate"


def test_ruled_out_parent_rules_out_children():
    extra = """
      - {id: child, title: Child, parent: graph}
    """
    base = BASE.replace("  - {id: mode, title: Mode}\n", "  - {id: mode, title: Mode}\n" + textwrap.dedent(extra).strip("\n").replace("- ", "  - ", 1) + "\n")
    ev = evaluate(inv("", [run("1", "eager", 0.88)], base=base))
    assert ev.statuses["graph"] == "ruled_out"
    assert ev.statuses["child"] == "ruled_out"
    assert any(e.rule == "parent:graph" for e in evidence_for(ev, "child"))


def test_manual_evidence_is_marked():
    extra = """
    evidence:
      - {hypothesis: backend, verdict: rules_out, because: args identical in both legs, author: alice}
    """
    ev = evaluate(inv(extra))
    (e,) = evidence_for(ev, "backend")
    assert e.flags == ("manual",) and e.reason == "args identical in both legs (alice)"
    assert ev.statuses["backend"] == "ruled_out"


def test_bisect_finds_the_boundary_and_skips_crashes():
    extra = """
    bisects:
      - id: image
        axis: image
        points: [d1, d2, d3, d4, d5, d6]
        good_when: {at_least: gate}
    """
    runs = [
        run("1", "x", 0.941, provenance={"image": "d1"}),
        run("2", "x", status="crashed", provenance={"image": "d3"}),
        run("3", "x", 0.879, provenance={"image": "d6"}),
    ]
    ev = evaluate(inv(extra, runs))
    (b,) = ev.bisects
    assert (b.last_good, b.first_bad) == ("d1", "d6")
    assert [p.state for p in b.points] == ["good", "untested", "skipped", "untested", "untested", "bad"]
    assert b.remaining == ("d2", "d3", "d4", "d5")
    assert b.next == "d4" and b.steps == 3  # the skipped d3 is passed over, as `git bisect skip` does
    ev = evaluate(inv(extra, runs + [run("4", "x", 0.95, provenance={"image": "d4"}), run("5", "x", 0.88, provenance={"image": "d5"})]))
    (b,) = ev.bisects
    assert (b.last_good, b.first_bad, b.remaining, b.next) == ("d4", "d5", (), None)


def test_evaluation_is_deterministic():
    runs = [run("1", "swap", 0.879), run("2", "eager", status="crashed")]
    a, b = evaluate(inv(runs=runs)), evaluate(inv(runs=list(reversed(runs))))
    assert a.statuses == b.statuses
    assert sorted(e.key for e in a.evidence) == sorted(e.key for e in b.evidence)


# --------------------------------------------------------------------------
# Bisects


def test_bisect_next_point_and_its_command_fill_the_run_template():
    ev, b = bisect_of([img("1", "d1", 0.941), img("2", "d5", 0.879)])
    assert (b.last_good, b.first_bad, b.remaining) == ("d1", "d5", ("d2", "d3", "d4"))
    assert b.next == "d3" and b.steps == 2 and not b.done
    assert b.command == "ci run -f image=d3"
    assert b.ends_ok and b.ends == "good end d1 is good; bad end d5 is bad"
    s = next(s for s in ev.suggestions if s.kind == "bisect")
    assert s.recipe == "bisect:image" and s.command == "ci run -f image=d3"
    assert "midpoint of 3 untested point(s) between last good d1 and first bad d5" in s.why
    assert s.outcomes == ("good ⇒ the first bad is after d3", "bad ⇒ the first bad is d3 or before it")
    assert "ci run -f image=d3" in combined_command(inv(BISECT), ev.suggestions)


def test_bisect_point_measured_twice_with_different_verdicts_is_flaky():
    runs = [img("1", "d1", 0.941), img("2", "d3", 0.945), img("3", "d3", 0.879), img("4", "d5", 0.879)]
    ev, b = bisect_of(runs)
    d3 = b.points[2]
    assert d3.state == "flaky"
    assert d3.reason.startswith("good in 2 but bad in 3: re-run it to settle")
    assert set(d3.runs) == {"2/x", "3/x"}
    # neither end of the search moves onto a flaky point; untested points come first
    assert (b.last_good, b.first_bad, b.next) == ("d1", "d5", "d2")
    assert any(w.kind == "bisect" and "point d3 is flaky" in w.message for w in ev.warnings)


def test_bisect_infra_failures_and_crashes_skip_a_point_never_make_it_bad():
    sigs = {"blob": SignatureInfo("blob", "infra", "log purged", "re-run")}
    runs = [img("1", "d1", 0.941), img("2", "d2", 0.50, signature="blob"), img("3", "d3", status="crashed"),
            img("4", "d4", 0.20, status="error"), img("5", "d5", 0.879)]
    _, b = bisect_of(runs, signatures=sigs)
    assert [p.state for p in b.points] == ["good", "skipped", "skipped", "skipped", "bad"]
    assert "known failure blob (infra)" in b.points[1].reason
    assert (b.last_good, b.first_bad) == ("d1", "d5")  # not d2: an infra failure is no bad point
    assert b.next == "d3"  # with nothing untested left, a skipped point is re-run
    # a valid run beside a crashed one decides the point; the crash is named, not counted
    _, b = bisect_of(runs[:2] + [img("6", "d2", 0.88)] + runs[4:], signatures=sigs)
    assert b.points[1].state == "bad" and "not counted: 2 failed, known failure blob (infra)" in b.points[1].reason


def test_bisect_checks_its_ends_first():
    _, b = bisect_of([img("1", "d3", 0.879)])
    assert b.next == "d1" and not b.ends_ok
    assert b.ends == "good end d1 not tested yet; bad end d5 not tested yet"
    assert b.steps == 3  # d1 itself, then d2, and the bad end d5 before it is done
    _, b = bisect_of([img("1", "d1", 0.879), img("2", "d5", 0.879)])
    assert b.next is None and b.command is None
    assert "the good end d1 is bad: the regression is older than this range" in b.notes[0]
    _, b = bisect_of([img("1", "d1", 0.941), img("2", "d5", 0.941)])
    assert b.next is None and "the bad end d5 is good: nothing regressed in this range" in b.notes[0]


def test_bisect_config_filter_and_axis_keys_in_the_command():
    extra = """
    bisects:
      - id: pv
        axis: [python, image]
        config: base-leg
        points: [[old, i1], [old, i2], [new, i2]]
        good_when: {at_least: gate}
        run: ci -f python={python} -f image={image}
    """
    runs = [run("1", "base-leg", 0.941, provenance={"python": "old", "image": "i1"}),
            run("2", "mtp-leg", 0.95, provenance={"python": "new", "image": "i2"}),  # another leg: not counted
            run("3", "base-leg", 0.879, provenance={"python": "new", "image": "i2"})]
    _, b = bisect_of(runs, extra)
    assert [p.state for p in b.points] == ["good", "untested", "bad"]
    assert b.next == "old + i2" and b.command == "ci -f python=old -f image=i2"


# --------------------------------------------------------------------------
# Confounds

CONFOUND = """
recipes:
  - id: swap
    base: base
    change: backend a -> b
    vary: {backend: b}
    tests: [backend]
    predicts: {backend: recovers}
"""


def confound_inv(runs, ignore="[runner]", base_run=""):
    base = BASE.split("recipes:")[0].replace("  gate: 0.92\n", f"  gate: 0.92\n  ignore_provenance: {ignore}\n")
    extra = CONFOUND + (f"    base_run: {base_run}\n" if base_run else "")
    return evaluate(inv(extra, runs, base=base))


def test_a_run_that_differs_from_its_base_in_an_undeclared_variable_is_confounded():
    base_run = run("b1", "base", 0.878, provenance={"sha": "a", "image": "jun23", "runner": "r1", "backend": "a"})
    swap = run("s1", "swap", 0.879, provenance={"sha": "a", "image": "latest", "runner": "r2", "backend": "b",
                                                "only-here": "x"})
    ev = confound_inv([base_run, swap])
    assert [(c.run, c.key, c.value, c.base_value) for c in ev.confounds] == [("s1/swap", "image", "latest", "jun23")]
    (w,) = [w for w in ev.warnings if w.kind == "confound"]
    assert w.message == ("run s1 (swap): image is latest, its base base (b1) ran jun23; "
                         "the recipe does not declare image")
    (e,) = evidence_for(ev, "backend")
    assert "confounded" in e.flags and e.verdict == "rules_out"  # the evidence stays, marked
    assert ev.readings["s1/swap"] == "≈ bad, fails gate; confounded (image)"
    # runner would differ too, but the investigation ignores it; declared keys never count
    ev = confound_inv([base_run, swap], ignore="[]")
    assert sorted(c.key for c in ev.confounds) == ["image", "runner"]


def test_same_provenance_is_no_confound_and_base_run_can_be_pinned():
    old = run("b0", "base", 0.878, provenance={"image": "latest"}, time="2026-06-01T00:00:00+00:00")
    new = run("b1", "base", 0.878, provenance={"image": "jun23"}, time="2026-06-02T00:00:00+00:00")
    swap = run("s1", "swap", 0.879, provenance={"image": "latest"}, time="2026-06-03T00:00:00+00:00")
    assert [c.base_run for c in confound_inv([old, new, swap]).confounds] == ["b1/base"]  # newest base run
    assert confound_inv([old, new, swap], base_run="b0").confounds == []


def test_a_declared_variable_the_run_did_not_get_is_reported():
    swap = run("s1", "swap", 0.879, provenance={"backend": "a"})
    ev = confound_inv([swap])
    (c,) = ev.confounds
    assert (c.key, c.value, c.declared, c.base_value) == ("backend", "a", "b", None)
    assert "the recipe sets backend=b, the run recorded backend=a" in c.message(Context(inv(CONFOUND, [swap])))


def test_invalid_runs_are_not_checked_for_confounds():
    base_run = run("b1", "base", 0.878, provenance={"image": "jun23"})
    crashed = run("s1", "swap", status="crashed", provenance={"image": "latest"})
    assert confound_inv([base_run, crashed]).confounds == []


# --------------------------------------------------------------------------
# Suggestions


def test_recipes_rank_by_the_open_hypotheses_they_split_per_unit_of_cost():
    ev = evaluate(inv(base=RANKING))
    assert [(s.recipe, s.score) for s in ev.suggestions] == [("wide", 2.5), ("narrow", 1.0), ("pricey", 0.5)]
    wide = ev.suggestions[0]
    assert wide.tests == ("h1", "h2", "h3") and wide.state == "never run"
    assert wide.outcomes == ("recovers to good ⇒ h1 confirmed, h2 confirmed, h3 ruled out",
                             "stays ≈ bad ⇒ h3 supported, h1 ruled out, h2 ruled out")
    assert ev.untested == ["h4"]
    assert combined_command(inv(base=RANKING), ev.suggestions) == "ci -f configs=wide,narrow,pricey"
    # once `narrow` has run and ruled h1 out, neither it nor h1 counts any more
    ev = evaluate(inv(runs=[run("1", "narrow", 0.879)], base=RANKING))
    assert [(s.recipe, s.score) for s in ev.suggestions] == [("wide", 1.5), ("pricey", 0.25)]


def test_a_recipe_run_validly_is_not_suggested_again_but_a_crashed_one_is_with_its_remedy():
    sigs = {"abort": SignatureInfo("abort", "crash", "aborted at init", "probe the code instead"),
            "blob": SignatureInfo("blob", "infra", "log purged", "re-run")}
    runs = [run("1", "narrow", 0.879), run("2", "wide", status="crashed", signature="abort"),
            run("3", "pricey", status="error", signature="blob")]
    ev = evaluate(inv(runs=runs, base=RANKING, signatures=sigs))
    by = {s.recipe: s for s in ev.suggestions}
    assert "narrow" not in by
    assert by["wide"].state == "no valid run yet: crashed, known failure abort (crash)"
    assert by["wide"].advice == "fix first: abort (crash): probe the code instead"
    assert by["pricey"].advice == ""  # an infra failure only needs a re-run
    states = {s.recipe: s.state for s in ev.recipes}
    assert states == {"narrow": "run", "wide": "no-valid-run", "pricey": "no-valid-run"}


def test_cant_tell_says_how_many_samples_would_decide():
    ev = evaluate(inv(runs=[run("1", "eager", 0.91, n=100)]))
    (s,) = [s for s in ev.suggestions if s.recipe == "eager"]
    assert s.state == "can't tell yet"
    (e,) = [e for e in evidence_for(ev, "graph") if e.verdict == "inconclusive"]
    n = max((int(x.split("≥ ")[1].split(" ")[0].replace(",", "")) for x in e.needed))  # vs good and vs bad
    assert len(e.needed) == 2 and s.advice == f"re-run with n ≥ {n:,} samples per run (it had n=100)"
    assert n > 100
    assert next(r for r in ev.recipes if r.recipe == "eager").state == "cant-tell"


def test_cant_tell_over_repeats_says_how_many_more_runs():
    base = BASE.replace("    bad: {value: 0.878, n: 1319}\n    good: {value: 0.944, n: 1319}\n",
                        "    bad: {value: 80}\n    good: {value: 100}\n").replace("  gate: 0.92\n", "  gate: 90\n")
    runs = [run("1", "eager", 92.0, n=None), run("2", "eager", 104.0, n=None)]
    ev = evaluate(inv(runs=runs, base=base))
    (s,) = [s for s in ev.suggestions if s.recipe == "eager"]
    assert s.state == "can't tell yet"
    k = int(s.advice.split("(≥ ")[1].split(" ")[0])
    assert s.advice == f"run it {k - 2} more times (≥ {k} repeats; it has 2)"


REFS_OF_CONFIGS = BASE.replace("    bad: {value: 0.878, n: 1319}\n    good: {value: 0.944, n: 1319}\n",
                               "    bad: {config: nightly}\n    good: {config: known-good}\n").replace(
    "  gate: 0.92\n", "  gate: 90\n")
TWO_EACH = [run("g1", "known-good", 100.0, n=None), run("g2", "known-good", 103.0, n=None),
            run("b1", "nightly", 80.0, n=None), run("b2", "nightly", 84.0, n=None)]


def _eager_advice(base: str, runs: list) -> tuple[Any, Any]:
    ev = evaluate(inv(runs=runs, base=base))
    (s,) = [s for s in ev.suggestions if s.recipe == "eager"]
    (e,) = [e for e in evidence_for(ev, "graph") if e.verdict == "inconclusive"]
    return s, e


def _ks(e: Any) -> list[int]:
    return sorted(int(x.split("≥ ")[1].split(" ")[0].replace(",", "")) for x in e.needed)


def test_repeats_per_side_ask_for_the_other_sides_runs_too():
    """Compared with references that are runs of a config, the comparisons needed "≥ 6 repeats
    per side", and the advice read "run it 4 more times (≥ 6 repeats; it has 2)": four more
    runs of the recipe alone, with the references still at two runs each, would not decide it.
    The advice and the cost count the references' runs that are missing too, each side with
    the repeats its own comparison needs."""
    runs = TWO_EACH + [run("1", "eager", 92.0, n=None), run("2", "eager", 99.0, n=None)]
    s, e = _eager_advice(REFS_OF_CONFIGS, runs)
    kb, k = _ks(e)  # vs bad, a wider gap: fewer repeats than vs good
    assert k > kb > 2 and set(e.needed) == {f"≥ {k} repeats per side (known-good has 2)",
                                            f"≥ {kb} repeats per side (nightly has 2)"}
    assert s.advice == (f"run it {k - 2} more times (≥ {k} repeats; it has 2), and known-good {k - 2} more times "
                        f"(≥ {k} repeats per side; it has 2), and nightly {kb - 2} more time{'s' * (kb - 2 != 1)} "
                        f"(≥ {kb} repeats per side; it has 2)")
    from triage.rules.engine.context import Context
    from triage.rules.next.suggest import runs_worth

    i = inv(runs=runs, base=REFS_OF_CONFIGS)
    (st,) = [st for st in evaluate(i).recipes if st.recipe == "eager"]
    assert runs_worth(st, Context(i)) == 2 * (k - 2) + kb - 2  # its own missing repeats, good's and bad's
    # references with enough runs of their own: the recipe's runs alone are asked for
    many = [run(f"g{j}", "known-good", 100.0 + j % 4, n=None) for j in range(40)]
    many += [run(f"b{j}", "nightly", 80.0 + j % 5, n=None) for j in range(40)]
    s, e = _eager_advice(REFS_OF_CONFIGS, many + runs[-2:])
    assert s.state == "can't tell yet" and s.advice.startswith("run it ") and ", and " not in s.advice
    assert not any(" has " in x for x in e.needed)


def test_repeats_per_side_name_only_a_side_that_more_runs_can_join():
    """A reference that is one run (`run:`, a config's `newest:`) cannot be repeated: it is not
    named as a side to run more of.  A recipe with enough runs of its own is asked for none."""
    one = REFS_OF_CONFIGS.replace("good: {config: known-good}", "good: {run: g1}")
    s, e = _eager_advice(one, TWO_EACH + [run("1", "eager", 92.0, n=None), run("2", "eager", 99.0, n=None)])
    assert "known-good" not in s.advice and not any("(known-good has" in x for x in e.needed)
    newest = REFS_OF_CONFIGS.replace("good: {config: known-good}", "good: {config: known-good, newest: true}")
    s, e = _eager_advice(newest, TWO_EACH + [run("1", "eager", 92.0, n=None), run("2", "eager", 99.0, n=None)])
    assert "known-good" not in s.advice
    # twelve runs of its own: only the references' are missing
    mine = [run(str(j), "eager", 92.0 + j % 7, n=None) for j in range(12)]
    s, e = _eager_advice(REFS_OF_CONFIGS, TWO_EACH + mine)
    assert s.state == "can't tell yet" and s.advice.startswith("run known-good ") and "run it" not in s.advice


def test_repeats_per_side_name_a_selector_by_its_config_and_a_subject():
    """A comparison with a config's runs by selector names that config; a subject's comparison
    names its subject with the side."""
    extra = """
rules:
  - id: as-nightly
    hypothesis: graph
    when: {config: eager, same_as: {config: nightly}}
    then: ruled_out
"""
    runs = TWO_EACH + [run("1", "eager", 92.0, n=None), run("2", "eager", 99.0, n=None)]
    ev = evaluate(inv(extra, runs=runs, base=REFS_OF_CONFIGS))
    needed = [x for e in evidence_for(ev, "graph") if e.rule == "as-nightly" for x in e.needed]
    assert needed and all(x.endswith("(nightly has 2)") for x in needed)
    # the same config by a selector and by the reference `bad`: one side, named and counted once
    (s,) = [s for s in ev.suggestions if s.recipe == "eager"]
    assert s.advice.count("nightly") == 1 and "bad" not in s.advice
    subject = REFS_OF_CONFIGS.replace("  metric: acc\n", "  metric: acc\n  subject: model\n")
    runs = [run(r.run_id, r.config, r.metrics["acc"][0], n=None, provenance={"model": "m1"}) for r in runs]
    s, e = _eager_advice(subject, runs)
    assert any(x.endswith("(known-good has 2) for m1") for x in e.needed)
    assert "and known-good for m1 " in s.advice


def test_a_count_of_repeats_in_the_thousands_is_written_with_separators():
    """A wide investigation's suggestion read "run it 9220782 more times (≥ 9220856 repeats; it
    has 74)": the counts are written as the sample counts are, 9,220,782."""
    base = BASE.replace("    bad: {value: 0.878, n: 1319}\n    good: {value: 0.944, n: 1319}\n",
                        "    bad: {value: 80}\n    good: {value: 100}\n").replace("  gate: 0.92\n", "  gate: 90\n")
    runs = [run(str(i), "eager", v, n=None) for i, v in enumerate((-400.0, 578.0, -400.0, 578.0), 1)]
    ev = evaluate(inv(runs=runs, base=base))
    (s,) = [s for s in ev.suggestions if s.recipe == "eager"]
    k = int(s.advice.split("(≥ ")[1].split(" ")[0].replace(",", ""))
    assert k >= 1000 and s.advice == f"run it {k - 4:,} more times (≥ {k:,} repeats; it has 4)"
    (e,) = [e for e in evidence_for(ev, "graph") if e.verdict == "inconclusive"]
    assert any(f"≥ {k:,} repeats" in x for x in e.needed)


def test_a_cant_tell_ranks_by_the_runs_it_still_needs():
    """A wide investigation ranked "run it 9,220,782 more times" above "run it 172 more
    times": a can't-tell re-run was costed as one run.  It costs the runs it still needs,
    so the recipe that needs a few more repeats comes first, even deciding fewer hypotheses."""
    base = BASE.replace("    bad: {value: 0.878, n: 1319}\n    good: {value: 0.944, n: 1319}\n",
                        "    bad: {value: 80}\n    good: {value: 100}\n").replace("  gate: 0.92\n", "  gate: 90\n")
    runs = [run(str(i), "swap", v, n=None) for i, v in enumerate((-400.0, 578.0, -400.0, 578.0), 1)]
    runs += [run("5", "eager", 92.0, n=None), run("6", "eager", 104.0, n=None)]
    ev = evaluate(inv(runs=runs, base=base))
    by = {s.recipe: s for s in ev.suggestions}
    assert by["swap"].state == by["eager"].state == "can't tell yet"
    more = {r: int(by[r].advice.split("run it ")[1].split(" ")[0].replace(",", "")) for r in ("swap", "eager")}
    assert more["swap"] > 100 * more["eager"]
    assert [s.recipe for s in ev.suggestions].index("eager") < [s.recipe for s in ev.suggestions].index("swap")
    assert by["eager"].score > by["swap"].score > 0


def test_a_score_keeps_the_order_of_costs_in_the_millions():
    """Scores were rounded to six decimals: a recipe that needs 9 million repeats tied one
    that needs 3 million (both 0.0), and the rule file's order ranked them."""
    from triage.rules.next.suggest import Candidate, Outcome, score

    outs = [Outcome("recovers", 1.0, (("h", "confirmed"),))]
    costs = (1.0, 1_000_000.0, 1_400_000.0, 3_000_000.0, 9_220_782.0)
    scores = [score(Candidate("recipe", "r", ("h",), cost), outs, {}) for cost in costs]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(costs) and scores[-1] > 0


def test_a_cant_tell_that_needs_more_samples_costs_the_larger_run():
    """A re-run with ten times the samples costs what ten runs of the samples it had cost."""
    one = evaluate(inv(runs=[run("1", "eager", 0.91, n=100)]))
    (s,) = [s for s in one.suggestions if s.recipe == "eager"]
    n = int(s.advice.split("n ≥ ")[1].split(" ")[0].replace(",", ""))
    fresh = evaluate(inv())  # the same recipe never run: one run of its usual cost
    (never,) = [x for x in fresh.suggestions if x.recipe == "eager"]
    assert s.score == pytest.approx(never.score * 100 / n, rel=1e-3)


def test_a_confirmed_parent_makes_its_open_children_the_next_level():
    base = RANKING.replace("  - {id: h4, title: Four}\n",
                           "  - {id: h4, title: Four}\n  - {id: c1, title: Child one, parent: h4}\n"
                           "  - {id: c2, title: Child two, parent: h4}\n")
    base += """
  - id: child-probe
    predicts: {c1: recovers}
  - id: other-probe
    predicts: {h3: recovers}
evidence:
  - {hypothesis: h4, verdict: confirms, because: the image swap}
"""
    ev = evaluate(inv(base=base))
    assert ev.next_level == {"h4": ["c1", "c2"]}
    assert "c2" in ev.untested
    order = [s.recipe for s in ev.suggestions]
    assert order.index("child-probe") < order.index("other-probe")  # same score: the next level first


def test_override_sets_the_status_by_hand_and_says_so():
    base = BASE.replace(
        "  - {id: graph, title: Graph}\n",
        "  - id: graph\n    title: Graph\n    override: {status: confirmed, because: seen in a profiler trace, author: bob}\n",
    )
    ev = evaluate(inv("", [run("1", "eager", 0.879)], base=base))
    assert ev.statuses["graph"] == "confirmed"
    (w,) = [w for w in ev.warnings if w.kind == "override"]
    assert "set by hand to confirmed (the evidence says ruled_out): seen in a profiler trace (bob)" in w.message
    assert any(e.rule == "override" and "override" in e.flags for e in evidence_for(ev, "graph"))


def test_repeats_that_disagree_are_warned_about():
    same = {"image": "latest"}
    ev = evaluate(inv(runs=[run("1", "eager", 0.883, provenance=same), run("2", "eager", 0.941, provenance=same)]))
    (w,) = [w for w in ev.warnings if w.kind == "repeats"]
    assert "runs of eager with the same provenance disagree: 2 0.941 vs 1 0.883" in w.message
    # different provenance (a bisect's points, say) is no repeat; agreeing repeats are fine
    ev = evaluate(inv(runs=[run("1", "eager", 0.883, provenance=same), run("2", "eager", 0.941, provenance={"image": "old"})]))
    assert not [w for w in ev.warnings if w.kind == "repeats"]
    ev = evaluate(inv(runs=[run("1", "eager", 0.883, provenance=same), run("2", "eager", 0.879, provenance=same)]))
    assert not [w for w in ev.warnings if w.kind == "repeats"]


def test_a_run_is_valid_exactly_when_it_has_no_reason_to_be_invalid():
    """``Context.valid`` is the quick form of ``invalid_reason(run) is None``."""
    from itertools import product

    from triage.rules.language.schema import INVALID_STATUSES, STATUSES

    sigs = {"blob": SignatureInfo("blob", "infra", "log purged", "re-run")}
    ctx = Context(inv(signatures=sigs))
    seen = set()
    for status, excluded, signature, note in product(STATUSES, (False, True), (None, "", "blob", "unknown"),
                                                     (None, "a note")):
        run = RunRec("1", "c", status, excluded=excluded, excluded_reason=None, signature=signature, note=note)
        assert ctx.valid(run) == (ctx.invalid_reason(run) is None), run
        seen.add(ctx.valid(run))
    assert seen == {True, False} and set(INVALID_STATUSES) < set(STATUSES)


def test_a_point_run_thousands_of_times_names_ten_runs_of_each_kind_and_counts_the_rest():
    """A flaky point with 1,200 runs: its reason names ten good, ten bad and ten distinct
    readings, then how many more, instead of every run id (at a million runs, megabytes)."""
    runs = [img("1", "d1", 0.941), img("2", "d5", 0.879)]
    runs += [img(f"g{i}", "d3", 0.941) for i in range(600)] + [img(f"b{i}", "d3", 0.879 - i / 2e3) for i in range(600)]
    runs += [img(f"c{i}", "d3", status="crashed") for i in range(25)]
    _, b = bisect_of(runs)
    d3 = b.points[2]
    assert d3.state == "flaky" and len(d3.runs) == 1200  # every run still counts and is linked
    head = d3.reason.split(" — ")[0]
    assert head == ("good in g0, g1, g2, g3, g4, g5, g6, g7, g8, g9, … and 590 more but bad in b0, b1, b2, b3, b4, "
                    "b5, b6, b7, b8, b9, … and 590 more: re-run it to settle")
    assert d3.reason.endswith("… and 295 more") and len(d3.reason) < 2_000
    runs = [img("1", "d1", 0.941), img("2", "d5", 0.879), img("3", "d3", 0.879)]
    runs += [img(f"c{i}", "d3", status="crashed") for i in range(25)]
    _, b = bisect_of(runs)
    assert b.points[2].reason.endswith("c9 crashed; … and 15 more")


def test_repeats_are_grouped_by_provenance_however_many_mappings_are_kept(monkeypatch):
    """Runs of several configs that share one provenance mapping (a nightly's matrix, read by
    one source) have its key worked out once per evaluation; with none kept, every run's is
    worked out again: the same groups and warnings either way."""
    from triage.rules.decisions import readings

    shared, other = {"image": "latest", "node": "n1"}, {"image": "latest", "node": "n2"}
    runs = [run("1", "eager", 0.883, provenance=shared), run("1", "swap", 0.879, provenance=shared),
            run("2", "eager", 0.941, provenance=shared), run("2", "swap", 0.881, provenance=shared),
            run("3", "eager", 0.940, provenance=other)]
    kept = Context(inv(runs=runs))
    groups = readings.repeat_groups(runs, kept)
    assert {c: [(g[2][0], g[3][0]) for g in gs.values()] for c, gs in groups.items()} == {
        "eager": [("1", "2"), ("3", "3")], "swap": [("1", "2")]}
    (keys,) = [v for k, v in kept.once.items() if k.startswith("provenance keys")]
    assert len(keys) == 2 and all(mapping is shared or mapping is other for mapping, _ in keys.values())
    warned = [w.message for w in evaluate(inv(runs=runs)).warnings]
    assert any("runs of eager with the same provenance disagree" in w for w in warned)
    monkeypatch.setattr(readings, "PROVENANCE_KEYS", -1)  # started again at every call
    assert readings.repeat_groups(runs, Context(inv(runs=runs))) == groups
    assert [w.message for w in evaluate(inv(runs=runs)).warnings] == warned
