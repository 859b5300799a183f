"""What one run says at a glance, and repeats of one config that disagree beyond noise."""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Optional, Sequence

from triage.rules.decisions import stats
from triage.rules.engine.context import FAIL_RATE, Context
from triage.rules.engine.records import (
    RunRec,
    SubjectTable,
    Warning_,
)
from triage.rules.language.schema import BisectSpec
from triage.rules.decisions.stats import Outcome, fmt
from triage.rules.engine.subjects import subject_context, subject_of

# --------------------------------------------------------------------------
# Readings, suggestions, the whole evaluation


def reading(run: RunRec, ctx: Context, said: Optional[dict] = None) -> str:
    """One short phrase: what this run's primary metric says.  ``said``: what a valid run's
    value and n said already, in this evaluation (a run's measure is made of them alone,
    but for a fail rate)."""
    why = ctx.invalid_reason(run, brief=True)
    if why is not None:
        return why
    subject = subject_of(run, ctx.spec.subject) if ctx.spec.subject is not None else None
    if subject is not None:
        ctx = subject_context(ctx, subject or "")  # its own references and gate
    metric = ctx.spec.metric
    if not ctx.has_metric(run, metric):
        return "probe" if run.metrics else "no " + metric
    key = (subject, run.metrics[metric]) if said is not None and metric != FAIL_RATE else None
    text = said.get(key) if key is not None else None
    if text is None:
        m = ctx.measure([run], metric)
        assert m is not None
        text = ", ".join(_said(m, ctx))
        if key is not None:
            said[key] = text
    return text


#: The first runs of a recipe the Experiments table shows, each with what it reads.
SHOWN_RUNS = 20

#: A shown run: (key, run id, config, URL, its primary metric's value or None, its reading
#: before a confound's note, why it decides nothing in brief or None, that in a word or two or None).
Shown = tuple[str, str, str, Optional[str], Optional[float], str, Optional[str], Optional[str]]


def shown_runs(recipe: str, ctx: Context) -> tuple[Shown, ...]:
    """A recipe's first :data:`SHOWN_RUNS` runs (by time, as its facts keep them) as the
    Experiments table shows them.  Worked out with the evaluation and kept as a piece of
    it, so that a view of a recipe whose runs did not change reads none of them.  A
    confound's note is left to the view (the recipe's confounds change with its base)."""
    from triage.rules.engine.facts import facts

    keys = facts(recipe, ctx).keys[:SHOWN_RUNS]
    if not keys:
        return ()
    runs = {r.key: r for r in ctx.by_config.get(recipe, [])}
    # what a value says, once per evaluation: it says the same of every recipe's runs
    metric, said = ctx.spec.metric, ctx.once.setdefault("readings", {})
    out: list[Shown] = []
    for key in keys:
        run = runs[key]
        value = run.metrics.get(metric)
        invalid = None if ctx.valid(run) else ctx.invalid_reason(run, brief=True) or ""
        out.append((key, run.run_id, run.config, run.url, value[0] if value else None, reading(run, ctx, said),
                    invalid, None if invalid is None else invalid_word(run)))
    return tuple(out)


def invalid_word(run: RunRec) -> str:
    """A run that decides nothing in a word or two: excluded, or its status and the known
    failure it matched (a report's Warnings say what that failure means)."""
    if run.excluded:
        return "excluded"
    return f"{run.status}: {run.signature}" if run.signature else run.status


def _said(m: stats.Measure, ctx: Context) -> list[str]:
    """What a measure of the primary metric says against good, bad and the gate."""
    bits = []
    exact = []
    for name in ("bad", "good"):
        ref, _ = ctx.refs.get(name, (None, ""))
        if ref is None:
            continue
        c = stats.compare(m, ref, margin=ctx.margin, tolerance=ctx.tolerance, confidence=ctx.confidence)
        if c.outcome is Outcome.SAME:
            bits.append(f"≈ {name}")
        elif c.method == "exact":
            exact.append((abs(c.delta), name, c.delta))
    if not bits and len(exact) == 2:  # no noise known: say which of good and bad it is nearest
        _, name, delta = min(exact)
        bits.append(f"nearest {name} (Δ {stats.fmt_delta(delta)}, no noise known)")
    if ctx.spec.gate is not None:
        passes = m.value >= ctx.spec.gate if ctx.spec.direction == "higher" else m.value <= ctx.spec.gate
        bits.append("passes gate" if passes else "fails gate")
    return bits


