"""Bisects: every point classified (good, bad, can't tell, flaky, skipped, untested), the next point named."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Optional, Sequence

from triage.rules.decisions.conditions import evaluate_condition, statuses
from triage.rules.engine.context import Context, _run_order
from triage.rules.engine.memo import BISECT, fingerprint
from triage.rules.engine.records import (
    BisectState,
    PointState,
    Result,
    RunRec,
    V,
)
from triage.rules.language.schema import BisectMark, BisectSpec, Condition, Selector
from triage.rules.engine.subjects import evaluate as per_subject, subject_of

# --------------------------------------------------------------------------
# Bisects


def _bisect_runs(b: BisectSpec, ctx: Context, keys: Sequence[str] = ()) -> list[RunRec]:
    """The runs a bisect looks at: its configs' (all runs when it names none), in
    the order recorded; with ``keys``, only those that recorded every one of them."""
    if b.config is None:
        want = set(keys)
        return [r for r in ctx.runs if r.provenance.keys() >= want]
    configs = {b.config} if isinstance(b.config, str) else set(b.config)
    if len(configs) == 1:  # one config's runs are in the order recorded already
        return ctx.runs_with(next(iter(configs)), keys)
    return sorted((r for c in configs for r in ctx.runs_with(c, keys)), key=ctx.order)


def _points_runs(b: BisectSpec, values: Sequence[Sequence[str]], axis: Sequence[str],
                 ctx: Context) -> list[list[RunRec]]:
    """Each point's runs, oldest first, from one pass over the runs.

    A run belongs to the point whose axis values its provenance records (as
    text), once it matches the bisect's ``where``; a ``where`` key that is also
    an axis key overrides the point's value."""
    where = {k: str(v) for k, v in b.where.items()}
    free = [i for i, k in enumerate(axis) if k not in where]
    free_keys = [axis[i] for i in free]
    by_point: dict[tuple[str, ...], list[RunRec]] = {}
    point_of: dict[int, Optional[tuple[str, ...]]] = {}  # id of a provenance mapping (shared by runs alike) -> point
    for r in _bisect_runs(b, ctx, sorted(set(where) | set(free_keys))):
        p = r.provenance
        point = point_of.get(id(p), _UNSEEN)
        if point is _UNSEEN:
            point = point_of[id(p)] = _run_point(p, where, free_keys)
        if point is not None:
            by_point.setdefault(point, []).append(r)
    return [sorted(by_point.get(tuple(str(vals[i]) for i in free), ()), key=_run_order) for vals in values]


_UNSEEN: Any = object()  # a provenance mapping not looked into yet (its point may be None)


def _run_point(p: Any, where: dict[str, str], free_keys: Sequence[str]) -> Optional[tuple[str, ...]]:
    """The axis values (as text) of the point a run of provenance ``p`` is of, if it matches the
    bisect's ``where`` and records them all; else None."""
    if where and any((have := p.get(k)) is None or str(have) != v for k, v in where.items()):
        return None
    got = tuple(map(p.get, free_keys))  # in C: a wide base's runs each record their own sha
    return None if None in got else tuple(map(str, got))


def _judges(cond: Condition) -> bool:
    """A good_when that is only `status:` judges each run by its verdict
    (listed statuses good, any other valid status bad) instead of filtering."""
    return cond.model_fields_set - {"subjects"} == {"status"}


def _by_content(cond: Condition) -> bool:
    """Whether a condition judges a lone run by the run alone (its config,
    status, metrics and provenance), not by other runs it selects: then runs
    that recorded the same are judged once."""
    if cond.config is not None or cond.run is not None:
        return False
    if any(isinstance(getattr(cond, k), Selector) for k in ("same_as", "differs_from")):
        return False
    return all(_by_content(c) for c in cond.parts())


def _judge_each(b: BisectSpec, ctx: Context, runs: list[RunRec],
                judged: Optional[dict[tuple, Result]] = None) -> list[tuple[RunRec, Result]]:
    """Each run judged on its own (its verdict and the numbers behind it); ``judged``: what
    runs of the bisect's other points were judged, by what they recorded."""
    if _judges(b.good_when) or not _by_content(b.good_when):
        return [(r, _judge(b, ctx, [r])) for r in runs]
    seen: dict[tuple, Result] = {} if judged is None else judged
    out = []
    metrics = sorted(_metrics_read(b.good_when, ctx.spec.metric) | {_bisect_metric(b, ctx)})
    provenances: dict[int, tuple] = {}  # id of a provenance mapping (shared by runs alike) -> its items
    by_provenance = bool(ctx.spec.subject) or _reads_provenance(b.good_when)
    for r in runs:
        # judged by what it recorded that the condition reads: its config, its status, the
        # values of the metrics it compares, and its provenance when a selector, `distinct:`
        # or the investigation's subject reads it; runs that recorded the same are judged once
        p = r.provenance
        prov = provenances.get(id(p)) if by_provenance else ()
        if prov is None:
            prov = provenances[id(p)] = tuple(sorted(p.items(), key=_first_text))
        key = (r.config, r.status, prov, *map(r.metrics.get, metrics))
        res = seen.get(key)
        if res is None:
            res = seen[key] = _judge(b, ctx, [r])
        out.append((r, res))
    return out


