"""Issue 24, item 10: suggestions are never empty while a run could still decide something.

A comparison written with any condition word (a direction word, a bound that
names a reference, a run by its id) asks for the run it compares with when
that run has no value; and, over random small investigations, a hypothesis
still open or can't tell whose recipe, reference or base run could decide it
has that run among the suggestions."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.support.words import inv, run
from triage.rules.engine.evaluate import evaluate
from triage.rules.language.schema import Condition
from triage.rules.language.words import targets

PREDICTS = """
hypotheses: [{id: m, title: M}]
recipes:
  - id: fix
    base: main
    tests: [m]
    predicts:
      m: {when: WHEN, confirms: true}
"""


@pytest.mark.parametrize("when, asked", [
    ("{same_as: {config: reference}}", "reference"),  # as it was
    ("{worse_than: {config: reference}}", "reference"),
    ("{better_than: {config: reference}}", "reference"),
    ("{no_worse_than: {config: reference}}", "reference"),
    ("{differs_from: ref}", "reference"),
    ("{better_than: ref}", "reference"),
    ("{passes: ref}", "reference"),
    ("{at_least: ref}", "reference"),
    ("{any: [{worse_than: ref}, {fails: gate}]}", "reference"),
    ("{same_as: {run: '77'}}", "77"),
    ("{no_worse_than: old}", "77"),
])
def test_a_comparison_asks_for_the_run_it_compares_with(when, asked):
    ev = evaluate(inv(PREDICTS.replace("WHEN", when), [run("1", "fix", 0.93)]))
    assert ev.statuses["m"] == "open"
    assert [s.recipe for s in ev.suggestions] == [asked]
    [s] = ev.suggestions
    assert "`m`" in s.why and s.kind == "base"


def test_a_run_named_by_its_id_is_asked_to_be_recorded_not_run_again():
    ev = evaluate(inv(PREDICTS.replace("WHEN", "{no_worse_than: old}"), [run("1", "fix", 0.93)]))
    [s] = ev.suggestions
    assert s.why.startswith("record run `77`") and s.command is None


def test_once_the_run_compared_with_has_a_value_nothing_waits():
    runs = [run("1", "fix", 0.93), run("2", "reference", 0.5)]
    ev = evaluate(inv(PREDICTS.replace("WHEN", "{worse_than: {config: reference}}"), runs))
    assert ev.statuses["m"] != "open" or ev.suggestions == []
    assert "reference" not in [s.recipe for s in ev.suggestions]


def test_a_rule_with_a_direction_word_asks_for_the_run_it_compares_with():
    body = """
hypotheses: [{id: m, title: M}]
rules:
  - {id: r, hypothesis: m, when: {config: fix, worse_than: {config: reference}}, then: confirmed}
"""
    ev = evaluate(inv(body, [run("1", "fix", 0.93)]))
    assert [s.recipe for s in ev.suggestions] == ["reference"]


# ------------------------------------------------------------------ the property


CONFIGS = ["main", "reference", "other"]
WORDS = ["recovers", "same_as_bad", "unchanged", "same_as", "differs_from", "better_than", "worse_than",
         "no_worse_than", "passes", "fails", "at_least", "below"]
SIDES = ["good", "bad", "ref", "old", "gate", {"config": "reference"}, {"config": "other"}, {"config": "main"},
         {"run": "77"}]


@st.composite
def investigations(draw):
    n_h = draw(st.integers(1, 3))
    hyps = [f"h{i}" for i in range(n_h)]
    recipes = []
    for i in range(draw(st.integers(1, 3))):
        predicts = {}
        for h in draw(st.lists(st.sampled_from(hyps), min_size=1, max_size=n_h, unique=True)):
            word = draw(st.sampled_from(WORDS))
            if word in ("recovers", "same_as_bad", "unchanged"):
                when = word
            else:
                side = draw(st.sampled_from(SIDES))
                if word in ("same_as", "differs_from", "better_than", "worse_than", "no_worse_than"):
                    assume(side != "gate")
                elif isinstance(side, dict):  # passes/fails/at_least/below: a number, gate or a reference's name
                    side = "gate"
                when = {word: side}
            predicts[h] = {"when": when, "confirms": draw(st.booleans())}
        recipes.append({"id": f"r{i}", "base": "main", "tests": list(predicts), "predicts": predicts})
    configs = [r["id"] for r in recipes] + CONFIGS
    values = st.sampled_from([0.5, 0.8, 0.85, 0.9, 0.95, 0.99])
    runs = [run(f"{r['id']}-1", r["id"], draw(values)) for r in recipes if draw(st.booleans())]  # most are run
    for j, config in enumerate(draw(st.lists(st.sampled_from(configs), max_size=6))):
        acc = draw(st.one_of(st.none(), values))
        status = draw(st.sampled_from(["passed", "failed", "crashed"]))
        runs.append(run(str(100 + j), config, acc, status))
    if draw(st.booleans()):
        runs.append(run("77", "main", draw(st.sampled_from([None, 0.8, 0.95]))))
    body = {"hypotheses": [{"id": h, "title": h} for h in hyps], "recipes": recipes}
    return inv(yaml.safe_dump(body), runs), recipes


def _has_value(runs, config=None, run_id=None) -> bool:
    return any(r.status in ("passed", "failed") and "acc" in r.metrics
               and (config is None or r.config == config) and (run_id is None or r.run_id == run_id) for r in runs)


def _waits_for(when, recipe_id: str, runs) -> list[str]:
    """The runs a prediction compares with that have no value (what a suggestion must name)."""
    if when == "recovers" or when == "same_as_bad":
        return []  # fixed references
    if when == "unchanged":
        return [] if _has_value(runs, "main") else ["main"]
    refs = {"ref": ("config", "reference"), "old": ("run", "77")}
    out = []
    for kind, name in targets(Condition.model_validate(when)):
        kind, name = refs.get(name, (kind, name)) if kind == "ref" else (kind, name)
        if kind == "config" and name != recipe_id and not _has_value(runs, name):
            out.append(name)
        if kind == "run" and not _has_value(runs, run_id=name):
            out.append(name)
    return out


@settings(max_examples=150, deadline=None)
@given(case=investigations())
def test_suggestions_name_every_run_that_could_still_decide(case):
    bundle, recipes = case
    ev = evaluate(bundle)
    asked = {s.recipe for s in ev.suggestions}
    undecided = {h for h, s in ev.statuses.items() if s in ("open", "inconclusive")}
    assume(undecided)
    for recipe in recipes:
        mine = [r for r in bundle.runs if r.config == recipe["id"]]
        valid = [r for r in mine if r.status in ("passed", "failed")]
        for h, pred in recipe["predicts"].items():
            if h not in undecided:
                continue
            if not valid or not _has_value(valid):
                assert recipe["id"] in asked, (h, recipe, ev.suggestions)
                continue
            waits = _waits_for(pred["when"], recipe["id"], bundle.runs)
            for name in waits:
                assert name in asked, (h, recipe, name, ev.suggestions)
            items = [e for e in ev.evidence if e.hypothesis == h and e.rule == f"predicts:{recipe['id']}"
                     and "invalid-run" not in e.flags]
            if not waits and items and all(e.verdict == "inconclusive" for e in items):
                assert recipe["id"] in asked, (h, recipe, items, ev.suggestions)
