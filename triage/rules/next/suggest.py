"""Where each recipe stands, and what to run next.

Every candidate (a recipe not yet run validly, a bisect's next point, a run
that a prediction or rule is waiting for, a re-run of a can't-tell
comparison) has outcomes, each with a probability and what it would decide.
Candidates are ranked by the expected decisions per unit of cost:

    score = chance · Σ_outcomes p(o) · value(o) / cost
    value(o) = Σ w(h) over the hypotheses o confirms or rules out
             + ½ Σ w(h) over those a rule may decide in o
             + log2(R) for a bisect step (R: the points the first bad can still be;
               at least 2 while its next step checks an end: whether the range holds)

with w(h) the hypothesis's ``prior`` (default 1), chance = 1/(1 + k) after
k attempts in a row that gave no result (a crash, a known failure), and cost
the recipe's, times the runs that would decide a can't-tell one
(:func:`runs_worth`).  The outcomes come from a function
(:func:`prediction_outcomes` by default), so a richer model of what a result
decides can take its place.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

from triage.rules.decisions.conditions import FULL_BENCHMARK, OTHER_SIDE
from triage.rules.engine.context import Context, num
from triage.rules.next.discriminate import rules_by_config, with_rules
from triage.rules.engine.facts import facts
from triage.rules.engine.keys import configs_of, each
from triage.rules.engine.evidence import _prediction_condition
from triage.rules.engine.records import (
    BisectState,
    Confounds,
    EvidenceItem,
    Investigation,
    RecipeState,
    RunRec,
    Suggestion,
)
from triage.rules.language.schema import BisectSpec, Condition, RecipeSpec, RuleSpec
from triage.rules.language.words import Phrase, targets

UNDECIDED = ("open", "inconclusive", "conflicting")
DECISIVE = ("confirmed", "ruled out")
WORDS = {"rules_out": "ruled out", "confirms": "confirmed", "supports": "supported", "inconclusive": "inconclusive"}


# --------------------------------------------------------------------------
# Where each recipe stands


def _blocker(run: RunRec, ctx: Context) -> str:
    """A known failure that a plain re-run will not fix (not infra), with its remedy."""
    sig = ctx.inv.signatures.get(run.signature) if run.signature else None
    if sig is None or sig.cls == "infra":
        return ""
    return f"{sig.id} ({sig.cls})" + (f": {sig.remedy}" if sig.remedy else "")


def _has_data(ctx: Context, config: str, metric: str) -> bool:
    return metric in facts(config, ctx).valid_metrics


def _missing(cond: Condition, ctx: Context) -> list[tuple[str, str, str]]:
    """The runs a comparison waits for: (kind, name, what it is) for each target with no
    value yet; kind "config" (a config to run) or "run" (one run, named by its id, to record)."""
    metric = cond.metric or ctx.spec.metric
    out = []
    for kind, name in targets(cond):
        if kind == "ref":
            ref = ctx.spec.references.get(name)
            if ref is None or ref.value is not None or ctx.refs.get(name, (None, ""))[0] is not None:
                continue
            if ref.config is not None:
                out.append(("config", ref.config, f"reference `{name}`"))
            elif ref.run is not None:
                out.append(("run", ref.run, f"reference `{name}`"))
        elif kind == "run":
            if not any(ctx.valid(r) and metric in r.metrics for r in ctx.named(name)):
                out.append(("run", name, "compared with"))
        elif not _has_data(ctx, name, metric):
            out.append(("config", name, "compared with"))
    return list(dict.fromkeys(out))


def _rule_waits(cond: Condition, ctx: Context) -> list[tuple[str, str, str]]:
    """The runs a rule's comparisons wait for, where the runs it selects have data."""
    if cond.config is not None or cond.run is not None:
        metric = cond.metric or ctx.spec.metric
        if cond.run is None and not cond.provenance:  # a config's runs: its facts say
            configs = [cond.config] if isinstance(cond.config, str) else list(cond.config or [])
            has = any(_has_data(ctx, c, metric) for c in configs)
            return _missing(cond, ctx) if has else []
        # what it waits for first: mostly nothing, and then its runs need not be read
        missing = _missing(cond, ctx)
        if missing and any(ctx.valid(r) and metric in r.metrics for r in ctx.select(cond)):
            return missing
        return []
    return list(dict.fromkeys(w for sub in cond.parts() for w in _rule_waits(sub, ctx)))


