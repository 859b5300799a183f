"""Issue 24: every decision is holds, contradicted or can't tell; "not shown different" is never
"the same", and "not shown recovered" is never "ruled out"."""

from __future__ import annotations

import textwrap

import yaml

from triage.rules.engine.evaluate import Investigation, RunRec, evaluate
from triage.rules.language.schema import RuleFile


def inv(text: str, runs=()) -> Investigation:
    spec = RuleFile.model_validate(yaml.safe_load(textwrap.dedent(text)))
    return Investigation(spec=spec.investigation, hypotheses=spec.hypotheses, recipes=spec.recipes,
                         rules=spec.rules, evidence=spec.evidence, bisects=spec.bisects, runs=list(runs),
                         signatures={})


def run(run_id: str, config: str, metrics: dict | None = None, status: str = "passed", **kw) -> RunRec:
    metrics = metrics or {}
    return RunRec(run_id=run_id, config=config, status=status,
                  metrics={k: (v if isinstance(v, tuple) else (v, None)) for k, v in metrics.items()}, **kw)


def items(ev, rule: str):
    return [e for e in ev.evidence if e.rule == rule]


# ------------------------------------------------------------------ 1. "same" checks the difference


FLAKY_SAME = """
schema_version: 1
investigation:
  id: f
  repo: o/r
  pr: 1
  title: flaky
  metric: fail_rate
  direction: lower
  references:
    good: {value: 0}
    bad: {config: B}
hypotheses:
  - {id: h, title: H}
rules:
  - {id: same, hypothesis: h, when: {config: A, same_as: {config: B}}, then: confirmed}
"""


def test_one_pass_is_not_the_same_as_three_failures():
    runs = [run(f"b{i}", "B", status="failed") for i in range(3)] + [run("a", "A")]
    ev = evaluate(inv(FLAKY_SAME, runs))
    assert ev.statuses["h"] != "confirmed"
    (item,) = items(ev, "same")
    assert item.verdict == "inconclusive"
    assert "≈" not in item.summary


def test_the_same_counts_in_large_numbers_are_the_same():
    runs = [run(f"b{i}", "B", status="failed" if i < 30 else "passed") for i in range(100)]
    runs += [run(f"a{i}", "A", status="failed" if i < 31 else "passed") for i in range(100)]
    ev = evaluate(inv(FLAKY_SAME, runs))
    assert ev.statuses["h"] == "confirmed"


def test_a_fail_rate_run_reads_its_outcome_not_no_value():
    runs = [run(f"b{i}", "B", status="failed") for i in range(3)] + [run("a", "A")]
    ev = evaluate(inv(FLAKY_SAME, runs))
    assert all("no fail_rate" not in ev.readings[r.key] for r in runs)


# ------------------------------------------------------------------ 2. a failed "recovers" is not a ruling out


STRESS = """
schema_version: 1
investigation:
  id: s
  repo: o/r
  pr: 2
  title: stress
  metric: fail_rate
  direction: lower
  references:
    good: {value: 0.0}
    bad: {run: main-1}
hypotheses:
  - {id: race, title: A race}
recipes:
  - {id: revert, base: main, tests: [race], predicts: {race: recovers}}
"""


def test_zero_of_one_job_cannot_tell_a_recovery():
    runs = [run("main-1", "main", {"fail_rate": (1.0, 4)}), run("r", "revert", {"fail_rate": (0.0, 1)})]
    ev = evaluate(inv(STRESS, runs))
    assert ev.statuses["race"] != "ruled_out"
    (item,) = items(ev, "predicts:revert")
    assert item.verdict == "inconclusive"


def test_zero_of_eight_jobs_confirms_a_recovery():
    runs = [run("main-1", "main", {"fail_rate": (1.0, 4)}), run("r", "revert", {"fail_rate": (0.0, 8)})]
    ev = evaluate(inv(STRESS, runs))
    assert ev.statuses["race"] == "confirmed"


def test_four_of_four_again_rules_the_revert_out():
    runs = [run("main-1", "main", {"fail_rate": (1.0, 4)}), run("r", "revert", {"fail_rate": (1.0, 8)})]
    ev = evaluate(inv(STRESS, runs))
    assert ev.statuses["race"] == "ruled_out"


# ------------------------------------------------------------------ 3. too few repeats do not rule out


WALL = """
schema_version: 1
investigation:
  id: w
  repo: o/r
  pr: 3
  title: wall time
  metric: wall_s
  direction: lower
  references:
    good: {value: 1470}
    bad: {value: 1487}
hypotheses:
  - {id: cache, title: Cache}
recipes:
  - {id: fix, base: main, tests: [cache], predicts: {cache: recovers}}
"""


def test_two_repeats_between_good_and_bad_cannot_tell_and_say_how_many_would():
    runs = [run("1", "fix", {"wall_s": 1475.0}), run("2", "fix", {"wall_s": 1481.0})]
    ev = evaluate(inv(WALL, runs))
    assert ev.statuses["cache"] != "ruled_out"
    (item,) = items(ev, "predicts:fix")
    assert item.verdict == "inconclusive"
    assert item.needed and any("repeats" in n for n in item.needed)