def subject_table(ctx: Context, bisects: Sequence[BisectSpec]) -> Optional[SubjectTable]:
    """With subjects: each subject's valid runs per config (a bisect's points apart), each cell its
    pooled value and what it says in that subject's own terms."""
    key = ctx.spec.subject
    if key is None:
        return None
    metric = ctx.spec.metric
    cells: dict[tuple[str, str], list[RunRec]] = {}
    columns: dict[tuple[str, int, int], str] = {}  # (config, bisect, point) -> label, in the order met
    firsts: dict[str, int] = {}
    for r in ctx.runs:
        subject = subject_of(r, key)
        if subject is None or not ctx.valid(r) or not ctx.has_metric(r, metric):
            continue
        place = _point_of(r, bisects)
        order = firsts.setdefault(r.config, len(firsts))
        label = ctx.short(r.config) + (f" @ {place[2]}" if place else "")
        columns.setdefault((order, *(place[:2] if place else (-1, -1))), label)
        cells.setdefault((subject, label), []).append(r)
    labels = [label for _, label in sorted(columns.items())]
    subjects = dict.fromkeys([*ctx.spec.subjects, *(s for s, _ in cells)])
    rows = []
    for subject in subjects:
        sub = subject_context(ctx, subject)
        row = []
        for label in labels:
            m = sub.measure(cells[subject, label], metric) if (subject, label) in cells else None
            said = [] if m is None else [_GATE.get(bit, bit) for bit in _said(m, sub)]
            row.append("" if m is None else " ".join([fmt(m.value), *said]))
        rows.append((subject, tuple(row)))
    return SubjectTable(key, tuple(labels), tuple(rows))


_GATE = {"passes gate": "✓ gate", "fails gate": "✗ gate"}


def _point_of(run: RunRec, bisects: Sequence[BisectSpec]) -> Optional[tuple[int, int, str]]:
    """(the bisect, the point, its label) a run was recorded at, if any."""
    for i, b in enumerate(bisects):
        configs = None if b.config is None else [b.config] if isinstance(b.config, str) else b.config
        if configs is not None and run.config not in configs:
            continue
        axis = [b.axis] if isinstance(b.axis, str) else list(b.axis)
        got = tuple(run.provenance.get(k) for k in axis)
        if None in got:
            continue
        values = [(p,) if isinstance(p, str) else tuple(p) for p in b.points]
        at = tuple(str(x) for x in got)
        if at in values:
            return i, values.index(at), b.point_labels()[values.index(at)]
    return None



class Readings(dict):
    """Each run's reading, computed when first asked for: a report shows the
    newest runs, not the hundred thousand an investigation may hold."""

    def __init__(self, ctx: Context, notes: Optional[Mapping[str, str]] = None) -> None:
        super().__init__()
        self._ctx = ctx
        self._notes = notes or {}  # run key -> what its reading adds ("confounded (image)")
        self._at_hand: dict[str, RunRec] = {}
        # (subject, (value, n)) -> what a valid run of them says: shared with the recipes' shown runs
        self._said: dict[tuple, str] = ctx.once.setdefault("readings", {})

    def prime(self, runs: Sequence[RunRec]) -> None:
        """Runs a view has at hand already: their readings need not look them up."""
        self._at_hand.update((r.key, r) for r in runs)

    def __missing__(self, key: str) -> str:
        run = self._at_hand.get(key) or self._ctx.by_key.get(key)
        if run is None:
            raise KeyError(key)
        value, note = reading(run, self._ctx, self._said), self._notes.get(key)
        if note:
            value = f"{value}; {note}" if value else note
        self[key] = value
        return value

    def note(self, key: str) -> Optional[str]:
        """What a run's confounds add to its reading (None: it has none)."""
        return self._notes.get(key)

    def expect_notes(self, keys: Iterable[str]) -> None:
        """The runs whose notes a view will ask for (:meth:`note`): looked up together."""
        prime = getattr(self._notes, "prime", None)
        if prime is not None:
            prime(keys)

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default


#: A group of repeats: (its provenance as sorted pairs, the place of its first run,
#: its lowest run and its highest as (run id, value, n)), the first of equal values.
Group = tuple[tuple[tuple[str, str], ...], int, tuple[str, float, Optional[int]], tuple[str, float, Optional[int]]]


def group_key(provenance: Mapping[str, str], ignore: set[str]) -> tuple[tuple[str, str], ...]:
    """What a run's group of repeats is known by: its provenance as sorted pairs, less the
    keys ``ignore_provenance`` names (``ignore``)."""
    if not ignore or ignore.isdisjoint(provenance):  # every key: sorted as they are (no two alike)
        return tuple(sorted(provenance.items()))
    kept = [kv for kv in provenance.items() if kv[0] not in ignore]  # a list sorted in place: no generator
    kept.sort()
    return tuple(kept)


def ALL_VALID(run: RunRec) -> bool:
    """For :func:`repeat_groups`: the runs given are valid already (not asked again)."""
    return True


