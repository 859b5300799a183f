"""The rule language says what investigators mean (issue #9): each reproduction of the issue."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from triage.rules.engine.evaluate import Investigation, RunRec, evaluate
from triage.rules.language.schema import RuleFile
from tests.support.rulelang import HEAD


def inv(body: str, runs=()) -> Investigation:
    spec = RuleFile.model_validate(yaml.safe_load(textwrap.dedent(HEAD) + textwrap.dedent(body)))
    return Investigation(spec.investigation, spec.hypotheses, spec.recipes, spec.rules, spec.evidence, spec.bisects,
                         list(runs), {}, spec.exclusive)


def run(run_id: str, config: str, acc=None, status="failed", n=100, **prov) -> RunRec:
    return RunRec(run_id, config, status, {"acc": (acc, n)} if acc is not None else {}, prov)


BISECT = """
hypotheses: [{id: h, title: H}]
bisects:
  - id: b
    axis: sha
    points: [a, b, c]
    good_when: {GOOD}
"""
POINTS = [run("1", "x", 0.8, "passed", sha="a"), run("2", "x", None, "failed", sha="b"),
          run("3", "x", 0.1, "failed", sha="c")]


def states(ev, bid="b"):
    b = next(x for x in ev.bisects if x.id == bid)
    return [p.state for p in b.points], b


# 1. verdict-only points --------------------------------------------------------


def test_a_valid_failed_run_without_a_number_is_no_number_not_skipped():
    got, b = states(evaluate(inv(BISECT.replace("{GOOD}", "{at_least: gate}"), POINTS)))
    assert got == ["good", "no_number", "bad"]
    assert b.first_bad == "c" and not b.done and b.next == "b"  # b may be the first bad: re-measure it
    assert "no number" in b.points[1].reason and "without a acc value" in b.points[1].reason


def test_a_status_good_when_judges_passed_good_and_failed_bad():
    got, b = states(evaluate(inv(BISECT.replace("{GOOD}", "{status: passed}"), POINTS)))
    assert got == ["good", "bad", "bad"]
    assert (b.last_good, b.first_bad, b.done) == ("a", "b", True)


def test_a_status_good_when_still_skips_crashed_runs():
    runs = POINTS[:1] + [run("2", "x", None, "crashed", sha="b"), POINTS[2]]
    got, _ = states(evaluate(inv(BISECT.replace("{GOOD}", "{status: passed}"), runs)))
    assert got == ["good", "skipped", "bad"]


def test_a_mark_judges_a_point_and_a_disagreeing_run_makes_it_flaky():
    body = BISECT.replace("{GOOD}", "{status: passed}") + """
    marks:
      - {point: b, verdict: good, because: built and ran it locally, author: alice}
"""
    got, b = states(evaluate(inv(body, [POINTS[0], POINTS[2]])))
    assert got == ["good", "good", "bad"]
    assert b.points[1].manual and "marked good by hand: built and ran it locally (alice)" in b.points[1].reason
    assert (b.last_good, b.first_bad) == ("b", "c")
    got, b = states(evaluate(inv(body, POINTS)))  # the run at b failed: it disagrees with the mark
    assert got[1] == "flaky" and "but bad in 2" in b.points[1].reason


# 2. exclusive hypotheses --------------------------------------------------------

EXCLUSIVE = """
hypotheses:
  - {id: alone, title: "#56433 alone", vary: [pr56433]}
  - {id: together, title: "#56433 and #51692 together", vary: [pr56433, pr51692]}
exclusive: [[alone, together]]
recipes:
  - {id: revert-both, base: main, tests: [alone, together], predicts: {alone: recovers, together: recovers}}
  - {id: revert-56433, base: main, tests: [alone, together], predicts: {alone: recovers, together: same_as_bad}}
"""


def test_two_confirmed_exclusive_hypotheses_are_conflicting_with_a_warning():
    ev = evaluate(inv(EXCLUSIVE, [run("1", "revert-both", 0.79, "passed")]))
    assert ev.statuses == {"alone": "conflicting", "together": "conflicting"}
    [w] = [w for w in ev.warnings if w.kind == "exclusive"]
    assert "`alone`, `together` exclude each other" in w.message
    assert "alone by " in w.message and "together by " in w.message and "0.79" in w.message
    assert "revert-56433 would tell them apart" in w.message
    assert not [w for w in ev.warnings if w.kind == "conflict"]


def test_without_a_recipe_that_tells_them_apart_the_warning_says_what_it_would_change():
    body = EXCLUSIVE.split("  - {id: revert-56433")[0]
    ev = evaluate(inv(body, [run("1", "revert-both", 0.79, "passed")]))
    [w] = [w for w in ev.warnings if w.kind == "exclusive"]
    assert "no recipe tells alone from together: a recipe would need to change pr51692 (together)" in w.message


def test_one_confirmed_rules_out_the_rest_of_its_group_and_a_parent_can_be_exclusive():
    body = """
