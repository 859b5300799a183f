"""Checks that need a whole rule file: ids given twice, names that must exist (hypotheses,
references, rules, bisects and their points), parent and bisect cycles; and the warnings
about a file that loads but may not say what was meant.

Every problem points at the place in the file it is about (``path:line:col``), in the
order of the file's sections.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Iterator

from triage.errors import Problem
from triage.rules.language.schema import Condition
from triage.rules.language.yamlread import Path_

if TYPE_CHECKING:
    from triage.rules.language.loader import LoadedFile


def conditions_in(cond: Condition, path: Path_) -> Iterator[tuple[Condition, Path_]]:
    """A condition and every condition under it (`all`, `any`, `not`), each with its path."""
    yield cond, path
    for key in ("all", "any"):
        for i, sub in enumerate(getattr(cond, key) or []):
            yield from conditions_in(sub, path + (key, i))
    if cond.not_ is not None:
        yield from conditions_in(cond.not_, path + ("not",))


def _hint(name: str, known: list[str]) -> str:
    hint = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


class _Checker:
    """One file's names, and the problems found in it so far."""

    def __init__(self, f: LoadedFile) -> None:
        self.f = f
        self.problems: list[Problem] = []
        spec = f.spec
        self.hyp_ids = [h.id for h in spec.hypotheses] + sorted(f.dropped.get("hypotheses", ()))
        self.refs = (set(spec.investigation.references) if spec.investigation else set()) \
            | f.dropped.get("references", set())
        self.rule_ids = {r.id for r in spec.rules} | f.dropped.get("rules", set())
        self.bisect_points = {b.id: b.point_labels() for b in spec.bisects}

    def problem(self, path: Path_, msg: str, key: bool = False) -> None:
        line, col = self.f.where(path, key=key)
        self.problems.append(Problem(self.f.path, line, col, msg))

    def known_hypothesis(self, name: str, path: Path_, key: bool = False) -> None:
        if name not in self.hyp_ids:
            self.problem(path, f"unknown hypothesis {name!r}{_hint(name, self.hyp_ids)}", key=key)

    def needs_good_and_bad(self, path: Path_) -> None:
        if not {"good", "bad"} <= self.refs:
            self.problem(path, "recovers needs both a 'good' and a 'bad' reference")

    def bound(self, bound: Any, path: Path_) -> None:
        if isinstance(bound, str):
            if bound == "gate":
                if self.f.spec.investigation.gate is None:
                    self.problem(path, "'gate' used but the investigation sets no gate")
            elif bound not in self.refs:
                self.problem(path, f"unknown reference {bound!r}; use a number, 'gate' or a reference name")

    def condition(self, cond: Condition, path: Path_) -> None:
        for c, p in conditions_in(cond, path):
            for key in ("same_as", "differs_from", "better_than", "worse_than", "no_worse_than"):
                target = getattr(c, key)
                if isinstance(target, str) and target not in self.refs:
                    self.problem(p + (key,), f"unknown reference {target!r}; define it under investigation.references")
            for key in ("at_least", "below", "passes", "fails"):
                self.bound(getattr(c, key), p + (key,))
            if c.between is not None:
                for j, bound in enumerate(c.between):
                    self.bound(bound, p + ("between", j))
                lo, hi = c.between
                if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo >= hi:
                    self.problem(p + ("between",), f"between needs low < high, got [{lo}, {hi}]")
            if c.recovers is not None:
                self.needs_good_and_bad(p + ("recovers",))
            if c.bisect is not None:
                self.bisect_reference(c, p)

    def bisect_reference(self, c: Condition, p: Path_) -> None:
        if c.bisect not in self.bisect_points:
            self.problem(p + ("bisect",), f"unknown bisect {c.bisect!r}{_hint(c.bisect, list(self.bisect_points))}")
        for key in ("first_bad", "last_good"):
            point = getattr(c, key)
            if point is not None and c.bisect in self.bisect_points and point not in self.bisect_points[c.bisect]:
                self.problem(p + (key,), f"{point!r} is not a point of bisect {c.bisect!r}")


def check_file(f: LoadedFile) -> list[Problem]:
    """Checks that need the whole file: names that must exist, duplicate ids."""
    check = _Checker(f)
    _duplicate_ids(check)
    if f.spec.investigation is None:
        return check.problems
    for step in (_parents, _recipes, _rules, _evidence, _bisects, _bisect_cycles, _exclusive):
        step(check)
    return check.problems


def _duplicate_ids(check: _Checker) -> None:
    for section in ("hypotheses", "recipes", "rules", "bisects", "signatures", "extractors"):
        seen: set[str] = set()
        for i, item in enumerate(getattr(check.f.spec, section)):
            if item.id in seen:
                check.problem((section, i, "id"), f"duplicate id {item.id!r} in {section}")
            seen.add(item.id)


