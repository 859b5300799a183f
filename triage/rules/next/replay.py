"""Replay a finished investigation: how many runs would the suggestions have spent?

Start from some of its runs (the failing baseline); then, again and again,
take the best suggestion that a recorded run answers (a recipe's run, a
bisect point's run, a missing base run), feed that one run (run id + config)
back, and count, until the recorded verdict holds (the target statuses and
bisect ends).  Runs that are no result (crashed, infra, ...) count as spent.  The same count for
the order in which the runs were recorded, and the median over random orders,
put the number in context.  Pure: the engine's input is built in memory.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Optional, Sequence

from triage.errors import InputError
from triage.rules.engine.context import _provenance_matches
from triage.rules.engine.evaluate import evaluate
from triage.rules.engine.records import Evaluation, Investigation, RunRec, Suggestion

STATUSES = ("open", "ruled_out", "confirmed", "inconclusive", "conflicting")


@dataclass(frozen=True)
class Step:
    suggestion: Suggestion
    run: RunRec
    changed: tuple[tuple[str, str, str], ...] = ()  # (hypothesis, before, after)
    passed_over: tuple[str, ...] = ()  # better suggestions no recorded run answers


@dataclass
class Replay:
    start: list[RunRec]
    recorded: int  # H: the runs the oracle holds
    steps: list[Step] = field(default_factory=list)
    reached: bool = False
    stuck: str = ""  # why it stopped short of the verdict
    recorded_order: Optional[int] = None  # runs to verdict in the recorded order (None: never)
    random_orders: list[Optional[int]] = field(default_factory=list)

    @property
    def spent(self) -> int:
        return len(self.steps)

    @property
    def random_median(self) -> Optional[float]:
        got = [k for k in self.random_orders if k is not None]
        return statistics.median(got) if got and len(got) == len(self.random_orders) else None


def _pick(runs: Sequence[RunRec], wanted: Sequence[str]) -> list[RunRec]:
    """The runs named by id (every config) or by id/config; InputError for one that matches none."""
    out: list[RunRec] = []
    for w in wanted:
        found = [r for r in runs if w in (r.run_id, r.key)]
        if not found:
            raise InputError(f"no run {w!r} in the investigation")
        out += [r for r in found if r not in out]
    return out


def check_targets(inv: Investigation, targets: Mapping[str, str], bisects: Mapping[str, str]) -> None:
    hyps = {h.id for h in inv.hypotheses}
    for h, status in targets.items():
        if h not in hyps:
            raise InputError(f"--target {h}={status}: no hypothesis {h!r} in {inv.spec.id}")
        if status not in STATUSES:
            raise InputError(f"--target {h}={status}: the status must be one of {', '.join(STATUSES)}")
    specs = {b.id: b for b in inv.bisects}
    for b, point in bisects.items():
        if b not in specs:
            raise InputError(f"--bisect {b}={point}: no bisect {b!r} in {inv.spec.id}")
        if point not in specs[b].point_labels():
            raise InputError(f"--bisect {b}={point}: not a point of bisect {b!r}")
    if not targets and not bisects:
        raise InputError("replay needs a verdict to reach: --target HYP=STATUS or --bisect ID=FIRST_BAD")


def holds(ev: Evaluation, targets: Mapping[str, str], bisects: Mapping[str, str]) -> bool:
    """The verdict: every target status, and every bisect done with that first bad point."""
    if any(ev.statuses.get(h) != s for h, s in targets.items()):
        return False
    by = {b.id: b for b in ev.bisects}
    return all(by[b].done and by[b].first_bad == p for b, p in bisects.items())


def _answers(s: Suggestion, inv: Investigation, run: RunRec) -> bool:
    """Whether a recorded run is a run of what the suggestion asks for."""
    if s.kind != "bisect":
        return run.config == s.recipe
    spec = next(b for b in inv.bisects if f"bisect:{b.id}" == s.recipe)
    if spec.config is not None and run.config not in ([spec.config] if isinstance(spec.config, str) else spec.config):
        return False
    axis = [spec.axis] if isinstance(spec.axis, str) else list(spec.axis)
    point = spec.points[spec.point_labels().index(s.point or "")]
    values = [point] if isinstance(point, str) else list(point)
    return _provenance_matches(run, dict(zip(axis, values)) | dict(spec.where))


def _with(inv: Investigation, runs: Sequence[RunRec]) -> Investigation:
    return replace(inv, runs=list(runs))


def _in_order(inv: Investigation, start: list[RunRec], order: Sequence[RunRec], targets: Mapping[str, str],
              bisects: Mapping[str, str]) -> Optional[int]:
    runs = list(start)
    if holds(evaluate(_with(inv, runs)), targets, bisects):
        return 0
    for k, r in enumerate(order, 1):
        runs.append(r)
        if holds(evaluate(_with(inv, runs)), targets, bisects):
            return k
    return None


def replay(inv: Investigation, start: Sequence[str], targets: Mapping[str, str], bisects: Mapping[str, str] = {},
           leave_out: Sequence[str] = (), orders: int = 20, seed: int = 0) -> Replay:
    """Replay ``inv`` (with all its recorded runs) from the runs ``start`` names.

    The oracle is every other run except excluded ones and those ``leave_out``
    names; ``orders`` random orders of it (seeded) give the median."""
    check_targets(inv, targets, bisects)
    first = _pick(inv.runs, start)
    gone = _pick(inv.runs, leave_out) if leave_out else []
    oracle = [r for r in inv.runs if r not in first and r not in gone and not r.excluded]
    out = Replay(first, len(oracle))
    runs, left = list(first), list(oracle)
    ev = evaluate(_with(inv, runs))
    while not holds(ev, targets, bisects):
        passed: list[str] = []
        chosen = None
        for s in ev.suggestions:
            found = next((r for r in left if _answers(s, inv, r)), None)
            if found is not None:
                chosen = (s, found)
                break
            passed.append(s.recipe)
        if chosen is None:
            out.stuck = ("no recorded run answers any suggestion" if ev.suggestions else "nothing is suggested") + (
                f" (passed over: {', '.join(passed)})" if passed else "")
            break
        s, r = chosen
        left.remove(r)
        runs.append(r)
        before = ev.statuses
        ev = evaluate(_with(inv, runs))
        changed = tuple((h, before.get(h, "open"), st) for h, st in ev.statuses.items() if before.get(h) != st)
        out.steps.append(Step(s, r, changed, tuple(passed)))
    else:
        out.reached = True
    out.recorded_order = _in_order(inv, first, oracle, targets, bisects)
    rng = random.Random(seed)
    for _ in range(orders):
        shuffled = list(oracle)
        rng.shuffle(shuffled)
        out.random_orders.append(_in_order(inv, first, shuffled, targets, bisects))
    return out


def _count(k: Optional[float], h: int) -> str:
    if k is None:
        return f"never, with all {h} recorded"
    share = f"{k:g}/{h} = {k / h:.0%}" if h else "—"
    return f"{k:g} of {h} recorded ({share})"


def trace(rp: Replay, short: Callable[[str], str] = str) -> str:
    """The replay as text: the start, each step, the counts."""
    lines = [f"start: {', '.join(f'{r.run_id} ({short(r.config)})' for r in rp.start)}"]
    for i, st in enumerate(rp.steps, 1):
        s, r = st.suggestion, st.run
        what = s.recipe if s.kind != "bisect" else f"{s.recipe} at {s.point}"
        got = r.status + "".join(f", {k}={v:g}" for k, (v, _) in sorted(r.metrics.items())[:1])
        lines.append(f"  {i}. {short(what)} (score {s.score:.2f}) → {r.run_id} ({short(r.config)}): {got}")
        if st.passed_over:
            lines.append(f"       passed over (no recorded run): {', '.join(short(x) for x in st.passed_over)}")
        for h, before, after in st.changed:
            lines.append(f"       {h}: {before} → {after}")
    if not rp.reached:
        lines.append(f"  stopped: {rp.stuck}")
    lines.append(f"runs to verdict: {_count(rp.spent if rp.reached else None, rp.recorded)}")
    lines.append(f"recorded order: {_count(rp.recorded_order, rp.recorded)}")
    if rp.random_orders:
        lines.append(f"random orders: median {_count(rp.random_median, rp.recorded)} over {len(rp.random_orders)}")
    return "\n".join(lines) + "\n"