hypotheses:
  - {id: p, title: P, exclusive: true}
  - {id: a, title: A, parent: p}
  - {id: b, title: B, parent: p}
recipes:
  - {id: r, base: main, tests: [a], predicts: {a: recovers}}
"""
    ev = evaluate(inv(body, [run("1", "r", 0.8, "passed")]))
    assert ev.statuses["a"] == "confirmed" and ev.statuses["b"] == "ruled_out"
    assert any(e.hypothesis == "b" and "a is confirmed and excludes it" in e.reason for e in ev.evidence)


# 3. which predictions confirm ---------------------------------------------------


def test_a_prediction_marked_confirms_confirms_and_a_plain_one_only_supports():
    body = """
hypotheses: [{id: h, title: H}, {id: k, title: K}]
recipes:
  - id: revert
    base: main
    predicts:
      h: {when: {at_least: gate}, confirms: true}
      k: {at_least: gate}
"""
    ev = evaluate(inv(body, [run("1", "revert", 0.8, "passed")]))
    assert ev.statuses == {"h": "confirmed", "k": "open"}
    [s] = evaluate(inv(body)).suggestions
    assert "comes out ≥ gate ⇒ h confirmed, k supported" in s.outcomes


def test_recovers_can_be_told_not_to_confirm():
    body = """
hypotheses: [{id: h, title: H}]
recipes:
  - {id: r, base: main, predicts: {h: {when: recovers, confirms: false}}}
"""
    assert evaluate(inv(body, [run("1", "r", 0.8, "passed")])).statuses["h"] == "open"


# 4. conditions over bisects -----------------------------------------------------

OVER_BISECT = BISECT.replace("{GOOD}", "{status: passed}") + """
rules:
  - {id: found, hypothesis: h, when: {bisect: b, first_bad: b}, then: confirmed, because: the bisect converged on b}
  - {id: not-c, hypothesis: h, when: {bisect: b, last_good: c}, then: ruled_out}
"""


def test_a_rule_reads_a_converged_bisect():
    ev = evaluate(inv(OVER_BISECT, POINTS))
    assert ev.statuses["h"] == "confirmed"
    [e] = [e for e in ev.evidence if e.rule == "found"]
    assert "the bisect converged on b" in e.reason and "first bad b" in e.reason


def test_a_bisect_not_converged_yet_decides_nothing_until_it_excludes_the_point():
    ev = evaluate(inv(OVER_BISECT, [POINTS[0], POINTS[2]]))  # b untested: first bad may still be b
    assert ev.statuses["h"] == "open"
    done = OVER_BISECT + """
  - {id: d, hypothesis: h, when: {not: {bisect: b, done: true}}, then: inconclusive}
"""
    assert evaluate(inv(done, [POINTS[0], POINTS[2]])).statuses["h"] == "inconclusive"


# 5. counting ------------------------------------------------------------------

FLAKY = """
hypotheses: [{id: machine-flake, title: The test fails only on some machines}]
rules:
  - id: two-machines
    hypothesis: machine-flake
    when: {status: failed, distinct: machine, at_least: 2}
    then: supports
  - id: enough
    hypothesis: machine-flake
    when: {config: t, count: 4}
    then: inconclusive
"""


def test_distinct_counts_provenance_values_of_the_selected_runs():
    one = [run("1", "t", status="failed", machine="m1"), run("2", "t", status="failed", machine="m1"),
           run("3", "t", status="passed", machine="m2")]
    ev = evaluate(inv(FLAKY, one))
    assert ev.statuses["machine-flake"] == "inconclusive"  # neither count reached yet: can't tell, never false
    assert {e.rule: e.needed for e in ev.evidence} == {"two-machines": ("runs on 1 more machine value",),
                                                       "enough": ("1 more valid run",)}
    two = one + [run("4", "t", status="failed", machine="m3")]
    ev = evaluate(inv(FLAKY, two))
    assert ev.statuses["machine-flake"] == "inconclusive"  # supports + count's inconclusive
    [e] = [e for e in ev.evidence if e.rule == "two-machines"]
    assert "2 distinct machine ≥ 2 (m1, m3)" in e.reason
    [c] = [e for e in ev.evidence if e.rule == "enough"]
    assert "4 valid runs ≥ 4" in c.reason


# 6. the experiment that would decide ---------------------------------------------


def test_no_recipe_tells_two_open_siblings_apart():
    body = """
hypotheses:
  - {id: a, title: A, vary: [dtype]}
  - {id: b, title: B, vary: [kernel]}
recipes:
  - {id: r, base: main, tests: [a, b]}