def _parents(check: _Checker) -> None:
    hypotheses = check.f.spec.hypotheses
    parents = {h.id: h.parent for h in hypotheses}
    for i, h in enumerate(hypotheses):
        if h.parent is None:
            continue
        if h.parent not in parents:
            check.known_hypothesis(h.parent, ("hypotheses", i, "parent"))
            continue
        seen_chain, cur = {h.id}, h.parent
        while cur is not None:
            if cur in seen_chain:
                check.problem(("hypotheses", i, "parent"), f"parent cycle through {h.id!r}")
                break
            seen_chain.add(cur)
            cur = parents.get(cur)


def _recipes(check: _Checker) -> None:
    for i, r in enumerate(check.f.spec.recipes):
        for j, t in enumerate(r.tests):
            check.known_hypothesis(t, ("recipes", i, "tests", j))
        for name, pred in r.predicts.items():
            where = ("recipes", i, "predicts", name)
            check.known_hypothesis(name, where, key=True)
            if pred == "recovers":
                check.needs_good_and_bad(where)
            if pred == "same_as_bad" and "bad" not in check.refs:
                check.problem(where, "same_as_bad needs a 'bad' reference")
            if isinstance(pred, Condition):
                check.condition(pred, where)


def _rules(check: _Checker) -> None:
    for i, rule in enumerate(check.f.spec.rules):
        check.known_hypothesis(rule.hypothesis, ("rules", i, "hypothesis"))
        check.condition(rule.when, ("rules", i, "when"))
        for j, s in enumerate(rule.supersedes):
            if s not in check.rule_ids:
                check.problem(("rules", i, "supersedes", j), f"unknown rule {s!r}")
            elif s == rule.id:
                check.problem(("rules", i, "supersedes", j), "a rule cannot supersede itself")


def _evidence(check: _Checker) -> None:
    for i, ev in enumerate(check.f.spec.evidence):
        check.known_hypothesis(ev.hypothesis, ("evidence", i, "hypothesis"))


def _bisects(check: _Checker) -> None:
    for i, b in enumerate(check.f.spec.bisects):
        check.condition(b.good_when, ("bisects", i, "good_when"))
        for outcome, hyps in b.decides.items():
            for name in hyps:
                check.known_hypothesis(name, ("bisects", i, "decides", outcome, name), key=True)
        labels = b.point_labels()
        if len(set(labels)) != len(labels):
            check.problem(("bisects", i, "points"), "bisect points must be distinct")
        for j, mark in enumerate(b.marks):
            if mark.point not in labels:
                check.problem(("bisects", i, "marks", j, "point"),
                              f"{mark.point!r} is not a point of this bisect{_hint(mark.point, labels)}")


def _bisect_cycles(check: _Checker) -> None:
    bisects = check.f.spec.bisects
    for i, b in enumerate(bisects):
        cycle = _bisect_cycle(b.id, {x.id: x.good_when.bisects() for x in bisects})
        if cycle:
            check.problem(("bisects", i, "good_when"), "bisects read each other in a cycle: " + " → ".join(cycle)
                          + "; a bisect's good_when cannot depend on its own result")


def _exclusive(check: _Checker) -> None:
    for i, group in enumerate(check.f.spec.exclusive):
        for j, name in enumerate(group):
            check.known_hypothesis(name, ("exclusive", i, j))
        if len(set(group)) < 2:
            check.problem(("exclusive", i), "an exclusive group needs at least two distinct hypotheses")


def _bisect_cycle(start: str, reads: dict[str, set[str]]) -> list[str]:
    """The cycle of bisects whose good_when read one another through `start`, if any."""
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        cur, path = stack.pop()
        for nxt in sorted(reads.get(cur, ())):
            if nxt == start:
                return path + [start]
            if nxt not in seen and nxt in reads:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return []


def direction_warnings(f: LoadedFile) -> list[Problem]:
    """A bisect's `good_when` whose literal threshold points the wrong way for its metric's direction
    (`at_least` when lower is better, `below` when higher is better): valid, but likely copied."""
    inv = f.spec.investigation
    out: list[Problem] = []
    if inv is None:
        return out
    for i, b in enumerate(f.spec.bisects):
        for c, p in conditions_in(b.good_when, ("bisects", i, "good_when")):
            metric = c.metric or inv.metric
            settings = inv.metrics.get(metric)
            direction = (settings.direction if settings else None) or inv.direction
            wrong = "at_least" if direction == "lower" else "below"
            if getattr(c, wrong) is not None:
                line, col = f.where(p + (wrong,), key=True)
                out.append(Problem(f.path, line, col, (
                    f"warning: good_when {wrong} on {metric}, where {direction} is better: a good point would "
                    f"read as bad; use passes: (direction-aware) or {'below' if wrong == 'at_least' else 'at_least'}:")))
    return out


def noise_warnings(f: LoadedFile) -> list[Problem]:
    """The investigation's compared metrics with no noise estimate at all (exact comparisons)."""
    inv = f.spec.investigation
    if inv is None:
        return []
    from triage.rules.engine.context import no_noise_warnings

    line, col = f.where(("investigation", "metric"), key=True)
    return [Problem(f.path, line, col, f"warning: {text}") for text in no_noise_warnings(inv)]
