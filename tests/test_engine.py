"""The engine on small, hand-built investigations (no database)."""

from __future__ import annotations

import textwrap

import yaml

from triage.rules.engine import Investigation, RunRec, SignatureInfo, evaluate
from triage.rules.schema import RuleFile

BASE = """
schema_version: 1
investigation:
  id: t
  repo: o/r
  pr: 1
  title: T
  metric: acc
  gate: 0.92
  references:
    bad: {value: 0.878, n: 1319}
    good: {value: 0.944, n: 1319}
hypotheses:
  - {id: backend, title: Backend}
  - {id: graph, title: Graph}
  - {id: mode, title: Mode}
recipes:
  - id: swap
    base: base
    change: backend a -> b
    vary: {backend: b}
    tests: [backend, mode]
    predicts: {backend: recovers, mode: same_as_bad}
    run: ci run -f configs={ids}
  - id: eager
    base: base
    vary: {graph: off}
    tests: [graph]
    predicts: {graph: recovers}
    run: ci run -f configs={ids}
"""


def inv(extra: str = "", runs: list[RunRec] = (), base: str = BASE, signatures=None) -> Investigation:
    data = yaml.safe_load(textwrap.dedent(base) + textwrap.dedent(extra))
    spec = RuleFile.model_validate(data)
    return Investigation(
        spec=spec.investigation,
        hypotheses=spec.hypotheses,
        recipes=spec.recipes,
        rules=spec.rules,
        evidence=spec.evidence,
        bisects=spec.bisects,
        runs=list(runs),
        signatures=signatures or {},
    )


def run(run_id: str, config: str, acc=None, n=1319, status="failed", **kw) -> RunRec:
    metrics = {"acc": (acc, n)} if acc is not None else {}
    metrics.update(kw.pop("metrics", {}))
    return RunRec(run_id=run_id, config=config, status=status, metrics=metrics, **kw)


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
    assert "0.879 vs bad 0.878: Δ +0.001, within noise (±0.025 at n=1319)" in out.reason
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
        when: {config: eager, same_as: {config: base}}
        then: ruled_out
    """
    runs = [run("1", "base", 100.0, n=None), run("2", "eager", 104.0, n=None)]
    ev = evaluate(inv(extra, runs, base=base))
    assert ev.statuses["graph"] == "ruled_out"
    assert "within tolerance" in evidence_for(ev, "graph")[0].reason
    ev = evaluate(inv(extra, [runs[0], run("2", "eager", 106.0, n=None)], base=base))
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
    assert b.next == "d3" and b.steps == 3
    ev = evaluate(inv(extra, runs + [run("4", "x", 0.95, provenance={"image": "d4"}), run("5", "x", 0.88, provenance={"image": "d5"})]))
    (b,) = ev.bisects
    assert (b.last_good, b.first_bad, b.remaining, b.next) == ("d4", "d5", (), None)


def test_evaluation_is_deterministic():
    runs = [run("1", "swap", 0.879), run("2", "eager", status="crashed")]
    a, b = evaluate(inv(runs=runs)), evaluate(inv(runs=list(reversed(runs))))
    assert a.statuses == b.statuses
    assert sorted(e.key for e in a.evidence) == sorted(e.key for e in b.evidence)
