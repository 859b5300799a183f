"""Rules, recipe predictions and manual evidence turned into evidence items and statuses."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Optional

from triage.rules.decisions.conditions import compare_pooled, compares_only, statuses
from triage.rules.engine import pools
from triage.rules.engine.context import Context
from triage.rules.engine.facts import facts
from triage.rules.engine.keys import Keys
from triage.rules.engine.records import (
    EvidenceItem,
    Result,
    V,
)
from triage.rules.language.schema import (
    Condition,
    PredictionSpec,
    RecipeSpec,
    RuleSpec,
    Selector,
)
from triage.rules.decisions.stats import fmt
from triage.rules.engine.subjects import evaluate as evaluate_condition
from triage.rules.engine.summary import group as group_runs
from triage.rules.language.words import Phrase, clause, phrase

# --------------------------------------------------------------------------
# Rules, predictions, manual evidence


def _render_because(text: str, ctx: Context, res: Result) -> str:
    if "{{" not in text and "{%" not in text:
        return text
    from triage.sandbox import render_string

    refs = {name: (fmt(m.value) if m else "?") for name, (m, _) in ctx.refs.items()}
    values = {
        "value": fmt(res.measure.value) if res.measure else "?",
        "ref": refs,
        "gate": fmt(ctx.spec.gate) if ctx.spec.gate is not None else "?",
        "runs": res.runs,
    }
    return render_string(text, values)


def _short(summary: Optional[str], res: Result) -> str:
    """The compact form: the rule's words, then the key numbers."""
    numbers = _join_short(res.short)
    if summary and numbers:
        return f"{summary}: {numbers}"
    return summary or numbers


def _join_short(items: list[str]) -> str:
    """Join compact comparisons, naming a run label once: 'a 0.9 ≈ x; ≠ y'."""
    out: list[str] = []
    last_head = None
    for item in items:
        head, _, rest = item.partition(" ")
        value, _, tail = rest.partition(" ")
        key = (head, value)
        if key == last_head and tail:
            out.append(tail)
        else:
            out.append(item)
        last_head = key
    return "; ".join(out)


def _reason(summary: Optional[str], res: Result) -> str:
    numbers = "; ".join(dict.fromkeys(res.parts))
    if res.needed:
        numbers += ("; " if numbers else "") + "would be decided by " + " and ".join(res.needed)
    if summary and numbers:
        return f"{summary} — {numbers}"
    return summary or numbers


def _invalid_items(hyp: str, rule: str, res: Result, ctx: Context) -> list[EvidenceItem]:
    out = []
    for (config, why), keys in group_runs(res.invalid).items():  # one item for runs that say the same thing
        many = f"{len(keys):,} runs of " if len(keys) > 1 else ""
        text = f"{many}{ctx.short(config)} {why}: never rules anything out"
        out.append(EvidenceItem(hyp, rule, "inconclusive", text, tuple(keys), ("invalid-run",), summary=text))
    return out


def _valid(cls: Any, **values: Any) -> Any:
    """``cls(**values)`` of values known to be valid (a recipe's, validated with it), not
    validated again: a command that builds no validator saves building Condition's."""
    return cls.model_construct(**values)


def _prediction_condition(pred: Any, recipe: RecipeSpec) -> tuple[Condition, bool, Phrase]:
    """(condition, confirms, what it expects in words) for a recipe's prediction.

    A prediction that comes true confirms when the hypothesis being false
    would have predicted otherwise: a recovery by default, any prediction
    written ``{when: ..., confirms: true}``; any other only supports.

    Made once per prediction and recipe (the evidence, the rival table and the suggestions
    each ask for every one: a wide investigation's 342, four times an evaluation)."""
    key = (id(pred), id(recipe))
    held = _CONDITIONS.get(key)
    if held is not None and held[0] is pred and held[1] is recipe:  # (held: their ids are theirs still)
        return held[2]
    made = _condition_of(pred, recipe)
    if len(_CONDITIONS) >= _CONDITIONS_MOST:
        _CONDITIONS.clear()
    _CONDITIONS[key] = (pred, recipe, made)
    return made


