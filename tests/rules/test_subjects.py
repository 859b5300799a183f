"""Issue 25: several subjects (models) in one investigation, each with its own gate and references."""

from __future__ import annotations

import pytest
from tests.support.references import inv
from triage.rules.engine.evaluate import RunRec, evaluate
from triage.rules.engine.memo import Memo

BUMP = """
schema_version: 1
investigation:
  id: bump
  repo: o/r
  pr: 1
  title: compiler bump
  metric: tok_s
  metrics: {tok_s: {noise: 1%}}
  gate: 50
  subject: model
  subjects:
    falcon: {references: {good: {value: 56.75}, bad: {value: 39.24}}}
    qwen8b: {gate: 12, references: {good: {value: 13.26}, bad: {value: 10.96}}}
hypotheses:
  - {id: compiler, title: The compiler bump}
rules:
  - id: slower
    hypothesis: compiler
    when: {config: nightly, worse_than: good}
    then: confirmed
bisects:
  - id: commits
    axis: sha
    config: nightly
    points: [c0, c1, c2, c3]
    good_when: {passes: gate}
"""


def run(run_id: str, model: str, value: float, sha: str, config: str = "nightly") -> RunRec:
    return RunRec(run_id=run_id, config=config, status="passed", metrics={"tok_s": (value, None)},
                  provenance={"model": model, "sha": sha})


