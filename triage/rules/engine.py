"""The rule engine: records in, evidence and statuses out.

A pure function of its inputs (no database, no clock, no network), so an
evaluation can be tested with plain objects and replayed offline.

Conditions evaluate to one of four values: TRUE, FALSE, UNKNOWN (the numbers
cannot tell, noise-aware) and NODATA (nothing to look at yet).  A rule fires
on TRUE (its verdict) and on UNKNOWN (inconclusive, with what would decide
it).  A recipe's prediction is a rule both ways: contradicted, it rules the
hypothesis out; a predicted recovery that happens confirms it; any other
prediction that comes true only supports it.  Crashed, errored, cancelled,
excluded and signature-matched runs never decide anything: each one a rule
looks at yields inconclusive evidence saying why.

Beyond statuses, the same pass classifies every bisect point (good, bad,
can't tell, flaky, skipped, untested) and names the next one; finds recipe
runs confounded by a variable their recipe does not declare; says where each
recipe stands; and ranks what to run next.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Iterable, Mapping, Optional, Sequence

from triage.rules import stats
from triage.rules.schema import (
    INVALID_STATUSES,
    BisectSpec,
    Condition,
    HypothesisSpec,
    InvestigationSpec,
    ManualEvidenceSpec,
    RecipeSpec,
    RuleSpec,
    Selector,
)
from triage.rules.stats import Measure, Outcome, fmt, fmt_delta


class V(Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"
    NODATA = "nodata"


@dataclass(frozen=True)
class RunRec:
    """A run as the engine sees it."""

    run_id: str
    config: str
    status: str
    metrics: Mapping[str, tuple[float, Optional[int]]] = field(default_factory=dict)
    provenance: Mapping[str, str] = field(default_factory=dict)
    url: Optional[str] = None
    time: Optional[str] = None
    note: Optional[str] = None
    excluded: bool = False
    excluded_reason: Optional[str] = None
    signature: Optional[str] = None

    @property
    def key(self) -> str:
        return f"{self.run_id}/{self.config}"


@dataclass(frozen=True)
class SignatureInfo:
    id: str
    cls: str
    meaning: str = ""
    remedy: str = ""


@dataclass(frozen=True)
class EvidenceItem:
    hypothesis: str
    rule: str  # rule id, "predicts:<recipe>", "manual", "parent:<id>"
    verdict: str  # rules_out | confirms | supports | inconclusive
    reason: str
    runs: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    summary: str = ""  # the reason in a few words, for the elimination summary
    needed: tuple[str, ...] = ()  # for a can't-tell reading: what would decide it

    @property
    def key(self) -> str:
        return "|".join((self.hypothesis, self.rule, self.verdict, ",".join(self.runs), self.reason))

    @property
    def counts(self) -> bool:
        return "superseded" not in self.flags


@dataclass(frozen=True)
class PointState:
    label: str
    state: str  # good | bad | untested | skipped | unknown | flaky
    runs: tuple[str, ...] = ()
    reason: str = ""
    value: Optional[float] = None  # the measured metric (pooled over the point's valid runs)
    needed: tuple[str, ...] = ()  # for a can't-tell point: what would decide it


@dataclass(frozen=True)
class BisectState:
    id: str
    title: str
    axis: str
    points: tuple[PointState, ...]
    last_good: Optional[str]
    first_bad: Optional[str]
    next: Optional[str]
    remaining: tuple[str, ...]
    steps: int
    notes: tuple[str, ...] = ()
    ends: str = ""  # the check that the good end is good and the bad end bad
    ends_ok: bool = False
    command: Optional[str] = None  # the bisect's `run:` for the next point
    done: bool = False  # last good and first bad are adjacent


@dataclass(frozen=True)
class Confound:
    """A recipe's run that differs from its base in a variable it does not declare."""

    run: str  # run key
    recipe: str
    key: str
    value: str
    base_value: Optional[str]  # None: the recipe declares `key` but the run recorded another value
    base_run: Optional[str] = None
    declared: Optional[str] = None  # the value the recipe declares for `key`

    def message(self, ctx: "Context") -> str:
        run_id, _, config = self.run.partition("/")
        head = f"run {run_id} ({ctx.short(config)})"
        if self.base_value is None:
            return (f"{head}: the recipe sets {self.key}={self.declared}, the run recorded "
                    f"{self.key}={self.value}: the change was not applied as declared")
        base_id, _, base_config = (self.base_run or "").partition("/")
        return (f"{head}: {self.key} is {self.value}, its base {ctx.short(base_config)} ({base_id}) ran "
                f"{self.base_value}; the recipe does not declare {self.key}")