def _prediction_states(recipe: RecipeSpec, items: Sequence[EvidenceItem], valid: Sequence[str],
                       ctx: Context) -> list[tuple[str, str, tuple[str, ...]]]:
    """(hypothesis, decided / can't tell / waiting for X / no data, the configs it waits for) per prediction.

    ``items``: the evidence of this recipe's predictions."""
    out = []
    for h, pred in recipe.predicts.items():
        mine = [e for e in items if e.hypothesis == h and "invalid-run" not in e.flags]
        if any(e.verdict != "inconclusive" for e in mine):
            out.append((h, "decided", ()))
            continue
        # can't tell may be a run without the number while what it compares with has none either
        cond, _, _ = _prediction_condition(pred, recipe)
        recorded = facts(recipe.id, ctx).valid_metrics  # the metrics of its valid runs
        has_own = bool(valid) and (ctx.spec.metric in recorded or cond.metric in recorded)
        waits = tuple(c for _, c, _ in _missing(cond, ctx)) if has_own else ()
        if waits:
            out.append((h, f"waiting for {', '.join(waits)}", waits))
        else:
            out.append((h, "can't tell" if mine else "no data", ()))
    return out


def recipe_states(inv: Investigation, ctx: Context, items: Sequence[EvidenceItem], statuses: Mapping[str, str],
                  confounds: Confounds, shown: Mapping[str, tuple]) -> list[RecipeState]:
    """Never run, no valid run (an undeclared outcome, excluded, known failure),
    can't tell (a valid run whose reading is within noise), waiting (a
    prediction of an open hypothesis has no data: its base or a reference has
    no valid run), or run; and per prediction whether it was decided.  ``shown``:
    each recipe's first runs as a view shows them (kept with its state)."""
    undecided = {h for h, s in statuses.items() if s in UNDECIDED}
    by_rule: dict[str, list[EvidenceItem]] = {}
    for e in items:
        by_rule.setdefault(e.rule, []).append(e)
    # recipe -> the keys its runs are confounded in
    confounded_by = confounds.recipes()
    # the items that can make a recipe "can't tell", by the configs their runs can be of
    open_items: dict[str, list[EvidenceItem]] = {}
    for e in items:
        if e.counts and e.verdict == "inconclusive" and "invalid-run" not in e.flags and e.hypothesis in undecided:
            for config in configs_of(e.runs):
                open_items.setdefault(config, []).append(e)
    out = []
    for recipe in inv.recipes:
        own = facts(recipe.id, ctx)
        keys, valid, seen = own.keys, own.valid, shown.get(recipe.id, ())
        confounded = tuple(sorted(confounded_by.get(recipe.id, ())))
        if not keys:
            out.append(RecipeState(recipe.id, "never-run"))
            continue
        if not valid:
            out.append(RecipeState(recipe.id, "no-valid-run", keys, (), own.newest_why, blocked=own.newest_blocker,
                                   shown=seen))
            continue
        preds = _prediction_states(recipe, by_rule.get(f"predicts:{recipe.id}", []), valid, ctx)
        per = tuple((h, word) for h, word, _ in preds)
        waiting = tuple(dict.fromkeys(c for h, _, waits in preds if h in undecided for c in waits))
        cant, valid_set = [], None  # its valid runs as a set, made once if an item needs it
        for e in open_items.get(recipe.id, ()):
            valid_set = set(valid) if valid_set is None else valid_set
            if not valid_set.isdisjoint(each(e.runs)):
                cant.append(e)
        if cant:
            needed = tuple(dict.fromkeys(n for e in cant for n in e.needed))
            out.append(RecipeState(recipe.id, "cant-tell", keys, valid, cant[0].summary, needed,
                                   confounded=confounded, predictions=per, waiting=waiting,
                                   shown=seen))
        elif waiting:
            why = "waiting for " + ", ".join(waiting)
            out.append(RecipeState(recipe.id, "waiting", keys, valid, why, confounded=confounded, predictions=per,
                                   waiting=waiting, shown=seen))
        else:
            out.append(RecipeState(recipe.id, "run", keys, valid, confounded=confounded, predictions=per,
                                   shown=seen))
    return out


# --------------------------------------------------------------------------
# Candidates and their outcomes


