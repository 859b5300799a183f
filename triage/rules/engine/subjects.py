"""Several subjects in one investigation (a model, a benchmark, a test).

An investigation that names a provenance key as its ``subject`` has every
condition evaluated once per subject: in a context whose runs are only that
subject's (:class:`SubjectSource`) and whose gate, references and per-metric
settings are that subject's own where it gives them.  The values combine as
the investigation's ``combine`` says (or the condition's own ``subjects:``):
``all`` (one false subject decides), ``any`` (one true subject decides) or
``at_least: N`` (true once N hold, false once fewer than N can).  A subject
with no data among the runs a condition looks at is left out: it was not
measured there.

Every read of a subject's context goes through the context it is part of, to
the same source, so that what a piece of an evaluation read is noted as it
would be without subjects (conservatively: a config's runs, not only the
subject's).  Without a ``subject`` nothing here runs.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

from triage.rules.decisions.conditions import _and, _or, _reads_runs, evaluate_condition
from triage.rules.engine.context import Context
from triage.rules.engine.memo import track
from triage.rules.engine.records import Result, RunRec, V
from triage.rules.language.schema import Condition, InvestigationSpec, MetricSpec
from triage.rules.engine.source import RunSource, Token

Judge = Callable[[Condition, Context, Optional[list[RunRec]]], Result]


class SubjectSource:
    """The runs of one subject, from the source of the whole investigation.

    Fingerprints, what holds and the order recorded are the whole source's:
    a change to any run of a config makes a piece that read it stale, which is
    conservative and keeps every read token the same as without subjects."""

    def __init__(self, parent: RunSource, key: str, subject: str) -> None:
        self._parent, self._key, self._subject = parent, key, subject
        self._configs: dict[str, list[RunRec]] = {}
        self._all: Optional[list[RunRec]] = None

    def _mine(self, runs: Iterable[RunRec]) -> list[RunRec]:
        return [r for r in runs if subject_of(r, self._key) == self._subject]

    def all(self) -> list[RunRec]:
        if self._all is None:
            self._all = self._mine(self._parent.all())
        return self._all

    def config(self, name: str) -> list[RunRec]:
        runs = self._configs.get(name)
        if runs is None:
            runs = self._configs[name] = self._mine(self._parent.config(name))
        return runs

    def run_id(self, run_id: str) -> list[RunRec]:
        return self._mine(self._parent.run_id(run_id))

    def configs(self) -> list[str]:
        return [c for c in self._parent.configs() if self.config(c)]

    def fingerprint(self, token: Token) -> str:
        return self._parent.fingerprint(token)

    def holds(self, token: Token, fingerprint: str) -> bool:
        return self._parent.holds(token, fingerprint)

    def order(self, run: RunRec) -> int:
        return self._parent.order(run)

    def appended(self, config: str, fingerprint: str) -> Optional[list[RunRec]]:
        return None  # never asked (a subject's context works no piece out); None is always safe


def subject_of(run: RunRec, key: str) -> Optional[str]:
    value = run.provenance.get(key)
    return None if value is None else str(value)


def subject_spec(spec: InvestigationSpec, name: str) -> InvestigationSpec:
    """The investigation's settings as one subject sees them: its own gate, references and
    metric settings over the investigation's."""
    own = spec.subjects.get(name)
    if own is None:
        return spec
    update: dict = {}
    if own.gate is not None:
        update["gate"] = own.gate
    if own.references:
        update["references"] = {**spec.references, **own.references}
    if own.metrics:
        metrics = dict(spec.metrics)
        for metric, st in own.metrics.items():
            base = metrics.get(metric, MetricSpec()).model_dump(exclude_none=True)
            metrics[metric] = MetricSpec(**{**base, **st.model_dump(exclude_none=True)})
        update["metrics"] = metrics
    return spec.model_copy(update=update)


def subject_context(ctx: Context, name: str) -> Context:
    """One subject's context, made once per evaluation; what making it read (its references'
    runs) is noted again for every piece that uses it."""
    kept = ctx.subjects.get(name)
    if kept is not None:
        sub, reads = kept
        for token, fp in reads.items():
            ctx.read(token, fp)
        return sub
    assert ctx.spec.subject is not None
    with track(ctx) as seen:
        sub = Context(ctx.inv, source=SubjectSource(ctx.source, ctx.spec.subject, name),
                      spec=subject_spec(ctx.spec, name), within=ctx)
    ctx.subjects[name] = (sub, dict(seen))
    return sub