@dataclass(frozen=True)
class RecipeState:
    """Where a recipe stands: never run, no valid run, can't tell, or run (decided)."""

    recipe: str
    state: str  # never-run | no-valid-run | cant-tell | run
    runs: tuple[str, ...] = ()
    valid: tuple[str, ...] = ()
    why: str = ""  # for no-valid-run: the newest attempt's failure; for cant-tell: the reading
    needed: tuple[str, ...] = ()  # for cant-tell: what would decide it
    blocked: str = ""  # a failure that a plain re-run will not fix, with its remedy
    confounded: tuple[str, ...] = ()  # confounded provenance keys of its runs


@dataclass(frozen=True)
class Suggestion:
    recipe: str
    tests: tuple[str, ...]
    why: str
    command: Optional[str]
    score: float
    kind: str = "recipe"  # recipe | bisect
    state: str = ""  # never run / no valid run yet (…) / can't tell yet / bisect step
    outcomes: tuple[str, ...] = ()  # "recovers to good ⇒ a confirmed, b ruled out", …
    advice: str = ""  # what to change before running it (samples, repeats, a remedy)


@dataclass(frozen=True)
class Warning_:
    kind: str
    message: str


@dataclass
class Investigation:
    """Everything the engine needs about one investigation."""

    spec: InvestigationSpec
    hypotheses: Sequence[HypothesisSpec] = ()
    recipes: Sequence[RecipeSpec] = ()
    rules: Sequence[RuleSpec] = ()
    evidence: Sequence[ManualEvidenceSpec] = ()
    bisects: Sequence[BisectSpec] = ()
    runs: Sequence[RunRec] = ()
    signatures: Mapping[str, SignatureInfo] = field(default_factory=dict)


@dataclass
class Evaluation:
    evidence: list[EvidenceItem]
    statuses: dict[str, str]
    references: dict[str, tuple[Optional[Measure], str]]
    readings: dict[str, str]
    bisects: list[BisectState]
    suggestions: list[Suggestion]
    warnings: list[Warning_]
    untested: list[str]
    recipes: list[RecipeState] = field(default_factory=list)
    confounds: list[Confound] = field(default_factory=list)
    # open children of a confirmed parent: the next level to decide
    next_level: dict[str, list[str]] = field(default_factory=dict)
    invalid: dict[str, str] = field(default_factory=dict)  # run key -> why it decides nothing


# --------------------------------------------------------------------------
# Evaluation context


@dataclass
class Result:
    value: V
    parts: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)
    measure: Optional[Measure] = None
    short: list[str] = field(default_factory=list)


class Context:
    def __init__(self, inv: Investigation) -> None:
        self.inv = inv
        self.spec = inv.spec
        self.runs = list(inv.runs)
        self.by_config: dict[str, list[RunRec]] = {}
        self.by_key: dict[str, RunRec] = {}  # "run_id/config" -> the run (the first, as a scan would find)
        for r in self.runs:
            self.by_config.setdefault(r.config, []).append(r)
            self.by_key.setdefault(f"{r.run_id}/{r.config}", r)
        self.tolerance = stats.Tolerance.parse(self.spec.tolerance) if self.spec.tolerance is not None else None
        self.confidence = self.spec.confidence
        self.refs: dict[str, tuple[Optional[Measure], str]] = {}
        for name, ref in self.spec.references.items():
            self.refs[name] = self._resolve_reference(name, ref)
        good, bad = self.refs.get("good", (None, "")), self.refs.get("bad", (None, ""))
        self.margin: Optional[float] = None
        if good[0] is not None and bad[0] is not None:
            self.margin = abs(good[0].value - bad[0].value) / 2 or None

    # -- runs -------------------------------------------------------------
    def invalid_reason(self, run: RunRec, brief: bool = False) -> Optional[str]:
        """Why a run cannot decide anything, or None for a valid run."""
        if run.excluded:
            return f"excluded: {run.excluded_reason or 'no reason given'}"
        if run.signature:
            sig = self.inv.signatures.get(run.signature)
            if sig is None:
                return f"{run.status}, matched known failure {run.signature}"
            text = f"{run.status}, known failure {sig.id} ({sig.cls})"
            if brief:
                return text
            if sig.meaning:
                text += f": {sig.meaning}"
            if sig.remedy:
                text += f"; remedy: {sig.remedy}"
            return text
        if run.status in INVALID_STATUSES:
            return f"{run.status}" + (f" ({run.note})" if run.note and not brief else "")
        return None

    def short(self, config: str) -> str:
        prefix = self.spec.config_prefix
        if prefix and config.startswith(prefix) and len(config) > len(prefix):
            return config[len(prefix):]
        return config

    def select(self, sel: Selector, base: Optional[list[RunRec]] = None) -> list[RunRec]:
        runs = self.runs if base is None else base
        if sel.config is not None:
            configs = [sel.config] if isinstance(sel.config, str) else sel.config
            runs = [r for c in configs for r in self.by_config.get(c, [])]
        if sel.run is not None:
            ids = {sel.run} if isinstance(sel.run, str) else set(sel.run)
            runs = [r for r in runs if r.run_id in ids or r.key in ids]
        if sel.provenance:
            runs = [r for r in runs if _provenance_matches(r, sel.provenance)]
        return runs

    def measure(self, runs: Sequence[RunRec], metric: str) -> Optional[Measure]:
        vals = [r.metrics[metric] for r in runs if metric in r.metrics]
        if not vals:
            return None
        ns = {n for _, n in vals}
        n = ns.pop() if len(ns) == 1 else None
        return Measure.of([v for v, _ in vals], n)

    def label(self, runs: Sequence[RunRec]) -> str:
        configs = sorted({r.config for r in runs})
        if len(configs) == 1:
            text = self.short(configs[0])
            return text if len(runs) == 1 else f"{text} (×{len(runs)})"
        return ", ".join(self.short(c) for c in configs)

    def _resolve_reference(self, name: str, ref: Any) -> tuple[Optional[Measure], str]:
        metric = self.spec.metric
        if ref.value is not None:
            return Measure(ref.value, ref.n), f"{name} {fmt(ref.value)}"
        if ref.run is not None:
            runs = [r for r in self.runs if (r.run_id == ref.run or r.key == ref.run)]
        else:
            runs = self.by_config.get(ref.config, [])
        runs = [r for r in runs if self.invalid_reason(r) is None and metric in r.metrics]
        if not runs:
            return None, f"{name} (no valid run yet)"
        newest = max(runs, key=_run_order)
        m = self.measure([newest], metric)
        return m, f"{name} {fmt(m.value)}" if m else name

    # -- bounds -----------------------------------------------------------
    def bound(self, b: Any) -> tuple[Optional[float], str]:
        if isinstance(b, (int, float)):
            return float(b), num(float(b))
        if b == "gate":
            return self.spec.gate, f"gate {fmt(self.spec.gate)}" if self.spec.gate is not None else "gate"
        m, label = self.refs.get(b, (None, b))
        return (m.value if m else None), label