def repeat_groups(runs: Sequence[RunRec], ctx: Context, valid: Optional[Callable[[RunRec], bool]] = None,
                  into: Optional[dict[str, dict]] = None) -> dict[str, dict[tuple, Group]]:
    """Per config, its valid runs with the primary metric grouped by provenance (less the
    keys ``ignore_provenance`` names), first seen first; ``into``: groups to add the runs to;
    ``valid``: which runs are (default :meth:`Context.valid`; :func:`ALL_VALID`: all given)."""
    metric = ctx.spec.metric
    ignore = set(ctx.spec.ignore_provenance)
    if valid is None:
        valid = ctx.valid
    every = valid is ALL_VALID
    out: dict[str, dict[tuple, Group]] = into if into is not None else {}
    seen = _provenance_keys(ctx, ignore)
    order = ctx.order
    config, groups = None, {}  # the runs of one config come one after another: its groups at hand
    for r in runs:
        got = r.metrics.get(metric)
        if got is None or not (every or valid(r)):
            continue
        known = seen.get(id(r.provenance))
        if known is None:
            known = seen[id(r.provenance)] = (r.provenance, group_key(r.provenance, ignore))
        prov = known[1]
        if r.config != config:
            config = r.config
            groups = out.get(config)
            if groups is None:
                groups = out[config] = {}
        value, n = got
        g = groups.get(prov)
        if g is None:
            groups[prov] = (prov, order(r), (r.run_id, value, n), (r.run_id, value, n))
        else:
            _, first, lo, hi = g
            if value < lo[1] or value > hi[1]:
                groups[prov] = (prov, first, (r.run_id, value, n) if value < lo[1] else lo,
                                (r.run_id, value, n) if value > hi[1] else hi)
    return out


#: Provenance mappings whose keys an evaluation keeps at most (:func:`_provenance_keys`).
PROVENANCE_KEYS = 20_000


def _provenance_keys(ctx: Context, ignore: set[str]) -> dict[int, tuple]:
    """Per provenance mapping (by id), the mapping and its key as :func:`repeat_groups` groups
    by it (less the keys ``ignore`` names), for the whole evaluation: runs that recorded the
    same share one mapping, in one config and, read by one source, across configs (a
    nightly's matrix).  Each entry holds its mapping, so that no id is taken by another while
    it is kept; past :data:`PROVENANCE_KEYS` entries it starts again.  An evaluation that lets
    each config's runs go (an import's) keeps them too, as its source keeps what it decoded
    (:class:`triage.kb.investigations.ReadShared`): a bounded number of mappings outlive their runs."""
    name = f"provenance keys less {sorted(ignore)}"
    seen: dict[int, tuple] = ctx.once.setdefault(name, {})
    if len(seen) > PROVENANCE_KEYS:
        seen.clear()
    return seen


def repeat_warnings(config: str, groups: Mapping[tuple, Group], ctx: Context) -> list[tuple[int, Warning_]]:
    """The groups whose lowest and highest runs differ beyond noise, with the place of their first run."""
    metric = ctx.spec.metric
    out = []
    # whether two values are shown different, once per pair of values and sample counts in an
    # evaluation: a wide investigation's thousands of groups of repeats hold half as many pairs
    # (a subject's context shares ``once`` with the investigation's: the metric and the noise settings say which)
    apart: dict[tuple, bool] = ctx.once.setdefault(
        f"repeats shown different: {metric} {ctx.tolerance!r} {ctx.confidence} {ctx.settings(metric)!r}", {})
    for _, first, lo, hi in groups.values():
        if lo[0] == hi[0] and lo[1] == hi[1]:
            continue  # one run, or runs of one value
        pair = (hi[1], hi[2], lo[1], lo[2])
        if apart.get(pair) is False:
            continue  # most groups: the words of a comparison are asked for those that disagree
        high, low = ctx.measure_one(metric, hi[1], hi[2]), ctx.measure_one(metric, lo[1], lo[2])  # with its noise
        assert high is not None and low is not None
        if pair not in apart:
            apart[pair] = stats.shown_different(high, low, tolerance=ctx.tolerance, confidence=ctx.confidence)
        if not apart[pair]:
            continue
        c = stats.compare(high, low, margin=ctx.margin, tolerance=ctx.tolerance, confidence=ctx.confidence)
        if c.different and c.method != "exact":
            out.append((first, Warning_("repeats", (
                f"runs of {ctx.short(config)} with the same provenance disagree: {hi[0]} "
                f"{fmt(hi[1])} vs {lo[0]} {fmt(lo[1])} ({c.noise}); "
                "they are pooled as repeats: exclude the bad one or record what differs"))))
    return out
