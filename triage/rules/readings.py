"""What one run says at a glance, and repeats of one config that disagree beyond noise."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from triage.rules import stats
from triage.rules.context import Context
from triage.rules.records import (
    RunRec,
    Warning_,
)
from triage.rules.stats import Outcome, fmt

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
    return ", ".join(bits)



class Readings(dict):
    """Each run's reading, computed when first asked for: a report shows the
    newest runs, not the hundred thousand an investigation may hold."""

    def __init__(self, ctx: Context, notes: Optional[Mapping[str, str]] = None) -> None:
        super().__init__()
        self._ctx = ctx
        self._notes = notes or {}  # run key -> what its reading adds ("confounded (image)")
        self._at_hand: dict[str, RunRec] = {}

    def prime(self, runs: Sequence[RunRec]) -> None:
        """Runs a view has at hand already: their readings need not look them up."""
        self._at_hand.update((r.key, r) for r in runs)

    def __missing__(self, key: str) -> str:
        run = self._at_hand.get(key) or self._ctx.by_key.get(key)
        if run is None:
            raise KeyError(key)
        value, note = reading(run, self._ctx), self._notes.get(key)
        if note:
            value = f"{value}; {note}" if value else note
        self[key] = value
        return value

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        try:
            return self[key]
        except KeyError:
            return default


def repeats_in(runs: Sequence[RunRec], ctx: Context) -> list[tuple[int, Warning_]]:
    """Runs of one config with the same provenance whose primary metric
    differs beyond noise: they are pooled as repeats, so say so.  Each
    warning comes with the place of its group's first run."""
    metric = ctx.spec.metric
    ignore = set(ctx.spec.ignore_provenance)
    groups: dict[tuple, list[RunRec]] = {}
    for r in runs:
        if metric in r.metrics and ctx.invalid_reason(r) is None:
            items = r.provenance.items()
            prov = frozenset(items if not ignore else [(k, v) for k, v in items if k not in ignore])
            groups.setdefault((r.config, prov), []).append(r)
    out = []
    for (config, _), group in groups.items():
        if len(group) < 2:
            continue
        lo = min(group, key=lambda r: r.metrics[metric][0])
        hi = max(group, key=lambda r: r.metrics[metric][0])
        high, low = ctx.measure([hi], metric), ctx.measure([lo], metric)  # with the metric's declared noise
        assert high is not None and low is not None
        c = stats.compare(high, low, margin=ctx.margin, tolerance=ctx.tolerance, confidence=ctx.confidence)
        if c.outcome is Outcome.DIFFERENT and c.method != "exact":
            out.append((ctx.order(group[0]), Warning_("repeats", (
                f"runs of {ctx.short(config)} with the same provenance disagree: {hi.run_id} "
                f"{fmt(hi.metrics[metric][0])} vs {lo.run_id} {fmt(lo.metrics[metric][0])} ({c.noise}); "
                "they are pooled as repeats: exclude the bad one or record what differs"))))
    return out