#: (prediction, recipe, :func:`_prediction_condition`'s answer) by their ids, at most :data:`_CONDITIONS_MOST`.
_CONDITIONS: dict[tuple[int, int], tuple[Any, RecipeSpec, tuple[Condition, bool, Phrase]]] = {}
_CONDITIONS_MOST = 4096


def _condition_of(pred: Any, recipe: RecipeSpec) -> tuple[Condition, bool, Phrase]:
    """:func:`_prediction_condition`, worked out."""
    if isinstance(pred, PredictionSpec):
        cond, recovery, desc = _condition_of(pred.when, recipe)
        return cond, recovery if pred.confirms is None else pred.confirms, desc
    if pred == "recovers":
        return _valid(Condition, recovers=True), True, clause("recover", "to good")
    if pred == "same_as_bad":
        return _valid(Condition, same_as="bad"), False, clause("stay", "≈ bad")
    if pred == "unchanged":
        base = recipe.base or ""
        if recipe.base_run:  # the run it is compared with, not all of the base config's runs
            one = "/" in recipe.base_run or not base
            sel = _valid(Selector, run=recipe.base_run) if one else _valid(Selector, config=base, run=recipe.base_run)
            return _valid(Condition, same_as=sel), False, clause("stay", f"≈ its base run {recipe.base_run}")
        return _valid(Condition, same_as=_valid(Selector, config=base)), False, clause("stay", f"≈ its base {base}")
    assert isinstance(pred, Condition)
    return pred, bool(pred.recovers), phrase(pred, recipe.id)


def _runs(res: Result) -> Any:
    """An item's runs: a result's, kept as :class:`Keys` when they name pools (kept whole)."""
    return res.runs if isinstance(res.runs, Keys) else tuple(res.runs)


def _rule_evidence(rule: RuleSpec, ctx: Context) -> list[EvidenceItem]:
    res = _pooled_rule(rule.when, ctx)
    if res is None:
        res = evaluate_condition(rule.when, ctx, None)
    items = _invalid_items(rule.hypothesis, rule.id, res, ctx)
    if res.value is V.TRUE:
        summary = _render_because(rule.because, ctx, res) if rule.because else None
        items.insert(0, EvidenceItem(rule.hypothesis, rule.id, rule.then, _reason(summary, res), _runs(res),
                                     summary=_short(summary, res)))
    elif res.value is V.UNKNOWN:
        items.insert(0, EvidenceItem(rule.hypothesis, rule.id, "inconclusive", _reason("can't tell yet", res),
                                     _runs(res), summary=_short("can't tell yet", res), needed=tuple(res.needed)))
    elif res.value is V.NODATA and (rule.when.config is not None or rule.when.run is not None):
        wanted = None if rule.when.status is None else statuses(rule.when.status)
        runs = [r for r in ctx.select(rule.when) if wanted is None or r.status in wanted]
        items[:0] = _no_number(rule.hypothesis, rule.id, rule.when, runs, ctx)
    return items


def _pooled_rule(cond: Condition, ctx: Context) -> Optional[Result]:
    """A rule that only compares the runs of the configs it names: from their pools and facts, as
    a prediction is.  Worked out again (pieces of an earlier evaluation at hand), it reads none of
    their runs (a rule over a recipe and an ad hoc config, worked out again because its base
    changed); a whole evaluation pools them for the next.  None for any other rule, or in an
    evaluation that keeps no pieces."""
    configs = [cond.config] if isinstance(cond.config, str) else list(cond.config or ())
    if not (configs and len(set(configs)) == len(configs) and compares_only(cond, ctx, configs=True)
            and pools.kept_here(ctx, cond.metric or ctx.spec.metric)):
        return None
    invalid = [(key, config, why) for config in configs for _, key, why in facts(config, ctx).invalid]
    return compare_pooled(cond, ctx, configs, invalid)


