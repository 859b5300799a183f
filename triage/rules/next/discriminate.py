"""Which recipe tells two hypotheses apart, exclusive groups, and what a result would mean.

A recipe tells A from B when its result bears on them differently: their
predictions differ, or a rule that reads the recipe's runs decides one and not
the other.  Two undecided hypotheses that every declared recipe reads alike
need a new experiment; the report says so, with what it would have to change.
"""

from __future__ import annotations

from itertools import combinations
from typing import Mapping, Optional, Sequence

from triage.rules.engine.evidence import _prediction_condition
from triage.rules.engine.memo import Codec
from triage.rules.engine.records import EvidenceItem, Investigation, Warning_
from triage.rules.language.schema import Condition, HypothesisSpec, RecipeSpec, RuleSpec
from triage.rules.language.words import phrase

UNDECIDED = ("open", "inconclusive", "conflicting")
_WORDS = {"rules_out": "ruled out", "confirms": "confirmed", "supports": "supported"}


def _configs_read(cond: Condition) -> set[str]:
    """The configs whose runs a condition selects (at any depth)."""
    out = {cond.config} if isinstance(cond.config, str) else set(cond.config or [])
    for sub in cond.parts():
        out |= _configs_read(sub)
    return out


def rules_by_config(rules: Sequence[RuleSpec]) -> dict[str, list[RuleSpec]]:
    """config -> the rules that decide something from its runs, in the rule file's order:
    each rule's conditions walked once, not once per recipe."""
    out: dict[str, list[RuleSpec]] = {}
    for r in rules:
        if r.then != "inconclusive":
            for config in _configs_read(r.when):
                out.setdefault(config, []).append(r)
    return out


def rules_over(recipe: RecipeSpec, rules: Sequence[RuleSpec],
               index: Optional[Mapping[str, list[RuleSpec]]] = None) -> list[RuleSpec]:
    """The rules that decide something from this recipe's runs (``index``: :func:`rules_by_config`'s)."""
    return list((index if index is not None else rules_by_config(rules)).get(recipe.id, []))


def reading(recipe: RecipeSpec, hyp: str, rules: Sequence[RuleSpec]) -> frozenset:
    """How a recipe's result bears on one hypothesis: its prediction and the rules over its runs."""
    out = set()
    pred = recipe.predicts.get(hyp)
    if pred is not None:
        cond, confirms, _ = _prediction_condition(pred, recipe)
        out.add((cond.model_dump_json(by_alias=True, exclude_none=True), confirms))
    for r in rules:
        if r.hypothesis == hyp:
            out.add((r.when.model_dump_json(by_alias=True, exclude_none=True), r.then))
    return frozenset(out)


#: hypothesis -> {recipe: its reading, as the place of that reading among the distinct ones}
Rivals = dict[str, dict[str, int]]


def rival_table(inv: Investigation) -> Rivals:
    """How each recipe's result bears on each hypothesis it bears on at all: worked out
    once per (recipe, hypothesis), so that telling two hypotheses apart is a comparison
    of their rows, not a pass over every recipe and rule for each pair.  A hypothesis
    a recipe's result does not bear on has no entry (an empty reading)."""
    index = rules_by_config(inv.rules)
    places: dict[frozenset, int] = {}
    table: Rivals = {}
    for recipe in inv.recipes:
        over = index.get(recipe.id, [])
        for hyp in dict.fromkeys([*recipe.predicts, *(r.hypothesis for r in over)]):
            read = reading(recipe, hyp, over)
            table.setdefault(hyp, {})[recipe.id] = places.setdefault(read, len(places))
    return table


def _rivals_row(table: Rivals) -> list:
    return [[hyp, list(row), list(row.values())] for hyp, row in table.items()]


#: The table as the stored evaluation keeps it (it reads no runs: only a change of the
#: definitions, the memo's key, works it out again).
RIVALS: Codec[Rivals] = Codec(_rivals_row, lambda rows: {h: dict(zip(rs, ps)) for h, rs, ps in rows})


def telling_apart(inv: Investigation, a: str, b: str, table: Optional[Rivals] = None) -> list[str]:
    """The recipes whose result would bear on `a` and `b` differently."""
    table = rival_table(inv) if table is None else table
    ra, rb = table.get(a, {}), table.get(b, {})
    if ra == rb:
        return []
    return [r.id for r in inv.recipes if ra.get(r.id) != rb.get(r.id)]


def exclusive_groups(inv: Investigation) -> list[list[str]]:
    """Top-level `exclusive:` groups, and the children of each `exclusive: true` parent."""
    groups = [list(g) for g in inv.exclusive]
    for h in inv.hypotheses:
        if h.exclusive:
            children = [c.id for c in inv.hypotheses if c.parent == h.id]
            if len(children) > 1:
                groups.append(children)
    return groups


def _apart_hint(inv: Investigation, a: str, b: str, table: Optional[Rivals] = None) -> str:
    tellers = telling_apart(inv, a, b, table)
    if tellers:
        return f"{', '.join(tellers)} would tell them apart"
    return f"no recipe tells {a} from {b}: {_would_need(inv, a, b)}"