def test_repeats_at_bad_rule_out():
    runs = [run(str(i), "fix", {"wall_s": v}) for i, v in enumerate((1486.0, 1488.0, 1487.5, 1486.5))]
    ev = evaluate(inv(WALL, runs))
    assert ev.statuses["cache"] == "ruled_out"


def test_repeats_at_good_confirm():
    runs = [run(str(i), "fix", {"wall_s": v}) for i, v in enumerate((1469.0, 1471.0, 1470.5, 1469.5))]
    ev = evaluate(inv(WALL, runs))
    assert ev.statuses["cache"] == "confirmed"


# ------------------------------------------------------------------ 4. count: is "not yet", not false


COUNT = """
schema_version: 1
investigation:
  id: c
  repo: o/r
  pr: 4
  title: count
  metric: acc
hypotheses:
  - {id: h, title: H}
rules:
  - {id: twice, hypothesis: h, when: {config: x, status: passed, count: 2}, then: supports}
  - {id: not-twice, hypothesis: h, when: {not: {config: x, status: passed, count: 2}}, then: ruled_out}
"""


def test_count_is_undecided_while_more_runs_could_satisfy_it():
    ev = evaluate(inv(COUNT, [run("1", "x", {"acc": 0.9})]))
    assert ev.statuses["h"] != "ruled_out"
    (item,) = items(ev, "twice")
    assert item.verdict == "inconclusive" and item.needed == ("1 more valid run",)
    ev = evaluate(inv(COUNT, [run("1", "x", {"acc": 0.9}), run("2", "x", {"acc": 0.91})]))
    assert [e.verdict for e in items(ev, "twice")] == ["supports"]
    assert ev.statuses["h"] == "open"


# ------------------------------------------------------------------ 5. percentages


TOP1 = """
schema_version: 1
investigation:
  id: p
  repo: o/r
  pr: 5
  title: top-1
  metric: top1
  metrics: {top1: {scale: 100}}
  references:
    good: {value: 92}
    bad: {value: 80}
hypotheses:
  - {id: h, title: H}
recipes:
  - {id: fix, base: main, tests: [h], predicts: {h: recovers}}
"""


def test_a_percentage_within_its_band_recovers():
    ev = evaluate(inv(TOP1, [run("1", "fix", {"top1": (91.0, 511)})]))
    assert ev.statuses["h"] == "confirmed"
    (item,) = items(ev, "predicts:fix")
    assert "n=511" in item.reason


def test_a_percentage_with_n_and_no_scale_is_warned_about():
    text = TOP1.replace("  metrics: {top1: {scale: 100}}\n", "")
    ev = evaluate(inv(text, [run("1", "fix", {"top1": (91.0, 511)})]))
    assert any("scale: 100" in w.message for w in ev.warnings)


# ------------------------------------------------------------------ 6. no noise at all is said loudly


TPUT = """
schema_version: 1
investigation:
  id: t
  repo: o/r
  pr: 6
  title: throughput
  metric: tok_s
  references:
    good: {value: 390}
    bad: {value: 300}
hypotheses:
  - {id: h, title: H}
rules:
  - {id: like-bad, hypothesis: h, when: {config: x, differs_from: bad}, then: supports}
"""


def test_no_noise_estimate_is_warned_once_with_the_line_to_add():
    ev = evaluate(inv(TPUT, [run("1", "x", {"tok_s": 386.0}), run("2", "y", {"tok_s": 301.0})]))
    noise = [w for w in ev.warnings if "no noise estimate" in w.message]
    assert len(noise) == 1
    assert "metrics: {tok_s: {noise:" in noise[0].message and "tolerance:" in noise[0].message


def test_a_declared_noise_silences_the_warning():
    text = TPUT.replace("  metric: tok_s\n", "  metric: tok_s\n  metrics: {tok_s: {noise: 2%}}\n")
    ev = evaluate(inv(text, [run("1", "x", {"tok_s": 386.0})]))
    assert not [w for w in ev.warnings if "no noise estimate" in w.message]


def test_check_says_no_noise_estimate(tmp_path):
    from typer.testing import CliRunner

    from triage.cli import app

    (tmp_path / "t.yaml").write_text(textwrap.dedent(TPUT))
    r = CliRunner().invoke(app, ["--rules", str(tmp_path), "--db", f"sqlite:///{tmp_path}/kb.sqlite", "check"])
    assert r.exit_code == 0, r.output
    assert "no noise estimate" in r.output and "tok_s" in r.output


# ------------------------------------------------------------------ 7. reasons show the counts


RATE = """
schema_version: 1
investigation:
  id: r
  repo: o/r
  pr: 7
  title: pass rate
  metric: fail_rate
  direction: lower
  references:
    good: {value: 0}
    bad: {config: main}
hypotheses:
  - {id: race, title: Race}
recipes:
  - {id: revert, base: main, tests: [race], predicts: {race: {better_than: bad}}}
"""


