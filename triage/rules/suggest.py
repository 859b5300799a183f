"""Where each recipe stands, and what to run next."""

from __future__ import annotations

import re
from typing import Mapping, Optional, Sequence

from triage.rules.context import Context, _run_order, num
from triage.rules.evidence import _prediction_condition
from triage.rules.records import (
    BisectState,
    Confound,
    EvidenceItem,
    Investigation,
    RecipeState,
    RunRec,
    Suggestion,
)
from triage.rules.schema import RecipeSpec

# --------------------------------------------------------------------------
# Where each recipe stands, and what to run next

UNDECIDED = ("open", "inconclusive", "conflicting")


def _blocker(run: RunRec, ctx: Context) -> str:
    """A known failure that a plain re-run will not fix (not infra), with its remedy."""
    sig = ctx.inv.signatures.get(run.signature) if run.signature else None
    if sig is None or sig.cls == "infra":
        return ""
    return f"{sig.id} ({sig.cls})" + (f": {sig.remedy}" if sig.remedy else "")


def recipe_states(inv: Investigation, ctx: Context, items: Sequence[EvidenceItem], statuses: Mapping[str, str],
                  confounds: Sequence[Confound]) -> list[RecipeState]:
    """Never run, no valid run (crashed, errored, excluded, known failure),
    can't tell (a valid run whose reading is within noise), or run."""
    undecided = {h for h, s in statuses.items() if s in UNDECIDED}
    out = []
    for recipe in inv.recipes:
        runs = sorted(ctx.by_config.get(recipe.id, []), key=_run_order)
        keys = tuple(r.key for r in runs)
        valid = tuple(r.key for r in runs if ctx.invalid_reason(r) is None)
        confounded = tuple(sorted({c.key for c in confounds if c.recipe == recipe.id}))
        if not runs:
            out.append(RecipeState(recipe.id, "never-run"))
        elif not valid:
            newest = runs[-1]
            out.append(RecipeState(recipe.id, "no-valid-run", keys, (), ctx.invalid_reason(newest, brief=True) or "",
                                   blocked=_blocker(newest, ctx)))
        else:
            cant = [e for e in items if e.counts and e.verdict == "inconclusive" and "invalid-run" not in e.flags
                    and set(e.runs) & set(valid) and e.hypothesis in undecided]
            if cant:
                needed = tuple(dict.fromkeys(n for e in cant for n in e.needed))
                out.append(RecipeState(recipe.id, "cant-tell", keys, valid, cant[0].summary, needed,
                                       confounded=confounded))
            else:
                out.append(RecipeState(recipe.id, "run", keys, valid, confounded=confounded))
    return out


def _outcome_phrase(desc: str) -> str:
    """'recover to good' -> 'recovers to good' (what the run would show)."""
    if desc.startswith("not "):
        return "does " + desc
    verb, _, rest = desc.partition(" ")
    return f"{verb}s {rest}".strip()


def _outcomes(recipe: RecipeSpec, decides: Sequence[str]) -> tuple[str, ...]:
    """What each result of the recipe would mean for the hypotheses it decides."""
    groups: dict[str, list[tuple[str, bool]]] = {}
    for h in decides:
        pred = recipe.predicts.get(h)
        if pred is not None:
            _, recovery, desc = _prediction_condition(pred, recipe)
            groups.setdefault(desc, []).append((h, recovery))
    predicted = [h for hs in groups.values() for h, _ in hs]
    lines = []
    for desc, hs in groups.items():
        mine = {h for h, _ in hs}
        bits = [f"{h} {'confirmed' if rec else 'supported'}" for h, rec in hs]
        bits += [f"{h} ruled out" for h in predicted if h not in mine]
        lines.append(f"{_outcome_phrase(desc)} ⇒ " + ", ".join(bits))
    if len(groups) == 1:
        lines.append("otherwise ⇒ " + ", ".join(f"{h} ruled out" for h in predicted))
    unread = [h for h in decides if h not in predicted]
    if unread:
        lines.append(f"no prediction for {', '.join(unread)}: its result decides through a rule or manual evidence")
    return tuple(lines)


def _sample_advice(state: RecipeState, ctx: Context) -> str:
    """How many more samples or repeats would decide a can't-tell result.

    Several comparisons may each name a number (vs good, vs bad): the largest
    decides them all."""
    runs = [r for r in ctx.by_config.get(state.recipe, []) if r.key in state.valid]
    metric = ctx.spec.metric
    beyond = [need for need in state.needed if "full benchmark" in need]  # already advice (a metric's n_max)
    needs = [need for need in state.needed if need not in beyond]
    ns = [int(x.replace(",", "")) for need in needs for x in re.findall(r"n ≥ ([\d,]+)", need)]
    ks = [int(x) for need in needs for x in re.findall(r"≥ (\d+) repeats", need)]
    bits = beyond[:1]
    if ns:
        have = sorted({r.metrics[metric][1] for r in runs if metric in r.metrics and r.metrics[metric][1]})
        had = f" (it had n={', '.join(str(x) for x in have)})" if have else ""
        bits.append(f"re-run with n ≥ {max(ns):,} samples per run{had}")
    if ks:
        k = max(ks)
        more = max(1, k - len(runs))
        bits.append(f"run it {more} more time{'s' if more != 1 else ''} (≥ {k} repeats; it has {len(runs)})")
    return "; ".join(bits) or "; ".join(state.needed)