def num(x: float) -> str:
    """A metric value for a sentence: whole numbers (probe counts) stay whole."""
    if float(x).is_integer() and abs(x) < 1e9:
        return str(int(x))
    return fmt(x)


def _run_order(r: RunRec) -> tuple:
    rid = r.run_id
    return (r.time or "", len(rid) if rid.isdigit() else 0, rid)


def _provenance_matches(run: RunRec, want: Mapping[str, Any]) -> bool:
    for k, v in want.items():
        have = run.provenance.get(k)
        options = v if isinstance(v, list) else [v]
        if have is None or str(have) not in {str(o) for o in options}:
            return False
    return True


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
    with_metric = [r for r in valid if metric in r.metrics]
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

    def threshold(kind: str, bound: Any) -> Result:
        limit, blabel = ctx.bound(bound)
        if limit is None:
            return Result(V.NODATA, [f"{blabel}: no value yet"])
        check = stats.at_least(m, limit, confidence=conf) if kind == "at_least" else stats.below(m, limit, confidence=conf)
        sym_true, sym_false = (("≥", "<") if kind == "at_least" else ("<", "≥"))
        if check.result is None:
            text = f"{label} {num(m.value)} vs {blabel}: can't tell ({check.noise})"
            return Result(V.UNKNOWN, [text], keys, needed=[check.needed] if check.needed else [], measure=m,
                          short=[f"{label} {num(m.value)} vs {blabel}: can't tell"])
        sym = sym_true if check.result else sym_false
        noise = f" ({check.noise})" if check.band else ""
        short = f"{label} {num(m.value)} {sym} {blabel}"
        return Result(V.TRUE if check.result else V.FALSE, [short + noise], keys, measure=m, short=[short])

    def against(target: Any) -> tuple[Optional[stats.Comparison], str, Optional[Measure]]:
        if isinstance(target, str):
            ref, rlabel = ctx.refs.get(target, (None, target))
            if ref is None:
                return None, rlabel, None
            return stats.compare(m, ref, margin=ctx.margin, tolerance=ctx.tolerance, confidence=conf), rlabel, ref
        runs = [r for r in ctx.select(target) if ctx.invalid_reason(r) is None and metric in r.metrics]
        runs = [r for r in runs if r.key not in keys]
        if not runs:
            return None, f"{ctx.label(ctx.select(target)) or 'the other runs'} (no valid run)", None
        other = ctx.measure(runs, metric)
        assert other is not None
        rlabel = f"{ctx.label(runs)} {fmt(other.value)}"
        keys.extend(r.key for r in runs if r.key not in keys)
        return stats.compare(m, other, margin=ctx.margin, tolerance=ctx.tolerance, confidence=conf), rlabel, other

    def describe(c: stats.Comparison, rlabel: str) -> str:
        head = f"{label} {fmt(m.value)} vs {rlabel}: Δ {fmt_delta(c.delta)}"
        if c.outcome is Outcome.SAME:
            return f"{head}, within {'noise' if c.band is not None else 'tolerance'} ({c.noise})"
        if c.outcome is Outcome.DIFFERENT:
            return f"{head}, beyond {'noise' if c.band is not None else 'tolerance'} ({c.noise})"
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
        return Result(v, [describe(c, rlabel)], list(keys), needed=[c.needed] if c.needed else [], measure=m,
                      short=[short])

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
    if cond.recovers is not None:
        good, bad = same("good", True), same("bad", False)
        v = _and([good, bad])
        r = Result(v if cond.recovers else _not(v))
        _merge(r, [good, bad])
        results.append(r)
    out = Result(_and(results))
    _merge(out, results)
    out.measure = m
    return out