def test_a_pass_rate_comparison_shows_its_counts():
    runs = [run(f"m{i}", "main", status="failed" if i < 7 else "passed") for i in range(50)]
    runs += [run(f"r{i}", "revert") for i in range(50)]
    ev = evaluate(inv(RATE, runs))
    (item,) = items(ev, "predicts:revert")
    assert "0/50" in item.reason and "7/50" in item.reason and "Fisher p = 0.012" in item.reason


# ------------------------------------------------------------------ same_as / differs_from, said


SAME_WORDS = """
schema_version: 1
investigation:
  id: s
  repo: o/r
  pr: 1
  title: same or not
  metric: tput
  metrics: {tput: {noise: 1.0}}
  references:
    bad: {config: B}
hypotheses:
  - {id: h, title: H}
rules:
  - {id: same, hypothesis: h, when: {config: A, same_as: bad, margin: 5}, then: confirmed}
  - {id: differs, hypothesis: h, when: {config: A, differs_from: bad, margin: 5}, then: supports}
"""


def test_same_as_a_reference_with_no_value_yet_decides_nothing():
    ev = evaluate(inv(SAME_WORDS, [run("a", "A", {"tput": 100.0})]))
    assert ev.statuses["h"] == "open"
    assert items(ev, "same") == [] and items(ev, "differs") == []


def test_same_as_and_differs_from_say_which_in_a_word():
    same = evaluate(inv(SAME_WORDS, [run("a", "A", {"tput": 100.0}), run("b", "B", {"tput": 100.5})]))
    (item,) = items(same, "same")
    assert item.verdict == "confirms" and item.summary == "A 100.0 ≈ bad 100.5" and tuple(item.runs) == ("a/A",)
    apart = evaluate(inv(SAME_WORDS, [run("a", "A", {"tput": 100.0}), run("b", "B", {"tput": 120.0})]))
    (item,) = items(apart, "differs")
    assert item.verdict == "supports" and item.summary == "A 100.0 ≠ bad 120.0"
    near = evaluate(inv(SAME_WORDS, [run("a", "A", {"tput": 100.0}), run("b", "B", {"tput": 104.0})]))
    (item,) = items(near, "same")  # shown different, but not by more than the margin
    assert item.verdict == "inconclusive" and item.summary == "can't tell yet: A 100.0 vs bad 104.0: can't tell"
    assert "A 100.0 vs bad 104.0: Δ -4.000" in item.reason


# ------------------------------------------------------------------ at_least / below / recovers: false, said


THRESHOLDS = """
schema_version: 1
investigation:
  id: s
  repo: o/r
  pr: 1
  title: thresholds
  metric: tput
  metrics: {tput: {noise: 1.0}}
  references:
    good: {value: 110}
    bad: {config: B}
hypotheses:
  - {id: h, title: H}
  - {id: k, title: K}
rules:
  - {id: least, hypothesis: h, when: {config: A, at_least: 100}, then: supports}
  - {id: under, hypothesis: h, when: {config: A, below: 100}, then: supports}
  - {id: vsbad, hypothesis: h, when: {config: A, at_least: bad}, then: supports}
  - {id: back, hypothesis: k, when: {config: A, recovers: false}, then: supports}
"""


def _said(value: float) -> dict:
    ev = evaluate(inv(THRESHOLDS, [run("a", "A", {"tput": value})]))
    return {r: [(e.verdict, e.summary, e.reason, e.needed, tuple(e.runs)) for e in items(ev, r)]
            for r in ("least", "under", "vsbad", "back")}


def test_a_threshold_within_the_noise_cannot_tell_and_says_what_would_decide_it():
    said = _said(100.5)
    why = ("can't tell yet — A 100.5 vs 100: can't tell (±1.960 from run noise ±1.000 SD); would be decided by "
           "≥ 16 repeats")
    for rule in ("least", "under"):
        assert said[rule] == [("inconclusive", "can't tell yet: A 100.5 vs 100: can't tell", why,
                               ("≥ 16 repeats",), ("a/A",))]
    assert said["vsbad"] == []  # a reference with no value yet decides nothing


def test_a_threshold_beyond_the_noise_says_which_side_with_its_band():
    assert _said(110.0)["least"] == [("supports", "A 110 ≥ 100", "A 110 ≥ 100 (±1.960 from run noise ±1.000 SD)",
                                      (), ("a/A",))]
    assert _said(110.0)["under"] == []
    assert _said(90.0)["under"] == [("supports", "A 90 < 100", "A 90 < 100 (±1.960 from run noise ±1.000 SD)",
                                     (), ("a/A",))]
    assert _said(90.0)["least"] == []


def test_recovers_false_holds_when_no_recovery_is_shown():
    (item,) = _said(90.0)["back"]
    assert item[:2] == ("supports", "A 90.00 worse than good 110.0")
    assert _said(110.0)["back"] == []  # as good as good, and bad has no value yet: nothing to say


def test_any_whose_parts_are_all_contradicted_is_contradicted():
    text = THRESHOLDS + """  - {id: neither, hypothesis: k, when: {not: {any: [{config: A, at_least: 200}, {config: A, below: 50}]}},
     then: supports}
"""
    ev = evaluate(inv(text, [run("a", "A", {"tput": 100.0})]))
    assert [e.verdict for e in items(ev, "neither")] == ["supports"]