@dataclass(frozen=True)
class Outcome:
    """One possible result of a candidate and what it would decide."""

    label: str  # "recovers to good", "stays ≈ bad", "good", …
    p: float  # its probability
    decides: tuple[tuple[str, str], ...] = ()  # (hypothesis, "confirmed" | "ruled out" | "supported")
    maybe: tuple[str, ...] = ()  # hypotheses a rule or manual evidence may decide (counted ½)
    bits: float = 0.0  # for a bisect step: what it tells of the range
    says: str = ""  # the outcome in words, when it decides no hypothesis


@dataclass(frozen=True)
class Candidate:
    """Something to run: a recipe, a bisect's next point, or a missing base/reference/comparison run."""

    kind: str  # recipe | bisect | base | record (one run named by its id)
    id: str  # the recipe id, the bisect id, or the config to run
    hypotheses: tuple[str, ...]  # the undecided hypotheses it can decide
    cost: float = 1.0
    attempts: int = 0  # runs in a row that gave no result
    recipe: Optional[RecipeSpec] = None
    bisect: Optional[BisectState] = None
    bisect_spec: Optional[BisectSpec] = None
    # for kind "base": what waits for it: (recipe, hypotheses) and (rule, hypothesis)
    waiting: tuple[tuple[Any, tuple[str, ...]], ...] = ()
    whats: tuple[str, ...] = ()  # for kind "base": "base of `recipe`", "reference `bad`", …


OutcomeFn = Callable[[Candidate, Context], Sequence[Outcome]]


def _recipe_outcomes(recipe: RecipeSpec, hyps: Sequence[str]) -> list[Outcome]:
    """A recipe's results, from its predictions: each predicted reading, and otherwise."""
    groups: dict[Phrase, list[tuple[str, bool]]] = {}
    for h in hyps:
        pred = recipe.predicts.get(h)
        if pred is not None:
            _, recovery, desc = _prediction_condition(pred, recipe)
            groups.setdefault(desc, []).append((h, recovery))
    predicted = [h for hs in groups.values() for h, _ in hs]
    unread = tuple(h for h in hyps if h not in predicted)
    labels = [(desc.does, hs) for desc, hs in groups.items()]
    if len(groups) == 1:
        labels.append(("otherwise", []))
    if not labels:
        labels = [("its result", [])]
    out = []
    for label, hs in labels:
        mine = {h for h, _ in hs}
        decides = tuple((h, "confirmed" if rec else "supported") for h, rec in hs)
        decides += tuple((h, "ruled out") for h in predicted if h not in mine)
        out.append(Outcome(label, 1 / len(labels), decides, unread))
    return out


def _rule_outcomes(rule: RuleSpec) -> list[Outcome]:
    word = WORDS.get(rule.then, rule.then)
    return [Outcome(f"rule {rule.id} holds", 0.5, ((rule.hypothesis, word),)), Outcome("otherwise", 0.5)]


def _bisect_outcomes(b: BisectState, spec: Optional[BisectSpec], hyps: Sequence[str]) -> list[Outcome]:
    labels = [p.label for p in b.points]
    lo = labels.index(b.last_good) if b.last_good in labels else 0
    hi = labels.index(b.first_bad) if b.first_bad in labels else len(labels) - 1
    points = hi - lo
    if not b.ends_ok and b.next is not None:  # its check of an end tells whether the range holds
        points = max(points, 2)
    bits = math.log2(points) if points > 1 else 0.0
    found = spec.decides.get("first_bad_found", {}) if spec is not None else {}
    decides = tuple((h, WORDS.get(found[h], found[h])) for h in hyps)
    return [Outcome("good", 0.5, decides, bits=bits), Outcome("bad", 0.5, decides, bits=bits)]


def prediction_outcomes(c: Candidate, ctx: Context) -> list[Outcome]:
    """The outcomes of a candidate from the recipes' predictions, the rules
    waiting for a run, and a bisect's `decides:` and range (each result of a
    candidate equally likely)."""
    if c.kind == "bisect" and c.bisect is not None:
        return _bisect_outcomes(c.bisect, c.bisect_spec, c.hypotheses)
    out: list[Outcome] = []
    if c.kind == "recipe" and c.recipe is not None:
        out += _recipe_outcomes(c.recipe, c.hypotheses)
    for what, hyps in c.waiting:
        out += _recipe_outcomes(what, hyps) if isinstance(what, RecipeSpec) else _rule_outcomes(what)
    return out


