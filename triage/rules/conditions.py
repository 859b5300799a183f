"""Conditions over runs: selectors, noise-aware comparisons, all/any/not (four-valued logic)."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from triage.rules import stats
from triage.rules.context import Context, num
from triage.rules.records import (
    Result,
    RunRec,
    V,
)
from triage.rules.schema import (
    INVALID_STATUSES,
    Condition,
)
from triage.rules.stats import Measure, Outcome, fmt, fmt_delta

# --------------------------------------------------------------------------
# Conditions


def _combine(results: list[Result], decisive: V) -> V:
    """Kleene logic with a fourth value: one `decisive` value settles it (FALSE
    for `all`, TRUE for `any`); else no data, else can't tell, else the other."""
    values = {r.value for r in results}
    for v in (decisive, V.NODATA, V.UNKNOWN):
        if v in values:
            return v
    return V.TRUE if decisive is V.FALSE else V.FALSE


def _and(results: list[Result]) -> V:
    return _combine(results, V.FALSE)


def _or(results: list[Result]) -> V:
    return _combine(results, V.TRUE)


def _not(v: V) -> V:
    return {V.TRUE: V.FALSE, V.FALSE: V.TRUE}.get(v, v)


def _merge(into: Result, results: Iterable[Result]) -> None:
    for r in results:
        into.parts += r.parts
        into.runs += [k for k in r.runs if k not in into.runs]
        into.invalid += [x for x in r.invalid if x not in into.invalid]
        into.needed += [n for n in r.needed if n not in into.needed]
        into.short += [x for x in r.short if x not in into.short]
        into.measure = into.measure or r.measure


def evaluate_condition(cond: Condition, ctx: Context, selection: Optional[list[RunRec]]) -> Result:
    """Evaluate a condition over a selection of runs (None: all runs)."""
    sel = selection
    if cond.config is not None or cond.run is not None or cond.provenance:
        sel = ctx.select(cond, None if (cond.config is not None or cond.run is not None) else selection)
    if sel is None:
        sel = list(ctx.runs)
    explicitly_invalid: set[str] = set()
    if cond.status is not None:
        wanted = {cond.status} if isinstance(cond.status, str) else set(cond.status)
        sel = [r for r in sel if r.status in wanted]
        explicitly_invalid = wanted & set(INVALID_STATUSES)
    valid, invalid = [], []
    for r in sel:
        why = ctx.invalid_reason(r)
        if why is None or (r.status in explicitly_invalid and not r.excluded):
            valid.append(r)
        else:
            invalid.append((r.key, why))

    results: list[Result] = []
    if cond.min_runs is not None and len(valid) < cond.min_runs:
        results.append(Result(V.NODATA, [f"needs {cond.min_runs} valid runs, has {len(valid)}"]))
    comparisons = cond.comparisons()
    if comparisons:
        results.append(_compare(cond, ctx, valid))
    for key in ("all", "any"):
        subs = getattr(cond, key)
        if subs:
            sub_results = [evaluate_condition(c, ctx, sel) for c in subs]
            combined = Result(_and(sub_results) if key == "all" else _or(sub_results))
            _merge(combined, sub_results)
            results.append(combined)
    if cond.not_ is not None:
        sub = evaluate_condition(cond.not_, ctx, sel)
        neg = Result(_not(sub.value))
        _merge(neg, [sub])
        results.append(neg)
    if not results:  # only selectors: true when there is such a valid run
        results.append(
            Result(V.TRUE if valid else V.NODATA, [], [r.key for r in valid])
        )
    out = Result(_and(results))
    _merge(out, results)
    out.invalid = [x for x in invalid if x not in out.invalid] + out.invalid
    return out