def _metrics_read(cond: Condition, metric: str) -> set[str]:
    """The metrics a condition judged by content compares: its own (``metric`` by
    default) and its parts'; a fail rate reads the runs' status too."""
    return {cond.metric or metric}.union(*(_metrics_read(c, metric) for c in cond.parts()))


def _reads_provenance(cond: Condition) -> bool:
    """Whether a condition judged by content reads a run's provenance (a selector, `distinct:`)."""
    return bool(cond.provenance) or cond.distinct is not None or any(map(_reads_provenance, cond.parts()))


def _first_text(item: tuple[str, Any]) -> str:
    return item[0]


def _judge(b: BisectSpec, ctx: Context, runs: list[RunRec]) -> Result:
    """A point's runs judged by good_when; with subjects, per subject and combined."""
    return per_subject(b.good_when, ctx, runs, _by_status if _judges(b.good_when) else evaluate_condition)


def _by_status(cond: Condition, ctx: Context, runs: Optional[list[RunRec]]) -> Result:
    if not runs:
        return Result(V.NODATA)
    wanted = statuses(cond.status or [])
    good = [r for r in runs if r.status in wanted]
    bad = [r for r in runs if r.status not in wanted]
    parts = [f"{r.run_id} {r.status}" for r in runs]
    value = V.TRUE if not bad else V.FALSE if not good else V.UNKNOWN
    return Result(value, parts, [r.key for r in runs], short=parts)


def _point_state(b: BisectSpec, label: str, runs: list[RunRec], ctx: Context,
                 judged: Optional[dict[tuple, Result]] = None) -> PointState:
    """good / bad / unknown / no_number / flaky / skipped / untested for one point.

    Each valid run is judged on its own first: two runs of one point with
    different verdicts make it flaky (shown, never silently picked).  Runs that
    agree are pooled.  A run of an outcome the investigation does not declare its
    failure (crashed, timeout, oom, cancelled, infra by default), an excluded run
    or a known failure never makes a point bad: alone, it skips the point.
    A valid run without the number good_when compares makes it `no number`
    (inconclusive, with its reason), never skipped.  Marks set by hand judge
    the point too; a run or another mark that disagrees makes it flaky.
    """
    marks = [m for m in b.marks if m.point == label]
    return _with_marks(_runs_state(b, label, runs, ctx, judged), marks)


def _with_marks(ps: PointState, marks: list[BisectMark]) -> PointState:
    if not marks:
        return ps
    said = "; ".join(f"marked {m.verdict} by hand: {m.because}" + (f" ({m.author})" if m.author else "")
                     for m in marks)
    verdicts = {m.verdict for m in marks}
    if len(verdicts) > 1:
        return replace(ps, state="flaky", reason=f"marked both good and bad by hand: {said}", manual=said)
    verdict = marks[0].verdict
    if ps.state in ("good", "bad") and ps.state != verdict:
        runs = ", ".join(k.partition("/")[0] for k in ps.runs)
        return replace(ps, state="flaky", manual=said,
                       reason=f"{said}, but {ps.state} in {runs}: re-run it to settle — {ps.reason}")
    if ps.state == "flaky":
        return replace(ps, reason=f"{said}; {ps.reason}", manual=said)
    rest = ps.reason if ps.state == verdict else ""
    return replace(ps, state=verdict, reason=f"{said}" + (f"; {rest}" if rest else ""), needed=(), manual=said)


#: A point's reason names at most this many runs (or distinct readings) of a kind, then how many more:
#: a point recorded ten thousand times would otherwise carry every run id in its text.
NAMED = 10


def _some(texts: list[str], sep: str = ", ") -> str:
    """``texts`` joined, the first :data:`NAMED` of them and how many more."""
    more = len(texts) - NAMED
    return sep.join(texts[:NAMED]) + (f"{sep}… and {more:,} more" if more > 0 else "")