def plain(text: str) -> str:
    """The investigation without subjects: one gate and one pair of references for every model."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(("  subject", "    falcon", "    qwen")))


GOOD = {"falcon": 56.75, "qwen8b": 13.26}
BAD = {"falcon": 39.24, "qwen8b": 10.96}


def runs_at(sha: str, values: dict[str, float]) -> list[RunRec]:
    return [run(f"{sha}-{m}", m, v, sha) for m, v in values.items()]


def test_repro_one_gate_for_two_models_makes_the_good_end_bad():
    """Without subjects (as before): qwen8b's 13.26 fails falcon's gate of 50, so the good end
    cannot be good (here falcon passes, so it reads flaky)."""
    ev = evaluate(inv(plain(BUMP), runs_at("c0", GOOD) + runs_at("c3", BAD)))
    assert ev.bisects[0].points[0].state != "good" and not ev.bisects[0].ends_ok


def test_each_model_is_judged_by_its_own_gate():
    ev = evaluate(inv(BUMP, runs_at("c0", GOOD) + runs_at("c1", GOOD) + runs_at("c2", BAD) + runs_at("c3", BAD)))
    (b,) = ev.bisects
    assert [p.state for p in b.points] == ["good", "good", "bad", "bad"]
    assert b.ends_ok and b.last_good == "c1" and b.first_bad == "c2" and b.done
    bad = b.points[2].reason
    assert "falcon, qwen8b do not hold" in bad and "qwen8b: " in bad and "falcon: " in bad


def test_a_point_is_bad_when_one_model_is_bad_under_all():
    ev = evaluate(inv(BUMP, runs_at("c0", GOOD) + runs_at("c2", {"falcon": 56.7, "qwen8b": 10.9})
                      + runs_at("c3", BAD)))
    p = ev.bisects[0].points[2]
    assert p.state == "bad" and p.reason.startswith("qwen8b does not hold")


def test_two_models_that_differ_at_one_point_are_not_flaky():
    ev = evaluate(inv(BUMP, runs_at("c0", GOOD) + runs_at("c2", {"falcon": 56.7, "qwen8b": 10.9})))
    assert ev.bisects[0].points[2].state == "bad"
    assert not any("flaky" in w.message for w in ev.warnings)


def test_any_and_at_least():
    mixed = runs_at("c0", GOOD) + runs_at("c2", {"falcon": 56.7, "qwen8b": 10.9}) + runs_at("c3", BAD)
    ev = evaluate(inv(BUMP.replace("  subject: model\n", "  subject: model\n  combine: any\n"), mixed))
    assert ev.bisects[0].points[2].state == "good"
    two = BUMP.replace("good_when: {passes: gate}", "good_when: {passes: gate, subjects: {at_least: 2}}")
    assert evaluate(inv(two, mixed)).bisects[0].points[2].state == "bad"
    one = BUMP.replace("good_when: {passes: gate}", "good_when: {passes: gate, subjects: {at_least: 1}}")
    assert evaluate(inv(one, mixed)).bisects[0].points[2].state == "good"


def test_a_rule_is_evaluated_per_model_against_its_own_references_and_names_them():
    ev = evaluate(inv(BUMP, runs_at("c3", BAD)))
    assert ev.statuses["compiler"] == "confirmed"
    (e,) = [e for e in ev.evidence if e.rule == "slower"]
    assert e.summary.startswith("all 2 subjects measured hold (falcon, qwen8b)")
    assert "falcon: nightly 39.24 vs good 56.75" in e.reason and "qwen8b: nightly 10.96 vs good 13.26" in e.reason


def test_one_model_that_is_not_slower_keeps_all_from_holding():
    ev = evaluate(inv(BUMP, runs_at("c3", {"falcon": 39.24, "qwen8b": 13.25})))
    assert ev.statuses["compiler"] == "open"


def test_a_config_reference_resolves_within_the_subject():
    text = BUMP.replace("    falcon: {references: {good: {value: 56.75}, bad: {value: 39.24}}}\n", "").replace(
        "    qwen8b: {gate: 12, references: {good: {value: 13.26}, bad: {value: 10.96}}}\n",
        "    qwen8b: {gate: 12}\n").replace("  subject: model\n", "  subject: model\n  references:\n"
                                             "    good: {config: release}\n")
    runs = [run("r1", "falcon", 56.75, "c0", "release"), run("r2", "qwen8b", 13.26, "c0", "release")]
    ev = evaluate(inv(text, runs + runs_at("c3", BAD)))
    (e,) = [e for e in ev.evidence if e.rule == "slower"]
    assert e.verdict == "confirms" and "vs good 13.26" in e.reason and "vs good 56.75" in e.reason


def test_subjects_need_a_subject_key():
    with pytest.raises(Exception, match="need subject"):
        inv(BUMP.replace("  subject: model\n", ""))
    cond = plain(BUMP).replace("good_when: {passes: gate}", "good_when: {passes: gate, subjects: any}")
    with pytest.raises(Exception, match="needs the investigation's subject"):
        inv(cond)


def test_an_incremental_evaluation_is_the_whole_one():
    first = runs_at("c0", GOOD) + runs_at("c3", BAD)
    memo = Memo()
    evaluate(inv(BUMP, first), memo)
    more = first + runs_at("c2", {"falcon": 56.7, "qwen8b": 10.9})
    again = evaluate(inv(BUMP, more), memo)
    whole = evaluate(inv(BUMP, more))
    assert again.bisects == whole.bisects and again.evidence == whole.evidence
    assert again.bisects[0].points[2].state == "bad"


def test_the_table_gives_each_model_its_reading_per_bisect_point():
    ev = evaluate(inv(BUMP, runs_at("c0", GOOD) + runs_at("c3", BAD)))
    t = ev.subjects
    assert t is not None and t.key == "model" and t.columns == ("nightly @ c0", "nightly @ c3")
    assert dict(t.rows) == {"falcon": ("56.75 ≈ good ✓ gate", "39.24 ≈ bad ✗ gate"),
                            "qwen8b": ("13.26 ≈ good ✓ gate", "10.96 ≈ bad ✗ gate")}
    assert evaluate(inv(plain(BUMP), runs_at("c0", GOOD))).subjects is None


def test_the_bundled_example_reports_one_table_per_model_collapsed(cli, rules_dir):
    assert cli("import", "examples/compile-bump.runs.jsonl").code == 0
    md = cli("report", "--pr", "131").out
    first_screen = md.split("<details>")[0]
    assert "nightly @ c0" not in first_screen and "last good `c3`, first bad `c4`" in first_screen
    assert "<details><summary>samples_s per model: 5 × 7, each in its own terms</summary>" in md
    assert "| `falcon` | 56.75 ≈ good ✓ gate | 56.69 ≈ good ✓ gate | 39.24 ≈ bad ✗ gate |" in md
    assert '"falcon · nightly @ c0"' in md  # a chart bar pools one model's runs, never several models'
    text = cli("report", "--pr", "131", "--format", "text").out
    assert "samples_s per model" in text and "qwen8b" in text
    import json

    out = json.loads(cli("report", "--pr", "131", "--format", "json").out)
    assert out["subjects"]["columns"][:2] == ["nightly @ c0", "nightly @ c3"]
    assert out["subjects"]["rows"][4] == {"subject": "gemma", "cells": [
        "41.50 ≈ good", "41.54 ≈ good", "27.97 ≈ bad", "28.00 ≈ bad", "28.00 ≈ bad", "41.50 ≈ good", "27.94 ≈ bad"]}


def test_runs_of_one_value_read_alike_only_within_their_subject():
    """A report's readings keep what a value said: two models' runs of the same value still
    read against each model's own references and gate, and each as it reads alone."""
    from triage.rules.decisions.readings import reading

    same = [run("a", "falcon", 45.0, "c1"), run("b", "qwen8b", 45.0, "c1"), run("c", "falcon", 45.0, "c2"),
            run("d", "qwen8b", 12.0, "c2"), run("e", "qwen8b", 45.0, "c2")]
    ev = evaluate(inv(BUMP, runs_at("c0", GOOD) + same))
    got = {r.run_id: ev.readings[r.key] for r in same}
    alone = {r.run_id: reading(r, ev.readings._ctx) for r in same}
    assert got == alone
    assert got["a"] == got["c"] and got["b"] == got["e"] and got["a"] != got["b"]  # the gate of 50: falcon fails it
