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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Suggestion:
    recipe: str
    tests: tuple[str, ...]
    why: str
    command: Optional[str]
    score: float
    kind: str = "recipe"  # recipe | bisect


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


def _and(results: list[Result]) -> V:
    values = [r.value for r in results]
    if V.FALSE in values:
        return V.FALSE
    if V.NODATA in values:
        return V.NODATA
    if V.UNKNOWN in values:
        return V.UNKNOWN
    return V.TRUE


def _or(results: list[Result]) -> V:
    values = [r.value for r in results]
    if V.TRUE in values:
        return V.TRUE
    if V.NODATA in values:
        return V.NODATA
    if V.UNKNOWN in values:
        return V.UNKNOWN
    return V.FALSE


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
        config = key.partition("/")[2]
        run = ctx.by_key.get(key)
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
                                     tuple(res.runs), summary=_short("can't tell yet", res)))
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
                                     tuple(res.runs), summary=f"{numbers}; predicted to {desc} if this were the cause"))
    return items


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


def evaluate_bisect(b: BisectSpec, ctx: Context) -> BisectState:
    axis = [b.axis] if isinstance(b.axis, str) else list(b.axis)
    labels = b.point_labels()
    states: list[PointState] = []
    for point, label in zip(b.points, labels):
        values = [point] if isinstance(point, str) else list(point)
        want = dict(zip(axis, values)) | {k: v for k, v in b.where.items()}
        runs = [r for r in ctx.runs if _provenance_matches(r, want)]
        if not runs:
            states.append(PointState(label, "untested"))
            continue
        res = evaluate_condition(b.good_when, ctx, runs)
        keys = tuple(res.runs) or tuple(r.key for r in runs)
        numbers = "; ".join(dict.fromkeys(res.parts))
        if res.value is V.TRUE:
            states.append(PointState(label, "good", keys, numbers))
        elif res.value is V.FALSE:
            states.append(PointState(label, "bad", keys, numbers))
        elif res.value is V.UNKNOWN:
            states.append(PointState(label, "unknown", keys, numbers))
        else:
            why = "; ".join(f"{k.split('/')[0]} {w}" for k, w in res.invalid) or "no value"
            states.append(PointState(label, "skipped", tuple(k for k, _ in res.invalid), why))
    goods = [i for i, s in enumerate(states) if s.state == "good"]
    bads = [i for i, s in enumerate(states) if s.state == "bad"]
    notes: list[str] = []
    last_good = first_bad = None
    lo, hi = -1, len(states)
    if goods:
        lo = goods[0]
        later_bads = [i for i in bads if i > lo]
        if later_bads:
            hi = later_bads[0]
            lo = max(i for i in goods if i < hi)
        else:
            lo = goods[-1]
    elif bads:
        hi = bads[0]
    if 0 <= lo:
        last_good = labels[lo]
    if hi < len(states):
        first_bad = labels[hi]
    if any(i < lo for i in bads) or any(i > hi for i in goods if hi < len(states)):
        notes.append("points are not monotone (a bad point before a good one): check for flaky runs")
    if not goods:
        notes.append(f"no good point yet: run {labels[0]} first to confirm the good end")
    if not bads:
        notes.append(f"no bad point yet: run {labels[-1]} to confirm the bad end")
    remaining = tuple(labels[i] for i in range(lo + 1, hi) if states[i].state != "good" and states[i].state != "bad")
    nxt = None
    steps = 0
    if goods and bads and remaining:
        nxt = remaining[(len(remaining) - 1) // 2]
        steps = math.ceil(math.log2(len(remaining) + 1))
    elif not goods:
        nxt = labels[0]
    elif not bads:
        nxt = labels[-1]
    return BisectState(
        b.id, b.title or b.id, " + ".join(axis), tuple(states), last_good, first_bad, nxt, remaining, steps, tuple(notes)
    )


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


def _suggest(inv: Investigation, ctx: Context, statuses: dict[str, str], bisects: list[BisectState]) -> tuple[list[Suggestion], list[str]]:
    undecided = {h for h, s in statuses.items() if s in ("open", "inconclusive")}
    out: list[Suggestion] = []
    tested: set[str] = set()
    for recipe in inv.recipes:
        hyps = list(dict.fromkeys(list(recipe.tests) + list(recipe.predicts)))
        tested.update(hyps)
        runs = ctx.by_config.get(recipe.id, [])
        valid = [r for r in runs if ctx.invalid_reason(r) is None]
        decides = [h for h in hyps if h in undecided]
        if not decides:
            continue
        if valid and not any(statuses.get(h) == "inconclusive" for h in decides):
            continue
        why_bits = []
        for h in decides:
            pred = recipe.predicts.get(h)
            if pred is None:
                why_bits.append(f"`{h}`")
                continue
            _, recovery, desc = _prediction_condition(pred, recipe)
            if recovery:
                why_bits.append(f"`{h}`: recovers ⇒ confirmed, stays bad ⇒ ruled out")
            else:
                why_bits.append(f"`{h}`: {desc} ⇒ supported, otherwise ruled out")
        state = "never run" if not runs else ("no valid run yet" if not valid else "can't tell yet")
        cost = recipe.cost or 1.0
        score = len(decides) / cost
        command = recipe.run.replace("{ids}", recipe.id).replace("{id}", recipe.id) if recipe.run else None
        out.append(Suggestion(recipe.id, tuple(decides), f"{state}; decides " + "; ".join(why_bits), command, score))
    for b in bisects:
        if b.next is not None:
            out.append(
                Suggestion(
                    f"bisect:{b.id}",
                    (),
                    f"bisect `{b.id}`: test {b.axis} = {b.next} ({len(b.remaining)} untested between "
                    f"{b.last_good or '?'} and {b.first_bad or '?'}, ~{b.steps} step(s) left)",
                    None,
                    0.5,
                    "bisect",
                )
            )
    out.sort(key=lambda s: (-s.score, s.recipe))
    no_recipe = [h.id for h in inv.hypotheses if h.id in undecided and h.id not in tested]
    return out, no_recipe


def combined_command(inv: Investigation, suggestions: Sequence[Suggestion]) -> Optional[str]:
    """One command that runs every suggested recipe, from their `run:` templates."""
    recipes = {r.id: r for r in inv.recipes}
    groups: dict[str, list[str]] = {}
    for s in suggestions:
        r = recipes.get(s.recipe)
        if r is None or not r.run:
            continue
        groups.setdefault(r.run, []).append(r.id)
    lines = []
    for template, ids in groups.items():
        if "{ids}" in template:
            lines.append(template.replace("{ids}", ",".join(ids)))
        else:
            lines += [template.replace("{id}", i) for i in ids]
    return "\n".join(lines) or None


def evaluate(inv: Investigation) -> Evaluation:
    """Derive evidence, statuses, bisect states and suggestions."""
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
    items = [
        EvidenceItem(e.hypothesis, e.rule, e.verdict, e.reason, e.runs, e.flags + ("superseded",), e.summary)
        if e.rule in superseded
        else e
        for e in items
    ]
    # Deduplicate (the same invalid run seen by several rules of one hypothesis).
    seen: set[tuple] = set()
    unique: list[EvidenceItem] = []
    for e in items:
        k = (e.hypothesis, e.verdict, e.runs, e.reason) if "invalid-run" in e.flags else (e.key,)
        if k not in seen:
            seen.add(k)
            unique.append(e)
    items = unique

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

    bisects = [evaluate_bisect(b, ctx) for b in inv.bisects]
    warnings: list[Warning_] = []
    for h, s in statuses.items():
        if s == "conflicting":
            warnings.append(Warning_("conflict", f"`{h}` has evidence both ways; check the runs behind it"))
    for name, (m, label) in ctx.refs.items():
        if m is None:
            warnings.append(Warning_("reference", f"reference `{name}` has no value yet: {label}"))
    for r in inv.runs:
        why = ctx.invalid_reason(r)
        if why is not None:
            warnings.append(Warning_("inconclusive-run", f"{r.run_id} ({ctx.short(r.config)}): {why}"))
    for b in bisects:
        for note in b.notes:
            warnings.append(Warning_("bisect", f"bisect `{b.id}`: {note}"))
    suggestions, untested = _suggest(inv, ctx, statuses, bisects)
    readings = {r.key: reading(r, ctx) for r in inv.runs}
    order = {h.id: i for i, h in enumerate(inv.hypotheses)}
    items.sort(key=lambda e: (order.get(e.hypothesis, len(order)), e.hypothesis))
    return Evaluation(items, statuses, ctx.refs, readings, bisects, suggestions, warnings, untested)