# --------------------------------------------------------------------------
# Rules, predictions, manual evidence


def _render_because(text: str, ctx: Context, res: Result) -> str:
    if "{{" not in text and "{%" not in text:
        return text
    from triage.render.env import render_string

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
    for key, _ in res.invalid:
        # Look the run up by its key: a run id or config may itself hold a "/".
        run = ctx.by_key.get(key)
        config = run.config if run is not None else key.partition("/")[2]
        why = ctx.invalid_reason(run, brief=True) if run is not None else "invalid"
        text = f"{ctx.short(config)} {why}: never rules anything out"
        out.append(EvidenceItem(hyp, rule, "inconclusive", text, (key,), ("invalid-run",), summary=text))
    return out


def _prediction_condition(pred: Any, recipe: RecipeSpec) -> tuple[Condition, bool, str]:
    """(condition, is_recovery, description) for a recipe's prediction."""
    if pred == "recovers":
        return Condition(recovers=True), True, "recover to good"
    if pred == "same_as_bad":
        return Condition(same_as="bad"), False, "stay ≈ bad"
    if pred == "unchanged":
        base = recipe.base or ""
        return Condition(same_as=Selector(config=base)), False, f"stay ≈ its base {base}"
    assert isinstance(pred, Condition)
    desc = _describe_condition(pred)
    return pred, bool(pred.recovers), desc


def _describe_condition(c: Condition) -> str:
    bits = []
    for key in ("at_least", "below"):
        v = getattr(c, key)
        if v is not None:
            bits.append(f"come out {'≥' if key == 'at_least' else '<'} {v}")
    if c.between is not None:
        bits.append(f"come out between {c.between[0]} and {c.between[1]}")
    for key, word in (("same_as", "≈"), ("differs_from", "≠")):
        v = getattr(c, key)
        if v is not None:
            bits.append(f"come out {word} {v if isinstance(v, str) else (v.config or v.run)}")
    if c.recovers is not None:
        bits.append("recover to good" if c.recovers else "not recover")
    return " and ".join(bits) or "as stated"


def _rule_evidence(rule: RuleSpec, ctx: Context) -> list[EvidenceItem]:
    res = evaluate_condition(rule.when, ctx, None)
    items = _invalid_items(rule.hypothesis, rule.id, res, ctx)
    if res.value is V.TRUE:
        summary = _render_because(rule.because, ctx, res) if rule.because else None
        items.insert(0, EvidenceItem(rule.hypothesis, rule.id, rule.then, _reason(summary, res), tuple(res.runs),
                                     summary=_short(summary, res)))
    elif res.value is V.UNKNOWN:
        items.insert(0, EvidenceItem(rule.hypothesis, rule.id, "inconclusive", _reason("can't tell yet", res),
                                     tuple(res.runs), summary=_short("can't tell yet", res), needed=tuple(res.needed)))
    return items


def _prediction_evidence(recipe: RecipeSpec, hyp: str, pred: Any, ctx: Context) -> list[EvidenceItem]:
    cond, recovery, desc = _prediction_condition(pred, recipe)
    runs = ctx.by_config.get(recipe.id, [])
    res = evaluate_condition(cond, ctx, list(runs))
    rule = f"predicts:{recipe.id}"
    items = _invalid_items(hyp, rule, res, ctx)
    said = f"{ctx.short(recipe.id)} was predicted to {desc} if this were the cause"
    numbers = _join_short(res.short)
    if res.value is V.TRUE:
        verdict = "confirms" if recovery else "supports"
        items.insert(0, EvidenceItem(hyp, rule, verdict, _reason(f"{said}, and it did", res), tuple(res.runs),
                                     summary=f"{numbers} (as predicted if this were the cause)"))
    elif res.value is V.FALSE:
        items.insert(0, EvidenceItem(hyp, rule, "rules_out", _reason(f"{said}; it did not", res), tuple(res.runs),
                                     summary=f"{numbers}: predicted to {desc} if this were the cause"))
    elif res.value is V.UNKNOWN:
        items.insert(0, EvidenceItem(hyp, rule, "inconclusive", _reason(f"{said}; can't tell yet", res),
                                     tuple(res.runs), summary=f"{numbers}; predicted to {desc} if this were the cause",
                                     needed=tuple(res.needed)))
    return items