def _value(o: Outcome, w: Mapping[str, float]) -> float:
    decided = sum(w.get(h, 1.0) for h, word in o.decides if word in DECISIVE)
    return decided + 0.5 * sum(w.get(h, 1.0) for h in o.maybe) + o.bits


def score(c: Candidate, outcomes: Sequence[Outcome], w: Mapping[str, float]) -> float:
    """Expected decisions per unit of cost (see the module docstring)."""
    expected = sum(o.p * _value(o, w) for o in outcomes)
    # nine significant digits: sums in another order are equal, and a cost in the millions
    # (a can't-tell that needs millions of repeats) still ranks below one in the thousands
    return float(f"{expected / (1 + c.attempts) / (c.cost or 1.0):.9g}")


# --------------------------------------------------------------------------
# Ranking


def _describe(outcomes: Sequence[Outcome]) -> tuple[str, ...]:
    lines = []
    for o in outcomes:
        if o.decides:
            lines.append(f"{o.label} ⇒ " + ", ".join(f"{h} {word}" for h, word in o.decides))
        elif o.says:
            lines.append(f"{o.label} ⇒ {o.says}")
    unread = list(dict.fromkeys(h for o in outcomes for h in o.maybe))
    if unread:
        lines.append(f"no prediction for {', '.join(unread)}: a rule or manual evidence decides it")
    return tuple(lines)


class _Wants(NamedTuple):
    """What a can't-tell recipe's comparisons ask for (:func:`_wanted`)."""

    beyond: list[str]  # advice written already: repeats of the full benchmark (a metric's n_max)
    n: Optional[int]  # the samples per run that would decide them (None: not asked)
    k: Optional[int]  # the repeats that would (None: not asked)
    full: Optional[tuple[int, int]]  # (repeats of the full benchmark, its size) that would
    have: Sequence[int]  # the sample counts its valid runs had
    count: int  # how many valid runs it has
    others: dict[str, tuple[int, int]]  # the other sides with fewer runs than theirs need: name -> (need, runs)


def _wanted(state: RecipeState, ctx: Context) -> _Wants:
    """What a can't-tell recipe's comparisons ask for; several comparisons may each name a
    number (vs good and vs bad): the largest decides them all."""
    own = facts(state.recipe, ctx)
    beyond = [need for need in state.needed if "full benchmark" in need]
    needs = [need for need in state.needed if need not in beyond]
    ns = [int(x.replace(",", "")) for need in needs for x in re.findall(r"n ≥ ([\d,]+)", need)]
    ks = [int(x.replace(",", "")) for need in needs for x in re.findall(r"≥ ([\d,]+) repeats", need)]
    full = [(int(k.replace(",", "")), int(n.replace(",", ""))) for need in beyond
            for k, n in re.findall(FULL_BENCHMARK, need)]
    others: dict[str, tuple[int, int]] = {}
    for need in needs:
        for k, name, runs, subject in re.findall(OTHER_SIDE, need):
            name += f" for {subject}" if subject else ""
            others[name] = max(others.get(name, (0, 0)), (int(k.replace(",", "")), int(runs.replace(",", ""))))
    return _Wants(beyond, max(ns, default=None), max(ks, default=None), max(full, default=None), own.valid_ns,
                  len(own.valid), others)


def runs_worth(state: RecipeState, ctx: Context) -> float:
    """What deciding a can't-tell recipe costs, in runs like those it has: the repeats it
    still needs (one at least).  When its comparisons ask for more samples per run, or for
    repeats of the full benchmark, each of those runs counts as the samples it needs over
    the most its runs had."""
    w = _wanted(state, ctx)
    most = max(w.have) if w.have else None
    worth = max(1.0, w.n / most) if w.n is not None and most else 1.0
    if w.k is not None:  # its own repeats, and those of the other sides that have fewer
        worth *= max(1, max(0, w.k - w.count) + sum(k - runs for k, runs in w.others.values()))
    if w.full is not None:
        repeats, size = w.full
        worth = max(worth, max(1, repeats - w.count) * (max(1.0, size / most) if most else 1.0))
    return worth


