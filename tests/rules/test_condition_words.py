"""Issue 24, item 9: every condition word reads as a sentence, and names what decides it.

One describer (:mod:`triage.rules.language.words`) serves every key of the schema's
``Condition``: predictions' reasons, suggestions' outcomes and the rules a
suggestion mentions.  Each key has a phrase and a way to list the runs that
would decide it."""

from __future__ import annotations

import textwrap

import pytest

from triage.rules.engine.evaluate import evaluate
from triage.rules.language.schema import Condition
from triage.rules.language.words import DECIDED_BY, PHRASES, phrase, targets
from tests.support.words import inv, run

# key: (the condition, its base phrase, what a run would show, what it compares with)
WORDS = {
    "config": ({"config": "x", "status": "passed"}, "come out passed (in x)", "comes out passed (in x)", []),
    "run": ({"run": "7"}, "have a valid run (in run 7)", "has a valid run (in run 7)", []),
    "provenance": ({"provenance": {"sha": "a"}, "recovers": True}, "recover to good (in runs with sha=a)",
                   "recovers to good (in runs with sha=a)", [("ref", "good"), ("ref", "bad")]),
    "status": ({"status": ["failed", "crashed"]}, "come out failed or crashed", "comes out failed or crashed", []),
    "metric": ({"metric": "p99_ms", "below": 150}, "have p99_ms < 150", "has p99_ms < 150", []),
    "at_least": ({"at_least": "good"}, "come out ≥ good", "comes out ≥ good", [("ref", "good")]),
    "below": ({"below": "gate"}, "come out < gate", "comes out < gate", []),
    "between": ({"between": [0.5, "good"]}, "come out between 0.5 and good", "comes out between 0.5 and good",
                [("ref", "good")]),
    "same_as": ({"same_as": {"config": "main"}}, "come out ≈ main", "comes out ≈ main", [("config", "main")]),
    "differs_from": ({"differs_from": "bad"}, "come out ≠ bad", "comes out ≠ bad", [("ref", "bad")]),
    "recovers": ({"recovers": False}, "not recover", "does not recover", [("ref", "good"), ("ref", "bad")]),
    "passes": ({"passes": "gate"}, "pass the gate", "passes the gate", []),
    "fails": ({"fails": "bad"}, "fail bad", "fails bad", [("ref", "bad")]),
    "better_than": ({"better_than": "bad"}, "come out better than bad", "comes out better than bad", [("ref", "bad")]),
    "worse_than": ({"worse_than": {"config": "reference"}}, "come out worse than reference",
                   "comes out worse than reference", [("config", "reference")]),
    "no_worse_than": ({"no_worse_than": {"run": "12"}}, "come out no worse than run 12",
                      "comes out no worse than run 12", [("run", "12")]),
    "margin": ({"same_as": "good", "margin": "2%"}, "come out ≈ good (margin 2%)", "comes out ≈ good (margin 2%)",
               [("ref", "good")]),
    "min_runs": ({"min_runs": 3, "better_than": "bad"}, "come out better than bad and have ≥ 3 valid runs",
                 "comes out better than bad and has ≥ 3 valid runs", [("ref", "bad")]),
    "count": ({"status": "passed", "count": 3}, "come out passed in ≥ 3 valid runs",
              "comes out passed in ≥ 3 valid runs", []),
    "distinct": ({"distinct": "machine", "at_least": 2}, "have runs on ≥ 2 distinct machine values",
                 "has runs on ≥ 2 distinct machine values", []),
    "bisect": ({"bisect": "b", "done": True}, "have bisect b converged", "has bisect b converged", []),
    "first_bad": ({"bisect": "b", "first_bad": "p3"}, "have bisect b find p3 as its first bad point",
                  "has bisect b find p3 as its first bad point", []),
    "last_good": ({"bisect": "b", "last_good": "p2"}, "have bisect b find p2 as its last good point",
                  "has bisect b find p2 as its last good point", []),
    "done": ({"bisect": "b", "done": False}, "have bisect b not converged yet", "has bisect b not converged yet", []),
    "all": ({"all": [{"passes": "gate"}, {"worse_than": "bad"}]}, "pass the gate and come out worse than bad",
            "passes the gate and comes out worse than bad", [("ref", "bad")]),
    "any": ({"any": [{"fails": "gate"}, {"same_as": "bad"}]}, "either fail the gate or come out ≈ bad",
            "either fails the gate or comes out ≈ bad", [("ref", "bad")]),
    "not_": ({"not": {"better_than": "good"}}, "not come out better than good",
             "does not come out better than good", [("ref", "good")]),
    "subjects": ({"worse_than": "good", "subjects": {"at_least": 3}},
                 "come out worse than good for at least 3 subjects",
                 "comes out worse than good for at least 3 subjects", [("ref", "good")]),
}