def exclusive_conflicts(inv: Investigation, statuses: dict[str, str], items: list[EvidenceItem],
                        table: Optional[Rivals] = None) -> tuple[list[Warning_], set[str]]:
    """At most one hypothesis of an exclusive group may be confirmed.

    Two or more confirmed become `conflicting`, with a warning naming the
    evidence of each and the recipe that would tell them apart.  One confirmed
    rules out the undecided others of its group (evidence marked inherited).
    Changes `statuses` and `items` in place; returns the warnings and the
    hypotheses made conflicting."""
    warnings: list[Warning_] = []
    conflicting: set[str] = set()
    for group in exclusive_groups(inv):
        confirmed = [h for h in group if statuses.get(h) == "confirmed"]
        if len(confirmed) > 1:
            sides = []
            for h in confirmed:
                said = [e.summary or e.reason for e in items
                        if e.hypothesis == h and e.verdict == "confirms" and e.counts]
                sides.append(f"{h} by {'; '.join(dict.fromkeys(said)) or 'its evidence'}")
            hints = [_apart_hint(inv, a, b, table) for a, b in combinations(confirmed, 2)]
            warnings.append(Warning_("exclusive", (
                f"{', '.join(f'`{h}`' for h in confirmed)} exclude each other but are "
                f"{'both' if len(confirmed) == 2 else 'all'} confirmed — "
                + " — ".join(sides) + "; conflicting until all but one are ruled out: " + "; ".join(hints))))
            for h in confirmed:
                statuses[h] = "conflicting"
                conflicting.add(h)
        elif len(confirmed) == 1:
            winner = confirmed[0]
            for h in group:
                if h != winner and statuses.get(h) in ("open", "inconclusive"):
                    text = f"{winner} is confirmed and excludes it"
                    items.append(EvidenceItem(h, f"exclusive:{winner}", "rules_out", text, (), ("inherited",),
                                              summary=text))
                    statuses[h] = "ruled_out"
    return warnings, conflicting


def _compete(hyps: Mapping[str, HypothesisSpec], groups: Sequence[Sequence[str]], a: str, b: str) -> bool:
    """Rival explanations: siblings (the same parent, or both top-level) or one exclusive group."""
    if a in hyps and b in hyps and hyps[a].parent == hyps[b].parent:
        return True
    return any(a in g and b in g for g in groups)


def _would_need(inv: Investigation, a: str, b: str) -> str:
    hyps = {h.id: h for h in inv.hypotheses}
    va, vb = list(hyps[a].vary) if a in hyps else [], list(hyps[b].vary) if b in hyps else []
    only_a = [v for v in va if v not in vb]
    only_b = [v for v in vb if v not in va]
    if only_a or only_b:
        bits = []
        if only_a:
            bits.append(f"change {', '.join(only_a)} ({a})" + (f" but not {', '.join(only_b)}" if only_b else ""))
        if only_b:
            bits.append(f"change {', '.join(only_b)} ({b})" + (f" but not {', '.join(only_a)}" if only_a else ""))
        return "a recipe would need to " + ", or ".join(bits)
    return "a recipe needs a result they predict differently (a vary: hint on each would name it)"


def undistinguished(inv: Investigation, statuses: Mapping[str, str], table: Optional[Rivals] = None) -> list[Warning_]:
    """'no recipe tells A from B' for every pair of undecided rival hypotheses
    (siblings, or one exclusive group) that every declared recipe reads alike;
    pairs that no recipe tests at all are reported as untested instead.
    ``table``: :func:`rival_table`'s (worked out here when not given)."""
    table = rival_table(inv) if table is None else table
    tested = {h for r in inv.recipes for h in r.tests} | set(table)
    open_ = [h.id for h in inv.hypotheses if statuses.get(h.id) in UNDECIDED]
    hyps = {h.id: h for h in inv.hypotheses}
    groups = exclusive_groups(inv)
    out = []
    for a, b in combinations(open_, 2):
        if not ({a, b} & tested) or table.get(a, {}) != table.get(b, {}) or not _compete(hyps, groups, a, b):
            continue
        out.append(Warning_("no-recipe", f"no recipe tells `{a}` from `{b}`: {_would_need(inv, a, b)}"))
    return out


def with_rules(inv: Investigation, recipe: RecipeSpec, decides: Sequence[str], lines: tuple[str, ...],
               index: Optional[Mapping[str, list[RuleSpec]]] = None) -> tuple[str, ...]:
    """A suggestion's outcomes from its predictions (`lines`) and the rules over its runs too
    (``index``: :func:`rules_by_config`'s, made once for many recipes)."""
    extra: list[str] = []
    covered: set[str] = set()
    lines = list(lines)
    for rule in rules_over(recipe, inv.rules, index):
        if rule.hypothesis not in decides:
            continue
        covered.add(rule.hypothesis)
        word = _WORDS[rule.then]
        desc = phrase(rule.when, recipe.id)
        pred = recipe.predicts.get(rule.hypothesis)
        if pred is not None and _prediction_condition(pred, recipe)[2] == desc:
            old = f"{rule.hypothesis} supported"
            lines = [x.replace(old, f"{rule.hypothesis} {word} (rule {rule.id})") if x.startswith(desc.does) else x
                     for x in lines]
            continue
        extra.append(f"{rule.because or desc.base} ⇒ {rule.hypothesis} {word} (rule {rule.id})")
    out = []
    for x in lines:
        if x.startswith("no prediction for "):
            left = [h for h in decides if h not in covered and h not in recipe.predicts]
            if not left:
                continue
            x = f"no prediction for {', '.join(left)}: a rule or manual evidence decides it"
        out.append(x)
    return tuple(out + extra)