def _flagged(e: EvidenceItem, flag: str) -> EvidenceItem:
    return e if flag in e.flags else replace(e, flags=e.flags + (flag,))


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


# --------------------------------------------------------------------------
# Bisects


def _point_runs(b: BisectSpec, values: Sequence[str], axis: Sequence[str], ctx: Context) -> list[RunRec]:
    want = dict(zip(axis, values)) | dict(b.where)
    runs = ctx.runs
    if b.config is not None:
        configs = {b.config} if isinstance(b.config, str) else set(b.config)
        runs = [r for r in runs if r.config in configs]
    return sorted((r for r in runs if _provenance_matches(r, want)), key=_run_order)


def _point_state(b: BisectSpec, label: str, runs: list[RunRec], ctx: Context) -> PointState:
    """good / bad / unknown / flaky / skipped / untested for one point.

    Each valid run is judged on its own first: two runs of one point with
    different verdicts make it flaky (shown, never silently picked).  Runs that
    agree are pooled.  A crashed, errored, cancelled, excluded or
    signature-matched run never makes a point bad: alone, it skips the point.
    """
    if not runs:
        return PointState(label, "untested")
    skipped = [(r, ctx.invalid_reason(r, brief=True)) for r in runs if ctx.invalid_reason(r) is not None]
    skipped_text = "; ".join(f"{r.run_id} {why}" for r, why in skipped)
    valid = [r for r in runs if ctx.invalid_reason(r) is None]
    singles = [(r, evaluate_condition(b.good_when, ctx, [r])) for r in valid]
    verdicts = {res.value for _, res in singles}
    if V.TRUE in verdicts and V.FALSE in verdicts:
        good = [r.run_id for r, res in singles if res.value is V.TRUE]
        bad = [r.run_id for r, res in singles if res.value is V.FALSE]
        parts = "; ".join(p for _, res in singles for p in dict.fromkeys(res.parts))
        reason = f"good in {', '.join(good)} but bad in {', '.join(bad)}: re-run it to settle — {parts}"
        keys = tuple(r.key for r, res in singles if res.value in (V.TRUE, V.FALSE))
        pooled = ctx.measure(valid, _bisect_metric(b, ctx))
        return PointState(label, "flaky", keys, reason, pooled.value if pooled else None)
    res = evaluate_condition(b.good_when, ctx, valid) if valid else Result(V.NODATA)
    numbers = "; ".join(dict.fromkeys(res.parts))
    if skipped_text and res.value is not V.NODATA:
        numbers += f"; not counted: {skipped_text}"
    value = res.measure.value if res.measure else None
    if res.value is V.TRUE:
        return PointState(label, "good", tuple(res.runs), numbers, value)
    if res.value is V.FALSE:
        return PointState(label, "bad", tuple(res.runs), numbers, value)
    if res.value is V.UNKNOWN:
        if res.needed:
            numbers += "; would be decided by " + " and ".join(res.needed)
        return PointState(label, "unknown", tuple(res.runs), numbers, value, tuple(res.needed))
    why = skipped_text or "; ".join(f"{r.run_id} has no {_bisect_metric(b, ctx)}" for r in valid) or "no value"
    return PointState(label, "skipped", tuple(r.key for r in runs), why)


def _bisect_metric(b: BisectSpec, ctx: Context) -> str:
    return b.good_when.metric or ctx.spec.metric