def test_every_condition_word_has_a_phrase_and_the_runs_that_decide_it():
    keys = set(Condition.model_fields)
    assert set(PHRASES) == keys, "a condition key without a phrase"
    assert set(DECIDED_BY) == keys, "a condition key without the runs that decide it"
    assert set(WORDS) == keys, "a condition key this test does not read"
    assert set(DECIDED_BY.values()) <= {"compared", "own", "bisect", "nested"}


@pytest.mark.parametrize("key", sorted(WORDS))
def test_each_word_reads_as_a_sentence(key):
    raw, base, does, compared = WORDS[key]
    c = Condition.model_validate(raw)
    said = phrase(c)
    assert (said.base, said.does) == (base, does)
    assert "as stated" not in said.base
    assert targets(c) == compared


def test_a_condition_over_the_recipe_itself_does_not_name_it():
    c = Condition.model_validate({"config": "fix", "passes": "gate"})
    assert phrase(c, "fix").base == "pass the gate"
    assert phrase(c).base == "pass the gate (in fix)"


GATE = """
hypotheses: [{id: g, title: G}]
recipes:
  - id: fix
    base: main
    tests: [g]
    predicts:
      g: {when: {passes: gate}, confirms: true}
"""


def test_an_unrun_gate_prediction_says_what_the_run_would_show():
    [s] = evaluate(inv(GATE)).suggestions
    assert s.outcomes[0] == "passes the gate ⇒ g confirmed"
    assert "as stated" not in s.why and "ass stated" not in s.why


@pytest.mark.parametrize("when, base", [
    ("{passes: gate}", "pass the gate"),
    ("{fails: gate}", "fail the gate"),
    ("{better_than: good}", "come out better than good"),
    ("{worse_than: bad}", "come out worse than bad"),
    ("{no_worse_than: good}", "come out no worse than good"),
])
def test_a_prediction_with_a_direction_word_gives_a_sentence(when, base):
    body = GATE.replace("{passes: gate}", when)
    for acc in (0.7, 0.99):
        ev = evaluate(inv(body, [run("1", "fix", acc)]))
        for e in ev.evidence:
            assert "as stated" not in e.reason and "as stated" not in (e.summary or "")
            if e.verdict in ("rules_out", "confirms"):
                assert f"predicted to {base} if this were the cause" in e.reason


def test_a_recipe_with_no_change_reads_its_value_alone(cli, tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "t.yaml").write_text(textwrap.dedent("""\
        schema_version: 1
        investigation: {id: t, repo: o/r, pr: 1, title: T, metric: acc}
        hypotheses: [{id: g, title: G}]
        recipes:
          - {id: fix, base: main, tests: [g]}
        """))
    r = cli("add-run", "--pr", "1", "--run-id", "1", "--config", "fix", "--metric", "acc=0.954", "--status", "passed")
    assert r.code == 0, r.err
    for fmt in ("text", "json", "md"):
        out = cli("report", "--pr", "1", "--format", fmt).out
        assert "0.954 ()" not in out, fmt