def subjects_in(ctx: Context, cond: Condition, selection: Optional[Sequence[RunRec]]) -> list[str]:
    """The subjects a condition is evaluated for: those with settings, then those the runs it
    may look at carry (the selection it is given, else its configs' runs, else every run)."""
    key = ctx.spec.subject
    assert key is not None
    if selection is not None:
        runs: Iterable[RunRec] = selection
    elif cond.config is not None and cond.run is None:
        configs = [cond.config] if isinstance(cond.config, str) else cond.config
        runs = [r for c in configs for r in ctx.by_config.get(c, [])]
    else:
        runs = ctx.runs
    found = dict.fromkeys(ctx.spec.subjects)
    seen: set[int] = set()  # provenance mappings looked at (runs that recorded the same share one)
    for r in runs:
        if id(r.provenance) not in seen:
            seen.add(id(r.provenance))
            value = subject_of(r, key)
            if value is not None:
                found.setdefault(value)
    return list(found)


def evaluate(cond: Condition, ctx: Context, selection: Optional[list[RunRec]],
             judge: Judge = evaluate_condition) -> Result:
    """``judge`` (by default :func:`evaluate_condition`) per subject, combined; without a
    subject (or for a condition only about bisects), ``judge`` itself."""
    key = ctx.spec.subject
    if key is None or not _reads_runs(cond):
        return judge(cond, ctx, selection)
    per = []
    for name in subjects_in(ctx, cond, selection):
        sel = None if selection is None else [r for r in selection if subject_of(r, key) == name]
        per.append((name, judge(cond, subject_context(ctx, name), sel)))
    return combine(per, cond.subjects or ctx.spec.combine)


def combine(per: list[tuple[str, Result]], how: object) -> Result:
    """Per-subject values as one: the subjects that decide named first, each part said with
    its subject."""
    measured = [(n, r) for n, r in per if r.value is not V.NODATA]
    by = {v: [n for n, r in measured if r.value is v] for v in (V.TRUE, V.FALSE, V.UNKNOWN)}
    values = [r for _, r in measured]
    total = len(per)
    if not measured:
        value, deciding, head = V.NODATA, [], ""
    elif how in ("all", "any"):
        decisive, other = (V.FALSE, V.TRUE) if how == "all" else (V.TRUE, V.FALSE)
        value = _and(values) if how == "all" else _or(values)
        deciding = by[decisive] or by[V.UNKNOWN] or by[other]
        head = _HEADS[how, value].format(n=len(deciding), names=", ".join(deciding),
                                         s="s" if len(deciding) == 1 else "", do=_do(deciding))
    else:
        need = int(getattr(how, "at_least"))
        possible = total - len(by[V.FALSE])
        if len(by[V.TRUE]) >= need:
            value, deciding = V.TRUE, by[V.TRUE]
            head = f"{len(deciding)} subjects hold ({', '.join(deciding)}), at least {need} needed"
        elif possible < need:
            value, deciding = V.FALSE, by[V.FALSE]
            head = f"{_names(deciding)} {_do(deciding)} not hold: at most {possible} of {total} can, {need} needed"
        else:
            value = V.UNKNOWN if by[V.UNKNOWN] else V.NODATA
            deciding = by[V.UNKNOWN]
            head = f"{len(by[V.TRUE])} of {need} subjects needed hold so far" + (
                f"; can't tell for {_names(deciding)}" if deciding else "")
    return _result(value, per, deciding, head)


_HEADS = {
    ("all", V.TRUE): "all {n} subjects measured hold ({names})",
    ("all", V.FALSE): "{names} {do} not hold (all subjects must)",
    ("all", V.UNKNOWN): "can't tell for {names} (all subjects must hold)",
    ("any", V.TRUE): "{names} hold{s} (any subject will do)",
    ("any", V.FALSE): "none of {n} subjects measured holds ({names})",
    ("any", V.UNKNOWN): "can't tell for {names} (any subject will do)",
}


def _result(value: V, per: list[tuple[str, Result]], deciding: list[str], head: str) -> Result:
    out = Result(value, [head] if head else [], short=[head] if head else [])
    runs: dict[str, None] = {}
    invalid: dict[tuple, None] = {}
    common = set.intersection(*(set(r.parts) for _, r in per)) if len(per) > 1 else set()  # "higher is better"
    for name, r in per:
        out.parts += [f"{name}: {p}" for p in dict.fromkeys(r.parts) if p not in common]
        runs.update(dict.fromkeys(r.runs))
        invalid.update(dict.fromkeys(r.invalid))
        if name in deciding:
            out.short += [f"{name}: {s}" for s in r.short]
            if value not in (V.TRUE, V.FALSE):
                out.needed += [f"{n} for {name}" for n in r.needed]
    out.parts += [p for p in dict.fromkeys(p for _, r in per for p in r.parts) if p in common]
    out.runs, out.invalid = list(runs), list(invalid)
    if len(deciding) == 1:
        out.measure = dict(per)[deciding[0]].measure
    return out


def _names(names: list[str]) -> str:
    return ", ".join(names)


def _do(names: list[str]) -> str:
    return "does" if len(names) == 1 else "do"
