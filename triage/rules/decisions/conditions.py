"""Conditions over runs: selectors, noise-aware comparisons, all/any/not (four-valued logic)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any, Iterable, Optional, Sequence

from triage.rules.decisions import stats
from triage.rules.engine.chained import Chained, Part, merged
from triage.rules.engine.context import FAIL_RATE, Context, num
from triage.rules.engine.records import (
    Result,
    RunRec,
    V,
)
from triage.rules.language.schema import (
    Condition,
    Selector,
    outcome,
)
from triage.rules.decisions.stats import Measure, Outcome, fmt_delta

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


def statuses(given: "str | list[str]") -> set[str]:
    """The stored statuses a `status:` names: each outcome, and `error` with `infra` (the older word)."""
    wanted = {outcome(s) for s in ([given] if isinstance(given, str) else given)}
    return wanted | {"error"} if "infra" in wanted else wanted


def _merge(into: Result, results: Iterable[Result]) -> None:
    # Each list once, its first occurrences in order, through a dict (in C): a rule over
    # thousands of runs merges thousands of keys.
    results = list(results)
    for r in results:
        into.parts += r.parts
        into.measure = into.measure or r.measure
    for name in ("runs", "invalid", "needed", "short"):
        mine = getattr(into, name)
        theirs = [getattr(r, name) for r in results]
        if not any(theirs):
            continue
        if name == "runs" and any(isinstance(x, Chained) for x in (mine, *theirs)):
            into.runs = merged([(None, x) for x in (mine, *theirs)])  # pools kept whole
        else:
            mine[:] = dict.fromkeys(chain(mine, *theirs))
    if into.value in (V.TRUE, V.FALSE):
        into.needed = []  # decided: what would decide a part that did not matter is no advice


_BISECT_KEYS = {"bisect", "first_bad", "last_good", "done"}


def evaluate_condition(cond: Condition, ctx: Context, selection: Optional[list[RunRec]]) -> Result:
    """Evaluate a condition over a selection of runs (None: all runs)."""
    if cond.bisect is not None and cond.model_fields_set <= _BISECT_KEYS:
        return _on_bisect(cond, ctx)  # about a bisect, not about runs
    sel = selection
    if cond.config is not None or cond.run is not None or cond.provenance:
        sel = ctx.select(cond, None if (cond.config is not None or cond.run is not None) else selection)
    # With no selection from the context or a selector, `all`/`any`/`not` leave
    # each part to choose its runs; only what this node compares looks at them all.
    free = sel is None and cond.status is None
    if sel is None:
        looks = (bool(cond.comparisons()) or cond.min_runs is not None or cond.status is not None
                 or cond.count is not None or cond.distinct is not None
                 or not (cond.all or cond.any or cond.not_ is not None))
        sel = list(ctx.runs) if looks else []
    anything = any(ctx.valid(r) for r in sel)  # before the status filter, for counting
    explicitly_invalid: set[str] = set()
    if cond.status is not None:
        wanted = statuses(cond.status)
        sel = [r for r in sel if r.status in wanted]
        explicitly_invalid = wanted - ctx.results  # asked for by name: they count here
    sub_sel = None if free else sel
    valid, invalid = [], []
    for r in sel:
        if ctx.valid(r) or (r.status in explicitly_invalid and not r.excluded):
            valid.append(r)
        else:
            invalid.append((r.key, r.config, ctx.invalid_reason(r, brief=True)))

    results: list[Result] = []
    if cond.min_runs is not None and len(valid) < cond.min_runs:
        results.append(Result(V.NODATA, [f"needs {cond.min_runs} valid runs, has {len(valid)}"]))
    comparisons = cond.comparisons()
    if comparisons:
        results.append(_compare(cond, ctx, valid))
    if cond.count is not None or cond.distinct is not None:
        results.append(_count(cond, valid) if anything else Result(V.NODATA))
    if cond.bisect is not None:
        results.append(_on_bisect(cond, ctx))
    for key in ("all", "any"):
        subs = getattr(cond, key)
        if subs:
            sub_results = [evaluate_condition(c, ctx, sub_sel) for c in subs]
            combined = Result(_and(sub_results) if key == "all" else _or(sub_results))
            _merge(combined, sub_results)
            results.append(combined)
    if cond.not_ is not None:
        sub = evaluate_condition(cond.not_, ctx, sub_sel)
        neg = Result(_not(sub.value))
        _merge(neg, [sub])
        results.append(neg)
    if not results:  # only selectors: true when there is such a valid run
        results.append(
            Result(V.TRUE if valid else V.NODATA, [], [r.key for r in valid])
        )
    out = Result(_and(results))
    _merge(out, results)
    if _reads_runs(cond):
        merged = set(out.invalid)
        out.invalid = [x for x in invalid if x not in merged] + out.invalid
    return out


_RUN_KEYS = {"config", "run", "provenance", "status", "metric", "at_least", "below", "between", "same_as",
             "differs_from", "recovers", "min_runs", "count", "distinct"}


def _reads_runs(cond: Condition) -> bool:
    """False for a condition only about bisects (its invalid runs are none of its business)."""
    if cond.model_fields_set & _RUN_KEYS:
        return True
    return any(_reads_runs(c) for c in cond.parts()) or not cond.bisects()


def _count(cond: Condition, valid: list[RunRec]) -> Result:
    """`count: N` valid runs, or `distinct: KEY` with `at_least: N` values of a provenance key.

    Never false: while more runs could still reach the count, it is not known yet (can't tell,
    with how many more runs would decide it)."""
    keys = [r.key for r in valid]
    results = []
    if cond.count is not None:
        ok = len(valid) >= cond.count
        text = f"{len(valid)} valid run{'s' if len(valid) != 1 else ''} {'≥' if ok else 'of'} {cond.count}"
        more = cond.count - len(valid)
        needed = [] if ok else [f"{more} more valid run{'s' if more != 1 else ''}"]
        results.append(Result(V.TRUE if ok else V.UNKNOWN, [text], keys, needed=needed, short=[text]))
    if cond.distinct is not None:
        values = sorted({str(r.provenance[cond.distinct]) for r in valid if cond.distinct in r.provenance})
        need = int(float(cond.at_least or 1))
        ok = len(values) >= need
        text = f"{len(values)} distinct {cond.distinct} {'≥' if ok else 'of'} {need}"
        detail = text + (f" ({', '.join(values)})" if values else "")
        with_key = [r.key for r in valid if cond.distinct in r.provenance]
        more = need - len(values)
        needed = [] if ok else [f"runs on {more} more {cond.distinct} value{'s' if more != 1 else ''}"]
        results.append(Result(V.TRUE if ok else V.UNKNOWN, [detail], with_key, needed=needed, short=[text]))
    out = Result(_and(results))
    _merge(out, results)
    return out


def _on_bisect(cond: Condition, ctx: Context) -> Result:
    """`{bisect: ID, first_bad: P}`, `last_good: P` or `done: true` over a bisect's state.

    Once the bisect has converged (last good and first bad adjacent) the
    answer is plain; before, a point the bisect has already excluded is false
    and one it may still land on is not known yet (no data)."""
    b = ctx.bisects.get(cond.bisect or "")
    if b is None:
        return Result(V.NODATA, [f"bisect {cond.bisect}: not evaluated"])
    labels = [p.label for p in b.points]
    runs = [k for p in b.points if p.label in (b.last_good, b.first_bad) for k in p.runs]
    where = f"bisect {b.id}: last good {b.last_good or 'none yet'}, first bad {b.first_bad or 'none yet'}"
    where += "" if b.done else " (not converged)"
    if cond.done is not None:
        v = V.TRUE if b.done == cond.done else V.FALSE
        return Result(v, [where], runs, short=[f"bisect {b.id} {'done' if b.done else 'not done'}"])
    key = "first_bad" if cond.first_bad is not None else "last_good"
    want = cond.first_bad if key == "first_bad" else cond.last_good
    have = getattr(b, key)
    lo = labels.index(b.last_good) if b.last_good in labels else -1
    hi = labels.index(b.first_bad) if b.first_bad in labels else len(labels)
    i = labels.index(want) if want in labels else None
    if b.done or i is None:
        v = V.TRUE if have == want else V.FALSE
    elif (lo < i <= min(hi, len(labels) - 1)) if key == "first_bad" else (max(lo, 0) <= i < hi):
        v = V.NODATA  # the bisect may still land there
    else:
        v = V.FALSE
    word = key.replace("_", " ")
    return Result(v, [where], runs, short=[f"bisect {b.id}: {word} {have or 'none yet'}"])


@dataclass
class _Subject:
    """What a comparing node compares: its runs' measure of a metric, as the report shows it,
    and how it is judged (confidence, direction, the benchmark's size)."""

    cond: Condition
    ctx: Context
    metric: str
    m: Measure
    label: str
    value: str
    keys: list[str]  # the compared runs
    direction: str
    n_max: Optional[int]
    pooled: list[Part] = field(default_factory=list)  # each reference's runs as a comparison reads them
    piece: Optional[str] = None  # the compared runs' keys as a kept pool holds them (compare_pooled)

    def runs(self) -> Any:
        """The compared runs, then each reference's (a pool kept whole: :mod:`triage.rules.engine.chained`)."""
        if self.pooled or self.piece is not None:
            return merged([(self.piece, self.keys), *self.pooled])
        return list(self.keys)

    def needs(self, c: Any) -> list[str]:
        return [_within_benchmark(c.needed, self.n_max)] if c.needed else []

    def margin_for(self, ref: Measure) -> Optional[float]:
        if self.cond.margin is not None:
            return stats.Tolerance.parse(self.cond.margin).absolute(ref.value)
        return self.ctx.margin


def _subject(cond: Condition, ctx: Context, valid: list[RunRec]) -> Optional[_Subject]:
    """The measure a comparing node judges; None when no valid run has its metric."""
    metric = cond.metric or ctx.spec.metric
    with_metric = [r for r in valid if ctx.has_metric(r, metric)]
    if not with_metric:
        return None
    m = ctx.measure(with_metric, metric)
    assert m is not None
    label = ctx.label(with_metric, counted=metric == FAIL_RATE)
    if metric != ctx.spec.metric:
        label = f"{label} {metric}"
    return _Subject(cond, ctx, metric, m, label, ctx.shown(m, metric), [r.key for r in with_metric],
                    ctx.direction(metric), ctx.settings(metric).n_max)


def _verdict(holds: Optional[bool]) -> V:
    """A three-way verdict as a value: holds, contradicted, or can't tell."""
    return V.UNKNOWN if holds is None else V.TRUE if holds else V.FALSE


def _threshold(s: _Subject, kind: str, bound: Any) -> Result:
    """`at_least` / `below` a number, the gate or a reference's value."""
    limit, blabel = s.ctx.bound(bound)
    if limit is None:
        return Result(V.NODATA, [f"{blabel}: no value yet"])
    check = (stats.at_least if kind == "at_least" else stats.below)(s.m, limit, confidence=s.ctx.confidence,
                                                                     tolerance=s.ctx.tolerance)
    sym_true, sym_false = (("≥", "<") if kind == "at_least" else ("<", "≥"))
    if check.result is None:
        text = f"{s.label} {num(s.m.value)} vs {blabel}: can't tell ({check.noise})"
        return Result(V.UNKNOWN, [text], s.runs(), needed=s.needs(check), measure=s.m,
                      short=[f"{s.label} {num(s.m.value)} vs {blabel}: can't tell"])
    sym = sym_true if check.result else sym_false
    noise = f" ({check.noise})" if check.band else ""
    short = f"{s.label} {num(s.m.value)} {sym} {blabel}"
    return Result(_verdict(check.result), [short + noise], s.runs(), measure=s.m, short=[short])


def _reference(s: _Subject, target: Any) -> tuple[Optional[Measure], str]:
    """What a comparison is against: a number or the gate, a named reference, or other runs
    (whose keys join the subject's); None with why when there is nothing to compare with."""
    ctx, metric = s.ctx, s.metric
    if isinstance(target, (int, float)) or target == "gate":
        limit, rlabel = ctx.bound(target)
        return (Measure(limit, fixed=True) if limit is not None else None), rlabel
    if isinstance(target, str):
        return ctx.refs.get(target, (None, target))
    # the selector's runs pooled once per evaluation, less those compared
    count, own, ref, pooled, pooled_keys, piece = ctx.pool(target, metric, s.runs())
    if not count:
        what = ctx.label(ctx.select(target)) or "the other runs"
        if own:
            return None, f"{what} (the same runs as compared: name other runs)"
        return None, f"{what} (no valid run)"
    assert ref is not None
    rlabel = f"{pooled} {ctx.shown(ref, metric)}"
    s.pooled.append((piece, pooled_keys))  # none of them is among the compared runs
    return ref, rlabel


def _against(s: _Subject, target: Any, use_margin: bool = True) -> tuple[Optional[stats.Comparison], str]:
    ref, rlabel = _reference(s, target)
    if ref is None:
        return None, rlabel
    c = stats.compare(s.m, ref, margin=s.margin_for(ref) if use_margin else None, tolerance=s.ctx.tolerance,
                      confidence=s.ctx.confidence)
    return _other_side(c, ref, target, s.ctx), rlabel


#: Advice that asks for repeats on both sides of a comparison (:func:`triage.rules.decisions.stats.compare`).
PER_SIDE = re.compile(r"≥ ([\d,]+) repeats per side$")
#: That advice, with the other side's runs where it has fewer (:func:`_other_side`), and the subject
#: it was for, if any (:mod:`triage.rules.engine.subjects`): k, the other side's name and runs, the subject.
OTHER_SIDE = r"≥ ([\d,]+) repeats per side \((.+) has ([\d,]+)\)(?: for (.+))?$"


def _other_side(c: stats.Comparison, ref: Measure, target: Any, ctx: Context) -> stats.Comparison:
    """``c``, its advice "≥ k repeats per side" saying how many runs the other side has when
    that side is runs of a config, which more runs of it can join, and it has fewer: the
    compared runs alone, repeated, would not decide it (read back by
    :func:`triage.rules.next.suggest._wanted`)."""
    found = PER_SIDE.search(c.needed or "")
    if found is None or ref.fixed or ref.runs >= int(found.group(1).replace(",", "")):
        return c
    name = _repeatable(target, ctx)
    if name is None:
        return c
    return replace(c, needed=f"{c.needed} ({name} has {ref.runs:,})")


def _repeatable(target: Any, ctx: Context) -> Optional[str]:
    """The config (and provenance) of what a comparison is against, if it is a config's runs
    that a new run of the config joins: a reference of a config's runs (not its newest alone),
    or a selector of one config; None for a run, runs named by id, or several configs.  Named
    by its config, the one name of the runs to add, however the rules name them."""
    if isinstance(target, str):
        spec = ctx.spec.references.get(target)
        if spec is None or spec.config is None or spec.newest:
            return None
        config, where = spec.config, spec.where
    else:
        config, where = getattr(target, "config", None), getattr(target, "provenance", None) or {}
        if not isinstance(config, str) or getattr(target, "run", None) is not None:
            return None
    said = ", ".join(f"{k}={'|'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in where.items())
    return f"{config} with {said}" if said else config


def _describe(s: _Subject, c: stats.Comparison, rlabel: str) -> str:
    head = f"{s.label} {s.value} vs {rlabel}: Δ {fmt_delta(c.delta)}"
    what = "tolerance" if c.method == "tolerance" else "noise"
    if c.outcome is Outcome.SAME:
        return f"{head}, within {what} ({c.noise})"
    if c.outcome is Outcome.DIFFERENT:
        return f"{head}, beyond {what} ({c.noise})"
    return f"{head}, can't tell ({c.noise})"


def _same(s: _Subject, target: Any, want_same: bool) -> Result:
    """`same_as` / `differs_from`: within the margin, or wholly outside it."""
    c, rlabel = _against(s, target)
    if c is None:
        return Result(V.NODATA, [f"{rlabel}: no value yet"])
    v = _verdict(stats.judge(c, "same_as" if want_same else "differs_from"))
    sym = "≈" if c.outcome is Outcome.SAME else "≠" if c.beyond_margin else None
    short = f"{s.label} {s.value} {sym} {rlabel}" if sym else f"{s.label} {s.value} vs {rlabel}: can't tell"
    return Result(v, [_describe(s, c, rlabel)], s.runs(), needed=s.needs(c), measure=s.m, short=[short])


def _judged(s: _Subject, word: str, target: Any) -> Result:
    """better_than / worse_than / no_worse_than / passes / fails, for the metric's direction."""
    c, rlabel = _against(s, target, use_margin=word not in ("passes", "fails"))
    if c is None:
        return Result(V.NODATA, [f"{rlabel}: no value yet"])
    verdict = stats.judge(c, word, s.direction)
    up = c.delta > 0 if s.direction == "higher" else c.delta < 0
    how = ("better than" if up else "worse than") if c.different else (
        "≈" if c.outcome is Outcome.SAME and verdict is not None else None)
    if how is None and verdict is False:
        how = "not better than" if word == "better_than" else "not worse than"
    elif how is None and verdict is True and word == "no_worse_than":
        how = "not worse than"  # held without being shown different: not "can't tell"
    short = f"{s.label} {s.value} {how} {rlabel}" if how else f"{s.label} {s.value} vs {rlabel}: can't tell"
    return Result(_verdict(verdict), [_describe(s, c, rlabel), f"{s.direction} is better"], s.runs(),
                  needed=s.needs(c), measure=s.m, short=[short])


def _recovers(s: _Subject, wanted: bool) -> Result:
    """No worse than good, and better than bad (for the metric's direction); `recovers: false` the opposite."""
    good, bad = _judged(s, "no_worse_than", "good"), _judged(s, "better_than", "bad")
    v = _and([good, bad])
    r = Result(v if wanted else _not(v))
    _merge(r, [good, bad])
    return r


#: What a node that only compares its runs may set (:func:`compares_only`).
_COMPARING = {"metric", "at_least", "below", "between", "same_as", "differs_from", "recovers", "passes", "fails",
              "better_than", "worse_than", "no_worse_than", "margin"}


def compares_only(cond: Condition, ctx: Context, *, configs: bool = False) -> bool:
    """Whether ``cond`` only compares the runs it is given (``configs``: or those of the configs
    it names; no other selector, status, count, bisect or parts), of a metric of values, in an
    investigation without subjects: then :func:`compare_pooled` says what
    :func:`evaluate_condition` would."""
    fields = cond.model_fields_set - {"config"} if configs and cond.config is not None else cond.model_fields_set
    return (ctx.spec.subject is None and fields <= _COMPARING and bool(cond.comparisons())
            and (cond.metric or ctx.spec.metric) != FAIL_RATE)


def compare_pooled(cond: Condition, ctx: Context, configs: Sequence[str], invalid: list[tuple[str, str, str]]) -> Result:
    """:func:`evaluate_condition` of a node that :func:`compares_only`, given the runs of
    ``configs`` (one after the other, as a selector of them reads them): from each config's
    pool (:meth:`Context.pool`: kept as a piece, it reads none of them) and their runs that decide
    nothing (``invalid``: key, config and why in brief, in the same order).  A recipe's
    prediction, or a rule of some configs, worked out again because its base changed then reads
    none of their runs."""
    metric = cond.metric or ctx.spec.metric
    s = _pooled_subject(cond, ctx, configs, metric)
    results = [_compared(cond, s)]
    out = Result(_and(results))
    _merge(out, results)
    merged_invalid = set(out.invalid)
    out.invalid = [x for x in invalid if x not in merged_invalid] + out.invalid
    return out


def _pooled_subject(cond: Condition, ctx: Context, configs: Sequence[str], metric: str) -> Optional[_Subject]:
    """:func:`_subject` of the valid runs of ``configs`` with ``metric``, from their pools."""
    if len(configs) == 1:
        count, _, m, label, keys, piece = ctx.pool(Selector.model_construct(config=configs[0]), metric)
    else:
        kept = [(p, name) for p, name in ctx.kept_pools(configs, metric) if p.count]
        count = sum(p.count for p, _ in kept)
        if count:  # the values in the order a selector of the configs reads them, as _subject pools them
            m = ctx.measure_values([v for p, _ in kept for v in p.values], {n for p, _ in kept for n in p.ns}, metric)
            label = ctx.label_of(sorted(p.config for p, _ in kept), count)
            keys, piece = (kept[0][0].keys, kept[0][1]) if len(kept) == 1 else (
                merged([(name, p.keys) for p, name in kept]), None)
    if not count:
        return None
    assert m is not None
    label = label if metric == ctx.spec.metric else f"{label} {metric}"
    return _Subject(cond, ctx, metric, m, label, ctx.shown(m, metric), keys, ctx.direction(metric),
                    ctx.settings(metric).n_max, piece=piece)


def _compare(cond: Condition, ctx: Context, valid: list[RunRec]) -> Result:
    """Every comparison a node makes of its runs' measure, each three-way, joined by `all`."""
    return _compared(cond, _subject(cond, ctx, valid))


def _compared(cond: Condition, s: Optional[_Subject]) -> Result:
    """:func:`_compare` of a subject (None: no valid run has the metric)."""
    if s is None:
        return Result(V.NODATA)
    results: list[Result] = []
    if cond.at_least is not None:
        results.append(_threshold(s, "at_least", cond.at_least))
    if cond.below is not None:
        results.append(_threshold(s, "below", cond.below))
    if cond.between is not None:
        results.append(_threshold(s, "at_least", cond.between[0]))
        results.append(_threshold(s, "below", cond.between[1]))
    if cond.same_as is not None:
        results.append(_same(s, cond.same_as, True))
    if cond.differs_from is not None:
        results.append(_same(s, cond.differs_from, False))
    for word in ("passes", "fails", "better_than", "worse_than", "no_worse_than"):
        target = getattr(cond, word)
        if target is not None:
            results.append(_judged(s, word, target))
    if cond.recovers is not None:
        results.append(_recovers(s, cond.recovers))
    out = Result(_and(results))
    _merge(out, results)
    out.measure = s.m
    return out


#: What :func:`_within_benchmark` writes, as the suggestions read it back: the repeats of the
#: full benchmark, and its size.
FULL_BENCHMARK = r"([\d,]+) repeats of the full benchmark \(n ≥ [\d,]+ beyond its ([\d,]+)\)"


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