def _sample_advice(state: RecipeState, ctx: Context) -> str:
    """How many more samples or repeats would decide a can't-tell result."""
    w = _wanted(state, ctx)
    bits = w.beyond[:1]
    if w.n is not None:
        had = f" (it had n={', '.join(str(x) for x in w.have)})" if w.have else ""
        bits.append(f"re-run with n ≥ {w.n:,} samples per run{had}")
    if w.k is not None:
        # its own repeats (unless it has enough and only the other sides are short), then each
        # other side's, each with the count its comparison needs
        runs = [("it", max(1, w.k - w.count), w.k, w.count, "")] if w.count < w.k or not w.others else []
        runs += [(name, k - had, k, had, " per side") for name, (k, had) in w.others.items()]
        bits.append("run " + ", and ".join(f"{who} {more:,} more time{'s' if more != 1 else ''} "
                                           f"(≥ {k:,} repeats{each}; it has {had:,})"
                                           for who, more, k, had, each in runs))
    return "; ".join(bits) or "; ".join(state.needed)


def fill_command(template: Optional[str], ids: Sequence[str]) -> Optional[str]:
    """A recipe's `run:` for some recipes: `{ids}` joined by commas, else one line each."""
    if not template:
        return None
    if "{ids}" in template:
        return template.replace("{ids}", ",".join(ids))
    return "\n".join(template.replace("{id}", i) for i in ids)


def candidates(inv: Investigation, ctx: Context, statuses: Mapping[str, str], bisects: Sequence[BisectState],
               states: Sequence[RecipeState]) -> tuple[list[Candidate], list[str]]:
    """Everything worth running, and the open hypotheses no recipe tests."""
    undecided = {h for h, s in statuses.items() if s in UNDECIDED}
    state_of = {s.recipe: s for s in states}
    recipes = {r.id: r for r in inv.recipes}
    out: list[Candidate] = []
    tested: set[str] = set()
    bases: dict[tuple[str, str], list[tuple[Any, tuple[str, ...], str]]] = {}  # by (kind, name): see _missing
    for recipe in inv.recipes:
        hyps = list(dict.fromkeys(list(recipe.tests) + list(recipe.predicts)))
        tested.update(hyps)
        st = state_of[recipe.id]
        decides = tuple(h for h in hyps if h in undecided)
        if st.waiting:  # waiting, or can't tell with a comparison that waits too
            for h, word in st.predictions:
                if h not in undecided or not word.startswith("waiting"):
                    continue
                cond, _, _ = _prediction_condition(recipe.predicts[h], recipe)
                for kind, config, what in _missing(cond, ctx):
                    whose = f"base of `{recipe.id}`" if config == recipe.base else f"{what}, for `{recipe.id}`"
                    bases.setdefault((kind, config), []).append((recipe, (h,), whose))
        if st.state in ("run", "waiting") or not decides:
            continue
        attempts = facts(recipe.id, ctx).trailing_invalid
        # a can't-tell one costs the runs that would decide it, not one
        cost = (recipe.cost or 1.0) * (runs_worth(st, ctx) if st.state == "cant-tell" else 1.0)
        out.append(Candidate("recipe", recipe.id, decides, cost, attempts, recipe=recipe))
    for rule in inv.rules:
        if rule.hypothesis not in undecided:
            continue
        for kind, config, what in _rule_waits(rule.when, ctx):
            bases.setdefault((kind, config), []).append((rule, (rule.hypothesis,), f"{what}, for rule `{rule.id}`"))
    by_id = {c.id: i for i, c in enumerate(out) if c.kind == "recipe"}
    for (kind, config), waits in bases.items():
        merged: dict[str, tuple[Any, tuple[str, ...]]] = {}
        for what, hs, _ in waits:  # one entry per recipe or rule, with all its hypotheses
            prev = merged.get(what.id, (what, ()))
            merged[what.id] = (what, tuple(dict.fromkeys(prev[1] + hs)))
        pairs = tuple(merged.values())
        hyps = tuple(dict.fromkeys(h for _, hs, _ in waits for h in hs))
        whats = tuple(dict.fromkeys(w for _, _, w in waits))
        if kind == "config" and config in by_id:  # a recipe that others wait for: worth more
            c = out[by_id[config]]
            out[by_id[config]] = replace(c, hypotheses=tuple(dict.fromkeys(c.hypotheses + hyps)),
                                         waiting=c.waiting + pairs, whats=whats)
            continue
        if kind == "run":  # one run named by its id: its value is to be recorded
            out.append(Candidate("record", config, hyps, waiting=pairs, whats=whats))
            continue
        base_recipe = recipes.get(config)
        attempts = facts(config, ctx).trailing_invalid
        out.append(Candidate("base", config, hyps, (base_recipe.cost if base_recipe else None) or 1.0, attempts,
                             recipe=base_recipe, waiting=pairs, whats=whats))
    specs = {b.id: b for b in inv.bisects}
    for b in bisects:
        if b.next is None:
            continue
        spec = specs.get(b.id)
        found = spec.decides.get("first_bad_found", {}) if spec is not None else {}
        point = next(p for p in b.points if p.label == b.next)
        attempts = len(point.runs) if point.state == "skipped" else 0
        out.append(Candidate("bisect", b.id, tuple(h for h in found if h in undecided), 1.0, attempts,
                             bisect=b, bisect_spec=spec))
    no_recipe = [h.id for h in inv.hypotheses if h.id in undecided and h.id not in tested]
    return out, no_recipe


