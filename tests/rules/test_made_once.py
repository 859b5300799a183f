"""What an evaluation asks for many times of definitions that do not change is made once:
a recipe's prediction as a condition (the evidence, the rival table and the suggestions
each ask for every one) and the rules by the configs they read (each suggestion asked)."""

from __future__ import annotations

from dataclasses import replace

from tests.support.wideinv import wide_investigation
from triage.rules.engine import evidence
from triage.rules.engine.evaluate import evaluate
from triage.rules.next import suggest


def test_a_predictions_condition_is_made_once_per_prediction_and_recipe(monkeypatch) -> None:
    inv, _ = wide_investigation(2, 150)
    made: list[tuple] = []
    work = evidence._condition_of
    monkeypatch.setattr(evidence, "_condition_of",
                        lambda pred, recipe: made.append((pred, recipe)) or work(pred, recipe))
    monkeypatch.setattr(evidence, "_CONDITIONS", {})
    recipe = next(r for r in inv.recipes if r.predicts)
    pred = next(iter(recipe.predicts.values()))
    first = evidence._prediction_condition(pred, recipe)
    assert evidence._prediction_condition(pred, recipe) is first and len(made) == 1
    # the same prediction of another recipe object (a rule file loaded again) is its own
    other = recipe.model_copy()
    again = evidence._prediction_condition(pred, other)
    assert len(made) == 2 and again is not first
    assert again[0].model_dump() == first[0].model_dump() and again[1:] == first[1:]


def test_an_evaluation_makes_each_condition_and_the_rules_by_config_once(monkeypatch) -> None:
    inv, records = wide_investigation(4, 150)  # a shape with several recipes suggested
    conditions: list[tuple] = []
    indexes: list[int] = []
    work, index = evidence._condition_of, suggest.rules_by_config
    monkeypatch.setattr(evidence, "_CONDITIONS", {})
    monkeypatch.setattr(evidence, "_condition_of",
                        lambda pred, recipe: conditions.append((id(pred), id(recipe))) or work(pred, recipe))
    monkeypatch.setattr(suggest, "rules_by_config", lambda rules: indexes.append(1) or index(rules))
    ev = evaluate(replace(inv, runs=list(records)))
    assert sum(s.kind == "recipe" for s in ev.suggestions) > 1
    assert len(conditions) == len(set(conditions)) > 0
    assert len(indexes) == 1