def _compare(cond: Condition, ctx: Context, valid: list[RunRec]) -> Result:
    metric = cond.metric or ctx.spec.metric
    with_metric = [r for r in valid if ctx.has_metric(r, metric)]
    if not with_metric:
        return Result(V.NODATA)
    m = ctx.measure(with_metric, metric)
    assert m is not None
    label = ctx.label(with_metric)
    if metric != ctx.spec.metric:
        label = f"{label} {metric}"
    keys = [r.key for r in with_metric]
    results: list[Result] = []
    conf = ctx.confidence
    direction = ctx.direction(metric)
    better = f"{direction} is better"
    n_max = ctx.settings(metric).n_max

    def margin_for(ref: Measure) -> Optional[float]:
        if cond.margin is not None:
            return stats.Tolerance.parse(cond.margin).absolute(ref.value)
        return ctx.margin

    def needs(c: Any) -> list[str]:
        return [_within_benchmark(c.needed, n_max)] if c.needed else []

    def threshold(kind: str, bound: Any) -> Result:
        limit, blabel = ctx.bound(bound)
        if limit is None:
            return Result(V.NODATA, [f"{blabel}: no value yet"])
        check = (stats.at_least if kind == "at_least" else stats.below)(m, limit, confidence=conf, tolerance=ctx.tolerance)
        sym_true, sym_false = (("≥", "<") if kind == "at_least" else ("<", "≥"))
        if check.result is None:
            text = f"{label} {num(m.value)} vs {blabel}: can't tell ({check.noise})"
            return Result(V.UNKNOWN, [text], keys, needed=needs(check), measure=m,
                          short=[f"{label} {num(m.value)} vs {blabel}: can't tell"])
        sym = sym_true if check.result else sym_false
        noise = f" ({check.noise})" if check.band else ""
        short = f"{label} {num(m.value)} {sym} {blabel}"
        return Result(V.TRUE if check.result else V.FALSE, [short + noise], keys, measure=m, short=[short])

    def against(target: Any, use_margin: bool = True) -> tuple[Optional[stats.Comparison], str, Optional[Measure]]:
        if isinstance(target, (int, float)) or target == "gate":
            limit, rlabel = ctx.bound(target)
            ref = Measure(limit, fixed=True) if limit is not None else None
        elif isinstance(target, str):
            ref, rlabel = ctx.refs.get(target, (None, target))
        else:
            runs = [r for r in ctx.select(target) if ctx.invalid_reason(r) is None and ctx.has_metric(r, metric)]
            own = [r for r in runs if r.key in keys]
            runs = [r for r in runs if r.key not in keys]
            if not runs:
                what = ctx.label(ctx.select(target)) or "the other runs"
                if own:
                    return None, f"{what} (the same runs as compared: name other runs)", None
                return None, f"{what} (no valid run)", None
            ref = ctx.measure(runs, metric)
            assert ref is not None
            rlabel = f"{ctx.label(runs)} {fmt(ref.value)}"
            keys.extend(r.key for r in runs if r.key not in keys)
        if ref is None:
            return None, rlabel, None
        c = stats.compare(m, ref, margin=margin_for(ref) if use_margin else None, tolerance=ctx.tolerance,
                          confidence=conf)
        return c, rlabel, ref

    def describe(c: stats.Comparison, rlabel: str) -> str:
        head = f"{label} {fmt(m.value)} vs {rlabel}: Δ {fmt_delta(c.delta)}"
        what = "tolerance" if c.method == "tolerance" else "noise"
        if c.outcome is Outcome.SAME:
            return f"{head}, within {what} ({c.noise})"
        if c.outcome is Outcome.DIFFERENT:
            return f"{head}, beyond {what} ({c.noise})"
        return f"{head}, can't tell ({c.noise})"

    def same(target: Any, want_same: bool) -> Result:
        c, rlabel, _ = against(target)
        if c is None:
            return Result(V.NODATA, [f"{rlabel}: no value yet"])
        v = {Outcome.SAME: V.TRUE, Outcome.DIFFERENT: V.FALSE}.get(c.outcome, V.UNKNOWN)
        if not want_same:
            v = _not(v)
        sym = {Outcome.SAME: "≈", Outcome.DIFFERENT: "≠"}.get(c.outcome)
        short = f"{label} {fmt(m.value)} {sym} {rlabel}" if sym else f"{label} {fmt(m.value)} vs {rlabel}: can't tell"
        return Result(v, [describe(c, rlabel)], list(keys), needed=needs(c), measure=m, short=[short])

    def judged(word: str, target: Any) -> Result:
        """better_than / worse_than / no_worse_than / passes / fails, for the metric's direction."""
        c, rlabel, _ = against(target, use_margin=word not in ("passes", "fails"))
        if c is None:
            return Result(V.NODATA, [f"{rlabel}: no value yet"])
        verdict = stats.judge(c, word, direction)
        v = V.UNKNOWN if verdict is None else V.TRUE if verdict else V.FALSE
        up = c.delta > 0 if direction == "higher" else c.delta < 0
        how = ("better than" if up else "worse than") if c.outcome is Outcome.DIFFERENT else (
            "≈" if c.outcome is Outcome.SAME and verdict is not None else None)
        short = f"{label} {fmt(m.value)} {how} {rlabel}" if how else f"{label} {fmt(m.value)} vs {rlabel}: can't tell"
        return Result(v, [f"{describe(c, rlabel)}; {better}"], list(keys), needed=needs(c), measure=m, short=[short])

    if cond.at_least is not None:
        results.append(threshold("at_least", cond.at_least))
    if cond.below is not None:
        results.append(threshold("below", cond.below))
    if cond.between is not None:
        results.append(threshold("at_least", cond.between[0]))
        results.append(threshold("below", cond.between[1]))
    if cond.same_as is not None:
        results.append(same(cond.same_as, True))
    if cond.differs_from is not None:
        results.append(same(cond.differs_from, False))
    for word in ("passes", "fails", "better_than", "worse_than", "no_worse_than"):
        target = getattr(cond, word)
        if target is not None:
            results.append(judged(word, target))
    if cond.recovers is not None:
        # no worse than good, and better than bad (for the metric's direction)
        good, bad = judged("no_worse_than", "good"), judged("better_than", "bad")
        v = _and([good, bad])
        r = Result(v if cond.recovers else _not(v))
        _merge(r, [good, bad])
        results.append(r)
    out = Result(_and(results))
    _merge(out, results)
    out.measure = m
    return out


def _within_benchmark(needed: str, n_max: Optional[int]) -> str:
    """Advice that can be followed: an n beyond the benchmark's size becomes full repeats, or none."""
    import math
    import re

    found = re.match(r"n ≥ ([\d,]+)", needed)
    if n_max is None or not found or int(found.group(1).replace(",", "")) <= n_max:
        return needed
    n = int(found.group(1).replace(",", ""))
    return (f"{math.ceil(n / n_max)} repeats of the full benchmark (n ≥ {n:,} beyond its {n_max:,}), if each "
            "repeat samples afresh; else the benchmark cannot decide it")