"""
    ev = evaluate(inv(body))
    [w] = [w for w in ev.warnings if w.kind == "no-recipe"]
    assert w.message == ("no recipe tells `a` from `b`: a recipe would need to change dtype (a) but not kernel, "
                         "or change kernel (b) but not dtype")
    told = body + "  - {id: s, base: main, tests: [a], predicts: {a: recovers}}\n"
    assert not [w for w in evaluate(inv(told)).warnings if w.kind == "no-recipe"]


def test_a_suggestions_outcomes_come_from_rules_too():
    body = """
hypotheses: [{id: h, title: H}]
recipes:
  - {id: r, base: main, tests: [h], predicts: {h: {at_least: gate}}}
rules:
  - {id: r-gate, hypothesis: h, when: {config: r, at_least: gate}, then: confirmed}
"""
    [s] = evaluate(inv(body)).suggestions
    assert "comes out ≥ gate ⇒ h confirmed (rule r-gate)" in s.outcomes
    assert not any("supported" in o for o in s.outcomes)
    only_rule = body.replace(", predicts: {h: {at_least: gate}}", "")
    [s] = evaluate(inv(only_rule)).suggestions
    assert "come out ≥ gate ⇒ h confirmed (rule r-gate)" in s.outcomes
    assert not any(o.startswith("no prediction") for o in s.outcomes)


# 7. a failed run without a number --------------------------------------------------


def test_a_recipe_run_failed_without_a_number_is_inconclusive_and_suggested_again():
    body = """
hypotheses: [{id: h, title: H}]
recipes:
  - {id: r, base: main, tests: [h], predicts: {h: recovers}}
"""
    ev = evaluate(inv(body, [run("1", "r", None, "failed")]))
    assert ev.statuses["h"] == "inconclusive"
    [e] = [e for e in ev.evidence if e.hypothesis == "h"]
    assert "no acc value: no number" in e.reason
    assert [s.recipe for s in ev.suggestions] == ["r"]


@pytest.mark.parametrize("when, message", [
    ("{distinct: machine}", "distinct needs at_least: N"),
    ("{first_bad: p}", "first_bad needs bisect: ID"),
    ("{bisect: x}", "bisect: ID needs exactly one of first_bad, last_good or done"),
])
def test_new_condition_keys_are_checked(when, message):
    with pytest.raises(Exception) as e:
        inv(f"hypotheses: [{{id: h, title: H}}]\nrules: [{{id: r, hypothesis: h, when: {when}, then: confirmed}}]\n")
    assert message in str(e.value)


def test_bisect_mark_is_stored_shown_as_manual_and_kept_on_reload(cli, seeded):
    point = "v0.5.13.post1-rocm720-mi35x-20260624"
    r = cli("bisect", "mark", "--pr", "30433", "image", point, "good", "--because", "ran it by hand", "--author", "al")
    assert r.code == 0, r.err
    assert "marked image v0.5.13.post1-rocm720-mi35x-20260624 good (manual)" in r.out
    r = cli("bisect", "--pr", "30433", "--id", "image", "--format", "json")
    [b] = __import__("json").loads(r.out)
    p = next(p for p in b["points"] if p["label"] == point)
    assert p["state"] == "good" and "marked good by hand: ran it by hand (al)" in p["reason"]
    assert b["last_good"] == "v0.5.13.post1-rocm720-mi35x-20260625"  # unchanged: the mark agrees with the range
    r = cli("bisect", "mark", "--pr", "30433", "image", "nope", "bad", "--because", "x")
    assert r.code == 2 and "point 'nope': not a point of bisect 'image'" in r.err
    r = cli("bisect", "mark", "--pr", "30433", "image", point, "maybe", "--because", "x")
    assert r.code == 2 and "expected good or bad" in r.err


def test_a_counting_prediction_reads_as_what_the_run_would_show():
    body = """
hypotheses: [{id: h, title: H}]
recipes:
  - {id: r, base: main, tests: [h], predicts: {h: {when: {status: passed, count: 3}, confirms: true}}}
"""
    [s] = evaluate(inv(body)).suggestions
    assert s.outcomes[0] == "comes out passed in ≥ 3 valid runs ⇒ h confirmed"


def test_a_rule_over_a_recipe_run_without_a_number_is_inconclusive_too():
    body = """
hypotheses: [{id: h, title: H}]
recipes:
  - {id: r, base: main, tests: [h]}
rules:
  - {id: r-gate, hypothesis: h, when: {config: r, at_least: gate}, then: confirmed}
  - {id: r-passed, hypothesis: h, when: {config: r, status: passed, at_least: gate}, then: confirmed}
"""
    ev = evaluate(inv(body, [run("1", "r", None, "failed")]))
    assert ev.statuses["h"] == "inconclusive"
    assert [e.rule for e in ev.evidence] == ["r-gate"]  # r-passed does not look at a failed run
    assert [s.recipe for s in ev.suggestions] == ["r"]