def fill_command(template: Optional[str], ids: Sequence[str]) -> Optional[str]:
    """A recipe's `run:` for some recipes: `{ids}` joined by commas, else one line each."""
    if not template:
        return None
    if "{ids}" in template:
        return template.replace("{ids}", ",".join(ids))
    return "\n".join(template.replace("{id}", i) for i in ids)


def _suggest(inv: Investigation, ctx: Context, statuses: Mapping[str, str], bisects: Sequence[BisectState],
             states: Sequence[RecipeState], next_level: Mapping[str, list[str]]) -> tuple[list[Suggestion], list[str]]:
    """Rank the recipes not yet run validly by the open hypotheses they would decide, per unit of cost.

    A hypothesis whose prediction is a recovery is decided either way
    (recovers: confirmed; stays bad: ruled out) and counts 1; one that a
    result could only rule out (a "stays bad" prediction, or no prediction)
    counts ½.  Ties go to a recipe that can simply be run (no known blocker),
    then to one that decides the next level under a confirmed parent, then to
    the rule file's order.  A bisect's next point counts as 1.
    """
    undecided = {h for h, s in statuses.items() if s in UNDECIDED}
    level = {c for children in next_level.values() for c in children}
    state_of = {s.recipe: s for s in states}
    ranked: list[tuple[tuple, Suggestion]] = []
    tested: set[str] = set()
    for pos, recipe in enumerate(inv.recipes):
        hyps = list(dict.fromkeys(list(recipe.tests) + list(recipe.predicts)))
        tested.update(hyps)
        st = state_of[recipe.id]
        decides = [h for h in hyps if h in undecided]
        if st.state == "run" or not decides:
            continue
        both_ways = [h for h in decides if h in recipe.predicts and _prediction_condition(recipe.predicts[h], recipe)[1]]
        score = (len(both_ways) + 0.5 * (len(decides) - len(both_ways))) / (recipe.cost or 1.0)
        said = {"never-run": "never run", "no-valid-run": f"no valid run yet: {st.why}", "cant-tell": "can't tell yet"}
        advice = _sample_advice(st, ctx) if st.state == "cant-tell" else (f"fix first: {st.blocked}" if st.blocked else "")
        outcomes = _outcomes(recipe, decides)
        why = f"{said[st.state]}; decides {', '.join(decides)}"
        if recipe.cost:
            why += f" (cost {num(recipe.cost)})"
        why += "".join(f"; {o}" for o in outcomes) + (f"; {advice}" if advice else "")
        s = Suggestion(recipe.id, tuple(decides), why, fill_command(recipe.run, [recipe.id]), score, "recipe",
                       said[st.state], outcomes, advice)
        ranked.append(((-score, bool(st.blocked), -len(level & set(decides)), pos), s))
    for i, b in enumerate(bisects):
        if b.next is not None:
            s = _bisect_suggestion(b)
            ranked.append(((-s.score, False, 0, len(inv.recipes) + i), s))
    ranked.sort(key=lambda x: x[0])
    no_recipe = [h.id for h in inv.hypotheses if h.id in undecided and h.id not in tested]
    return [s for _, s in ranked], no_recipe


def _bisect_suggestion(b: BisectState) -> Suggestion:
    point = next(p for p in b.points if p.label == b.next)
    if b.last_good is None:
        state, outcomes = "check the good end first", ("good ⇒ the range holds; bad ⇒ start the range earlier",)
    elif b.first_bad is None:
        state, outcomes = "check the bad end first", ("bad ⇒ the range holds; good ⇒ end the range later",)
    else:
        state = (f"the midpoint of {len(b.remaining)} untested point(s) between last good {b.last_good} "
                 f"and first bad {b.first_bad}")
        outcomes = (f"good ⇒ the first bad is after {b.next}", f"bad ⇒ the first bad is {b.next} or before it")
    advice = {"unknown": f"it could not tell: {'; '.join(point.needed) or 'more samples'}",
              "flaky": "it was flaky: re-run it to settle", "skipped": "its last run was skipped: re-run it"}.get(
        point.state, "")
    why = f"bisect {b.title}: run {b.axis} = {b.next}, {state}; ~{b.steps} step(s) left"
    why += "".join(f"; {o}" for o in outcomes) + (f"; {advice}" if advice else "")
    return Suggestion(f"bisect:{b.id}", (), why, b.command, 1.0, "bisect", state, outcomes, advice)


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
    lines += [s.command for s in suggestions if s.kind == "bisect" and s.command]
    return "\n".join(lines) or None
