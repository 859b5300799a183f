"""The evaluation context: an investigation's runs indexed, its references resolved."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from triage.rules import stats
from triage.rules.records import (
    Investigation,
    RunRec,
)
from triage.rules.schema import (
    INVALID_STATUSES,
    Selector,
)
from triage.rules.stats import Measure, fmt


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
        self.bisects: dict[str, Any] = {}  # bisect id -> BisectState, as each is evaluated

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