def _runs_state(b: BisectSpec, label: str, runs: list[RunRec], ctx: Context,
                judged: Optional[dict[tuple, Result]] = None) -> PointState:
    if not runs:
        return PointState(label, "untested")
    skipped = [(r, ctx.invalid_reason(r, brief=True)) for r in runs if not ctx.valid(r)]
    skipped_text = _some([f"{r.run_id} {why}" for r, why in skipped], "; ")
    valid = [r for r in runs if ctx.valid(r)]
    singles = _judge_each(b, ctx, valid, judged)
    if _flaky(singles, ctx.spec.subject):
        good = [r.run_id for r, res in singles if res.value is V.TRUE]
        bad = [r.run_id for r, res in singles if res.value is V.FALSE]
        parts = _some(list(dict.fromkeys(p for _, res in singles for p in res.parts)), "; ")
        reason = f"good in {_some(good)} but bad in {_some(bad)}: re-run it to settle — {parts}"
        keys = tuple(r.key for r, res in singles if res.value in (V.TRUE, V.FALSE))
        pooled = None if ctx.spec.subject else ctx.measure(valid, _bisect_metric(b, ctx))
        return PointState(label, "flaky", keys, reason, pooled.value if pooled else None)
    res = _judge(b, ctx, valid) if valid else Result(V.NODATA)
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
    metric = _bisect_metric(b, ctx)
    missing = [r for r in valid if not ctx.has_metric(r, metric)]
    if missing:
        valid = missing
        why = _some([f"{r.run_id} {r.status} without a {metric} value" for r in valid], "; ")
        why += ": no number; record its value or re-run it" + (f"; not counted: {skipped_text}" if skipped_text else "")
        return PointState(label, "no_number", tuple(r.key for r in valid), why,
                          needed=(f"a {metric} value",))
    why = skipped_text or "; ".join(dict.fromkeys(res.parts)) or "no value"
    return PointState(label, "skipped", tuple(r.key for r in runs), why)


def _flaky(singles: list[tuple[RunRec, Result]], subject: Optional[str]) -> bool:
    """Two runs judged one good and one bad (of one subject: subjects may differ)."""
    verdicts: dict[Optional[str], set[V]] = {}
    for r, res in singles:
        verdicts.setdefault(subject_of(r, subject) if subject else None, set()).add(res.value)
    return any(V.TRUE in v and V.FALSE in v for v in verdicts.values())


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
    point_runs = _points_runs(b, values, axis, ctx)
    judged: dict[tuple, Result] = {}  # runs that recorded the same are judged once, at any point
    states = [_point_state(b, label, runs, ctx, judged) for runs, label in zip(point_runs, labels)]
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
            for wanted in (("untested",), ("unknown", "no_number", "flaky"), ("skipped",)):
                nxt = _midpoint([i for i in inside if kinds[i] in wanted])
                if nxt is not None:
                    break
            if nxt is None and not ends_ok:  # the boundary is found: check the ends it rests on
                nxt = 0 if kinds[0] != "good" else n - 1
    steps = 0
    if nxt is not None:
        # an unchecked end costs one run of its own before the halving starts
        unchecked = ({0} if kinds[0] != "good" else set()) | ({n - 1} if kinds[n - 1] != "bad" else set())
        between = [i for i in inside if i not in unchecked]
        steps = math.ceil(math.log2(len(between) + 1)) + len(unchecked)
    done = bool(goods and bads and hi == lo + 1 and ends_ok)
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


_STATE_WORDS = {"unknown": "can't tell", "skipped": "skipped (no valid run)", "flaky": "flaky",
               "no_number": "without a number"}


def _unmoved(b: BisectSpec, old: BisectState, new: Sequence[RunRec]) -> Optional[BisectState]:
    """A stored bisect after runs that recorded its keys were added to the config it reads:
    as it was when none of them is a run of one of its points (a nightly's run of a new
    build, past the range); None (worked out again) when one is, or when its good_when judges
    a run by other runs than the point's."""
    if not _by_content(b.good_when):
        return None
    axis = [b.axis] if isinstance(b.axis, str) else list(b.axis)
    where = {k: str(v) for k, v in b.where.items()}
    free_keys = [k for k in axis if k not in where]
    points = {tuple(str(v[i]) for i, k in enumerate(axis) if k not in where)
              for v in ([p] if isinstance(p, str) else list(p) for p in b.points)}
    return None if any(_run_point(r.provenance, where, free_keys) in points for r in new) else old


def evaluate_bisects(bisects: Sequence[BisectSpec], ctx: Context) -> list[BisectState]:
    """Every bisect, those a good_when reads first (the loader refuses cycles);
    each state lands in ``ctx.bisects`` for the conditions that read it."""
    pending = list(bisects)
    while pending:
        ready = [b for b in pending if b.good_when.bisects() <= set(ctx.bisects) | {b.id}] or pending[:1]
        for b in ready:
            state = ctx.memo.piece(ctx, f"b:{b.id}", lambda: evaluate_bisect(b, ctx), BISECT,
                                   update=lambda old, new, b=b: _unmoved(b, old, new))
            ctx.bisects[b.id] = state
            ctx.bisects.fingerprints[b.id] = fingerprint(BISECT.encode(state))
        pending = [b for b in pending if b not in ready]
    return [ctx.bisects[b.id] for b in bisects]