def _prediction_evidence(recipe: RecipeSpec, hyp: str, pred: Any, ctx: Context) -> list[EvidenceItem]:
    cond, recovery, desc = _prediction_condition(pred, recipe)
    # A prediction that only compares takes its recipe's runs pooled (a kept piece) and its
    # facts: worked out again (pieces of an earlier evaluation at hand), it reads none of its
    # runs.  A whole evaluation that keeps its pieces pools them too, from the runs it reads
    # anyway, so that the first evaluation after it (an add-run after an import) does not
    # read each recipe's runs to pool them.
    if compares_only(cond, ctx) and (ctx.memo.stored or pools.kept_here(ctx, cond.metric or ctx.spec.metric)):
        invalid = [(key, recipe.id, why) for _, key, why in facts(recipe.id, ctx).invalid]
        res = compare_pooled(cond, ctx, [recipe.id], invalid)
    else:
        res = evaluate_condition(cond, ctx, list(ctx.by_config.get(recipe.id, [])))
    rule = f"predicts:{recipe.id}"
    items = _invalid_items(hyp, rule, res, ctx)
    predicted = f"predicted to {desc.base} if this were the cause"
    said = f"{ctx.short(recipe.id)} was {predicted}"
    numbers = _join_short(res.short)
    if res.value is V.TRUE:
        verdict = "confirms" if recovery else "supports"
        items.insert(0, EvidenceItem(hyp, rule, verdict, _reason(f"{said}, and it did", res), _runs(res),
                                     summary=f"{numbers} (as predicted if this were the cause)"))
    elif res.value is V.FALSE:
        items.insert(0, EvidenceItem(hyp, rule, "rules_out", _reason(f"{said}; it did not", res), _runs(res),
                                     summary=f"{numbers}: {predicted}"))
    elif res.value is V.UNKNOWN:
        items.insert(0, EvidenceItem(hyp, rule, "inconclusive", _reason(f"{said}; can't tell yet", res),
                                     _runs(res), summary=f"{numbers}; {predicted}",
                                     needed=tuple(res.needed)))
    elif res.value is V.NODATA:
        items[:0] = _no_number(hyp, rule, cond, ctx.by_config.get(recipe.id, []), ctx)
    return items


def _no_number(hyp: str, rule: str, cond: Condition, runs: Any, ctx: Context) -> list[EvidenceItem]:
    """A valid run without the number a prediction compares: inconclusive, never silently nothing."""
    metric = cond.metric or ctx.spec.metric
    bare = [r for r in runs if ctx.valid(r) and metric not in r.metrics]
    if not bare or not cond.comparisons():
        return []
    who = ", ".join(f"{r.run_id} ({r.status})" for r in bare)
    text = f"{ctx.short(bare[0].config)} {who} has no {metric} value: no number, so it decides nothing"
    return [EvidenceItem(hyp, rule, "inconclusive", text + "; record its value or re-run it",
                         tuple(r.key for r in bare), summary=text, needed=(f"a {metric} value",))]


def _flagged(e: EvidenceItem, flag: str) -> EvidenceItem:
    if flag in e.flags:
        return e
    flagged = replace(e, flags=e.flags + (flag,))
    if "key" in e.__dict__:  # the key names no flag: worked out once
        flagged.__dict__["key"] = e.__dict__["key"]
    return flagged


def derive_status(items: Iterable[EvidenceItem]) -> str:
    """open | ruled_out | confirmed | inconclusive | conflicting."""
    verdicts = {e.verdict for e in items if e.counts}
    if "rules_out" in verdicts and "confirms" in verdicts:
        return "conflicting"
    if "rules_out" in verdicts:
        return "ruled_out"
    if "confirms" in verdicts:
        return "confirmed"
    if "inconclusive" in verdicts:
        return "inconclusive"
    return "open"