def _midpoint(indices: list[int]) -> Optional[int]:
    return indices[(len(indices) - 1) // 2] if indices else None


def evaluate_bisect(b: BisectSpec, ctx: Context) -> BisectState:
    """Classify every point, check the ends, and name the next point to run.

    The good end is the first point, the bad end the last (mozregression and
    ``git bisect`` check both before bisecting).  Last good is the last good
    point before the first bad one after it; the next point is the midpoint of
    the untested points between them (re-measuring a can't-tell or flaky
    point, or re-running a skipped one, only when nothing else is left).
    """
    axis = [b.axis] if isinstance(b.axis, str) else list(b.axis)
    labels = b.point_labels()
    values = [[p] if isinstance(p, str) else list(p) for p in b.points]
    states = [_point_state(b, label, _point_runs(b, vals, axis, ctx), ctx) for vals, label in zip(values, labels)]
    kinds = [s.state for s in states]
    n = len(states)
    goods = [i for i, k in enumerate(kinds) if k == "good"]
    bads = [i for i, k in enumerate(kinds) if k == "bad"]
    notes: list[str] = []

    lo, hi = -1, n
    if goods:
        later_bads = [i for i in bads if i > goods[0]]
        if later_bads:
            hi = later_bads[0]
            lo = max(i for i in goods if i < hi)
        else:
            lo = goods[-1]
    elif bads:
        hi = bads[0]
    if any(i < lo for i in bads) or (hi < n and any(i > hi for i in goods)):
        notes.append("points are not monotone (a bad point before a good one): check for flaky runs")
    for s in states:
        if s.state == "flaky":
            notes.append(f"point {s.label} is flaky: {s.reason.split(' — ')[0]}")

    ends, ends_ok, blocked = _ends_check(labels, kinds)
    if blocked:
        notes.append(blocked)
    inside = [i for i in range(lo + 1, hi) if kinds[i] not in ("good", "bad")]
    remaining = tuple(labels[i] for i in inside)
    nxt: Optional[int] = None
    if not blocked:
        if not goods:
            nxt = 0 if kinds[0] != "bad" else None
        elif not bads:
            nxt = n - 1 if kinds[n - 1] != "good" else None
        else:
            for wanted in (("untested",), ("unknown", "flaky"), ("skipped",)):
                nxt = _midpoint([i for i in inside if kinds[i] in wanted])
                if nxt is not None:
                    break
    steps = 0
    if nxt is not None:
        # an unchecked end costs one run of its own before the halving starts
        unchecked = ({0} if not goods else set()) | ({n - 1} if not bads else set())
        between = [i for i in inside if i not in unchecked]
        steps = math.ceil(math.log2(len(between) + 1)) + len(unchecked)
    done = bool(goods and bads and hi == lo + 1)
    command = None
    if nxt is not None and b.run:
        command = b.run.replace("{point}", labels[nxt]).replace("{axis}", " + ".join(axis))
        for key, value in zip(axis, values[nxt]):
            command = command.replace("{" + key + "}", value)
    return BisectState(
        b.id, b.title or b.id, " + ".join(axis), tuple(states),
        labels[lo] if lo >= 0 else None, labels[hi] if hi < n else None,
        labels[nxt] if nxt is not None else None, remaining, steps, tuple(notes),
        ends, ends_ok, command, done,
    )


def _ends_check(labels: list[str], kinds: list[str]) -> tuple[str, bool, str]:
    """(the ends check as a sentence, both ends hold, why the bisect cannot go on)."""
    first, last = kinds[0], kinds[-1]
    good_end = {"good": f"good end {labels[0]} is good", "untested": f"good end {labels[0]} not tested yet"}.get(
        first, f"good end {labels[0]} is {_STATE_WORDS.get(first, first)}")
    bad_end = {"bad": f"bad end {labels[-1]} is bad", "untested": f"bad end {labels[-1]} not tested yet"}.get(
        last, f"bad end {labels[-1]} is {_STATE_WORDS.get(last, last)}")
    blocked = ""
    if first == "bad":
        blocked = f"the good end {labels[0]} is bad: the regression is older than this range; start it earlier"
    elif last == "good":
        blocked = f"the bad end {labels[-1]} is good: nothing regressed in this range; end it later"
    return f"{good_end}; {bad_end}", first == "good" and last == "bad", blocked


_STATE_WORDS = {"unknown": "can't tell", "skipped": "skipped (no valid run)", "flaky": "flaky"}


# --------------------------------------------------------------------------
# Readings, suggestions, the whole evaluation


def reading(run: RunRec, ctx: Context) -> str:
    """One short phrase: what this run's primary metric says."""
    why = ctx.invalid_reason(run, brief=True)
    if why is not None:
        return why
    metric = ctx.spec.metric
    if metric not in run.metrics:
        return "probe" if run.metrics else "no " + metric
    m = ctx.measure([run], metric)
    assert m is not None
    bits = []
    for name in ("bad", "good"):
        ref, _ = ctx.refs.get(name, (None, ""))
        if ref is None:
            continue
        c = stats.compare(m, ref, margin=ctx.margin, tolerance=ctx.tolerance, confidence=ctx.confidence)
        if c.outcome is Outcome.SAME:
            bits.append(f"≈ {name}")
    if ctx.spec.gate is not None:
        passes = m.value >= ctx.spec.gate if ctx.spec.direction == "higher" else m.value <= ctx.spec.gate
        bits.append("passes gate" if passes else "fails gate")
    return ", ".join(bits)


# --------------------------------------------------------------------------
# Confounds


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return num(v) if isinstance(v, float) else str(v)


def base_run(recipe: RecipeSpec, ctx: Context) -> Optional[RunRec]:
    """The run a recipe's runs are compared with: ``base_run``, else the newest
    valid run of its base config."""
    if recipe.base_run:
        runs = [r for r in ctx.runs if recipe.base_run in (r.run_id, r.key)]
        own = [r for r in runs if r.config == recipe.base]
        runs = own or runs
    elif recipe.base:
        runs = ctx.by_config.get(recipe.base, [])
    else:
        return None
    runs = [r for r in runs if ctx.invalid_reason(r) is None]
    return max(runs, key=_run_order) if runs else None


def find_confounds(inv: Investigation, ctx: Context) -> list[Confound]:
    """Valid recipe runs whose recorded provenance differs from their base run
    in a key the recipe does not declare (`vary`), or that recorded another
    value for a key it does declare.  Keys in `ignore_provenance` never count;
    keys recorded on only one side cannot be compared and are left alone."""
    ignore = set(ctx.spec.ignore_provenance)
    out: list[Confound] = []
    for recipe in inv.recipes:
        runs = sorted((r for r in ctx.by_config.get(recipe.id, []) if ctx.invalid_reason(r) is None), key=_run_order)
        if not runs:
            continue
        declared = {k: _scalar(v) for k, v in recipe.vary.items()}
        base = base_run(recipe, ctx)
        for r in runs:
            for key, want in declared.items():
                have = r.provenance.get(key)
                if key not in ignore and have is not None and have != want:
                    out.append(Confound(r.key, recipe.id, key, have, None, declared=want))
            if base is None:
                continue
            shared = (set(r.provenance) & set(base.provenance)) - set(declared) - ignore
            for key in sorted(shared):
                if r.provenance[key] != base.provenance[key]:
                    out.append(Confound(r.key, recipe.id, key, r.provenance[key], base.provenance[key], base.key))
    return out


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
    ns = [int(x.replace(",", "")) for need in state.needed for x in re.findall(r"n ≥ ([\d,]+)", need)]
    ks = [int(x) for need in state.needed for x in re.findall(r"≥ (\d+) repeats", need)]
    bits = []
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
        state, outcomes = "check the good end first", (f"good ⇒ the range holds; bad ⇒ start the range earlier",)
    elif b.first_bad is None:
        state, outcomes = "check the bad end first", (f"bad ⇒ the range holds; good ⇒ end the range later",)
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


def repeats_disagree(ctx: Context) -> list[Warning_]:
    """Runs of one config with the same provenance whose primary metric
    differs beyond noise: they are pooled as repeats, so say so."""
    metric = ctx.spec.metric
    ignore = set(ctx.spec.ignore_provenance)
    groups: dict[tuple, list[RunRec]] = {}
    for r in ctx.runs:
        if metric in r.metrics and ctx.invalid_reason(r) is None:
            prov = tuple(sorted((k, v) for k, v in r.provenance.items() if k not in ignore))
            groups.setdefault((r.config, prov), []).append(r)
    out = []
    for (config, _), runs in groups.items():
        if len(runs) < 2:
            continue
        lo = min(runs, key=lambda r: r.metrics[metric][0])
        hi = max(runs, key=lambda r: r.metrics[metric][0])
        c = stats.compare(Measure(*hi.metrics[metric]), Measure(*lo.metrics[metric]), margin=ctx.margin,
                          tolerance=ctx.tolerance, confidence=ctx.confidence)
        if c.outcome is Outcome.DIFFERENT and c.method != "exact":
            out.append(Warning_("repeats", (
                f"runs of {ctx.short(config)} with the same provenance disagree: {hi.run_id} "
                f"{fmt(hi.metrics[metric][0])} vs {lo.run_id} {fmt(lo.metrics[metric][0])} ({c.noise}); "
                "they are pooled as repeats: exclude the bad one or record what differs")))
    return out


def evaluate(inv: Investigation) -> Evaluation:
    """Derive evidence, statuses, confounds, recipe states, bisect states and suggestions."""
    ctx = Context(inv)
    items: list[EvidenceItem] = []
    for rule in inv.rules:
        items += _rule_evidence(rule, ctx)
    for recipe in inv.recipes:
        for hyp, pred in recipe.predicts.items():
            items += _prediction_evidence(recipe, hyp, pred, ctx)
    for ev in inv.evidence:
        by = f" ({ev.author})" if ev.author else ""
        items.append(EvidenceItem(ev.hypothesis, "manual", ev.verdict, ev.because + by, tuple(ev.runs), ("manual",),
                                  summary=ev.because + by))
    # A rule that decided something supersedes the rules it names.
    decided = {e.rule for e in items if e.verdict != "inconclusive"}
    superseded: set[str] = set()
    for rule in inv.rules:
        if rule.id in decided:
            superseded.update(rule.supersedes)
    items = [_flagged(e, "superseded") if e.rule in superseded else e for e in items]
    # Deduplicate (the same invalid run seen by several rules of one hypothesis).
    seen: set[tuple] = set()
    unique: list[EvidenceItem] = []
    for e in items:
        k = (e.hypothesis, e.verdict, e.runs, e.reason) if "invalid-run" in e.flags else (e.key,)
        if k not in seen:
            seen.add(k)
            unique.append(e)
    # Evidence resting on a confounded run stays, marked.
    confounds = find_confounds(inv, ctx)
    confounded = {c.run for c in confounds}
    items = [_flagged(e, "confounded") if confounded & set(e.runs) else e for e in unique]

    by_h: dict[str, list[EvidenceItem]] = {h.id: [] for h in inv.hypotheses}
    for e in items:
        by_h.setdefault(e.hypothesis, []).append(e)
    statuses = {h: derive_status(es) for h, es in by_h.items()}
    # A ruled-out parent rules out its undecided children.
    parents = {h.id: h.parent for h in inv.hypotheses}
    for h in inv.hypotheses:
        anc = h.parent
        while anc is not None and statuses.get(h.id) in ("open", "inconclusive"):
            if statuses.get(anc) == "ruled_out":
                text = f"its parent {anc} is ruled out"
                e = EvidenceItem(h.id, f"parent:{anc}", "rules_out", text, (), ("inherited",), summary=text)
                items.append(e)
                statuses[h.id] = "ruled_out"
            anc = parents.get(anc)
    # A status set by hand wins over the derived one, and says so.
    override_warnings: list[Warning_] = []
    for h in inv.hypotheses:
        if h.override is None:
            continue
        o = h.override
        derived = statuses.get(h.id, "open")
        by = f" ({o.author})" if o.author else ""
        text = f"status set by hand to {o.status} (the evidence says {derived}): {o.because}{by}"
        verdict = {"ruled_out": "rules_out", "confirmed": "confirms", "inconclusive": "inconclusive"}.get(o.status, "supports")
        items.append(EvidenceItem(h.id, "override", verdict, text, (), ("override",), summary=text))
        statuses[h.id] = o.status
        if derived != o.status:
            override_warnings.append(Warning_("override", f"`{h.id}`: {text}"))
    # A confirmed parent makes its undecided children the next level to decide.
    next_level: dict[str, list[str]] = {}
    for h in inv.hypotheses:
        if h.parent is not None and statuses.get(h.parent) == "confirmed" and statuses.get(h.id) in UNDECIDED:
            next_level.setdefault(h.parent, []).append(h.id)

    bisects = [evaluate_bisect(b, ctx) for b in inv.bisects]
    warnings: list[Warning_] = list(override_warnings)
    for h, s in statuses.items():
        if s == "conflicting":
            warnings.append(Warning_("conflict", f"`{h}` has evidence both ways; check the runs behind it"))
    for name, (m, label) in ctx.refs.items():
        if m is None:
            warnings.append(Warning_("reference", f"reference `{name}` has no value yet: {label}"))
    for c in confounds:
        warnings.append(Warning_("confound", c.message(ctx)))
    warnings += repeats_disagree(ctx)
    for r in inv.runs:
        why = ctx.invalid_reason(r)
        if why is not None:
            warnings.append(Warning_("inconclusive-run", f"{r.run_id} ({ctx.short(r.config)}): {why}"))
    for b in bisects:
        for note in b.notes:
            warnings.append(Warning_("bisect", f"bisect `{b.id}`: {note}"))
    states = recipe_states(inv, ctx, items, statuses, confounds)
    suggestions, untested = _suggest(inv, ctx, statuses, bisects, states, next_level)
    readings = {r.key: reading(r, ctx) for r in inv.runs}
    confound_keys: dict[str, list[str]] = {}
    for c in confounds:
        confound_keys.setdefault(c.run, []).append(c.key)
    for key in confounded:
        keys = ", ".join(dict.fromkeys(confound_keys.get(key, [])))
        readings[key] = f"{readings[key]}; confounded ({keys})" if readings.get(key) else f"confounded ({keys})"
    order = {h.id: i for i, h in enumerate(inv.hypotheses)}
    items.sort(key=lambda e: (order.get(e.hypothesis, len(order)), e.hypothesis))
    invalid = {r.key: why for r in inv.runs if (why := ctx.invalid_reason(r, brief=True)) is not None}
    return Evaluation(items, statuses, ctx.refs, readings, bisects, suggestions, warnings, untested,
                      states, confounds, next_level, invalid)