def rank(inv: Investigation, ctx: Context, statuses: Mapping[str, str], bisects: Sequence[BisectState],
         states: Sequence[RecipeState], next_level: Mapping[str, list[str]],
         outcomes: OutcomeFn = prediction_outcomes) -> list[Suggestion]:
    """The candidates as suggestions, best first.

    Ties go to a candidate that can simply be run (no known blocker), then to
    one that decides the next level under a confirmed parent, then to a run
    that finishes one already spent (a missing base), then to the rule
    file's order (recipes, then bisects)."""
    cands, _ = candidates(inv, ctx, statuses, bisects, states)
    return [s for _, s in _ranked(inv, ctx, cands, states, next_level, outcomes)]


def _ranked(inv: Investigation, ctx: Context, cands: Sequence[Candidate], states: Sequence[RecipeState],
            next_level: Mapping[str, list[str]], outcomes: OutcomeFn) -> list[tuple[tuple, Suggestion]]:
    level = {c for children in next_level.values() for c in children}
    weights = {h.id: h.prior or 1.0 for h in inv.hypotheses}
    state_of = {s.recipe: s for s in states}
    order = {r.id: i for i, r in enumerate(inv.recipes)}
    ranked = []
    for i, c in enumerate(cands):
        outs = list(outcomes(c, ctx))
        if not outs:
            continue
        value = score(c, outs, weights)
        if c.kind in ("base", "record") and value == 0:
            continue  # what waits for it would only be supported
        if c.kind == "bisect" and c.bisect is not None:
            s = _bisect_suggestion(c.bisect, value, c.hypotheses, outs)
            pos = (2, i)
        elif c.kind in ("base", "record"):
            s = _base_suggestion(c, value, outs, inv)
            pos = (0, i)
        else:
            assert c.recipe is not None
            s = _recipe_suggestion(c, value, outs, state_of[c.id], ctx)
            pos = (1, order.get(c.id, i))
        ranked.append(((-value, bool(s.blocked), -len(level & set(c.hypotheses)), pos), s))
    ranked.sort(key=lambda x: x[0])
    return ranked


def _rules_by_config(ctx: Context) -> Mapping[str, list]:
    """:func:`~triage.rules.next.discriminate.rules_by_config` of the investigation's rules, made
    once for the suggestions of an evaluation, not once for each."""
    rules = ctx.inv.rules
    held = ctx.once.get("rules by config")
    if held is None or held[0] is not rules:
        held = ctx.once["rules by config"] = (rules, rules_by_config(rules))
    return held[1]


def _recipe_suggestion(c: Candidate, value: float, outs: Sequence[Outcome], st: RecipeState,
                       ctx: Context) -> Suggestion:
    recipe = c.recipe
    assert recipe is not None
    said = {"never-run": "never run", "no-valid-run": f"no valid run yet: {st.why}", "cant-tell": "can't tell yet"}
    advice = _sample_advice(st, ctx) if st.state == "cant-tell" else (f"fix first: {st.blocked}" if st.blocked else "")
    lines = with_rules(ctx.inv, recipe, c.hypotheses, _describe(outs), _rules_by_config(ctx))
    why = f"{said[st.state]}; decides {', '.join(c.hypotheses)}"
    if recipe.cost:
        why += f" (cost {num(recipe.cost)})"
    if c.whats:
        why += f"; {', '.join(c.whats)} waits for it"
    why += "".join(f"; {o}" for o in lines) + (f"; {advice}" if advice else "")
    return Suggestion(recipe.id, c.hypotheses, why, fill_command(recipe.run, [recipe.id]), value, "recipe",
                      said[st.state], lines, advice, blocked=st.blocked)


def _base_suggestion(c: Candidate, value: float, outs: Sequence[Outcome], inv: Investigation) -> Suggestion:
    """A run that a prediction or rule waits for: a config to run, or (kind "record") one
    run, named by its id, whose value is to be recorded (running its config again gives another run)."""
    template = c.recipe.run if c.recipe is not None else next(
        (w.run for w, _ in c.waiting if isinstance(w, RecipeSpec) and w.run), None)
    hyps = ", ".join(f"`{h}`" for h in c.hypotheses)
    state = "missing: " + ", ".join(c.whats).replace("`", "")
    verb = "record run" if c.kind == "record" else "run"
    why = f"{verb} `{c.id}` ({', '.join(c.whats)}): without it {hyps} cannot be decided"
    lines = _describe(outs)
    why += "".join(f"; {o}" for o in lines)
    command = fill_command(template, [c.id]) if c.kind == "base" else None
    return Suggestion(c.id, c.hypotheses, why, command, value, "base", state, lines)


def _bisect_suggestion(b: BisectState, value: float = 1.0, hyps: Sequence[str] = (),
                       outs: Sequence[Outcome] = ()) -> Suggestion:
    point = next(p for p in b.points if p.label == b.next)
    if b.last_good is None or b.next == b.points[0].label:
        state, outcomes = "check the good end first", ["good ⇒ the range holds; bad ⇒ start the range earlier"]
    elif b.first_bad is None or b.next == b.points[-1].label:
        state, outcomes = "check the bad end first", ["bad ⇒ the range holds; good ⇒ end the range later"]
    else:
        state = (f"the midpoint of {len(b.remaining)} untested point(s) between last good {b.last_good} "
                 f"and first bad {b.first_bad}")
        outcomes = [f"good ⇒ the first bad is after {b.next}", f"bad ⇒ the first bad is {b.next} or before it"]
    decided = [(h, word) for o in outs[:1] for h, word in o.decides]
    if decided:
        outcomes.append("first bad found ⇒ " + ", ".join(f"{h} {word}" for h, word in decided))
    advice = {"unknown": f"it could not tell: {'; '.join(point.needed) or 'more samples'}",
              "flaky": "it was flaky: re-run it to settle", "skipped": "its last run was skipped: re-run it"}.get(
        point.state, "")
    why = f"bisect {b.title}: run {b.axis} = {b.next}, {state}; ~{b.steps} step(s) left"
    why += "".join(f"; {o}" for o in outcomes) + (f"; {advice}" if advice else "")
    return Suggestion(f"bisect:{b.id}", tuple(hyps), why, b.command, value, "bisect", state, tuple(outcomes), advice,
                      point=b.next)


def _suggest(inv: Investigation, ctx: Context, statuses: Mapping[str, str], bisects: Sequence[BisectState],
             states: Sequence[RecipeState], next_level: Mapping[str, list[str]],
             outcomes: OutcomeFn = prediction_outcomes) -> tuple[list[Suggestion], list[str]]:
    """The ranked suggestions and the open hypotheses that no recipe tests."""
    cands, no_recipe = candidates(inv, ctx, statuses, bisects, states)
    return [s for _, s in _ranked(inv, ctx, cands, states, next_level, outcomes)], no_recipe


def combined_command(inv: Investigation, suggestions: Sequence[Suggestion]) -> Optional[str]:
    """One command that runs every suggestion, from the recipes' and bisects' `run:` templates."""
    recipes = {r.id: r for r in inv.recipes}
    groups: dict[str, list[str]] = {}
    lines: list[str] = []
    for s in suggestions:
        r = recipes.get(s.recipe)
        if s.kind == "recipe" and r is not None and r.run:
            groups.setdefault(r.run, []).append(r.id)
    for template, ids in groups.items():
        lines.append(fill_command(template, ids) or "")
    lines += [s.command for s in suggestions if s.kind != "recipe" and s.command]
    return "\n".join(dict.fromkeys(lines)) or None
