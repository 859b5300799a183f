"""The evaluation context: an investigation's runs indexed, its references resolved."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Sequence

from triage.rules.decisions import stats
from triage.rules.engine.records import (
    Investigation,
    RunRec,
)
from triage.rules.language.schema import (
    MetricSpec,
    Selector,
    outcome,
)
from triage.rules.engine.memo import Memo
from triage.rules.engine.keys import each, splits
from triage.rules.engine.source import ALL, ListSource, RunSource, Token, with_keys
from triage.rules.decisions.stats import Measure, fmt

# The built-in pass-rate metric: k failed of n over a selection's passed runs and
# its runs of a declared failure (or counts a run carries itself: --metric fail_rate=3/20).
FAIL_RATE = "fail_rate"
_NO_SETTINGS = MetricSpec.model_construct()  # the defaults: no validator built for them


class Context:
    def __init__(self, inv: Investigation, *, source: Optional[RunSource] = None, spec: Any = None,
                 within: Optional["Context"] = None) -> None:
        """``within``: the context this one is part of (one subject's runs and settings, from
        ``source`` and ``spec``): it notes what is read for the same pieces, and shares its bisects."""
        self.inv = inv
        self.spec = spec if spec is not None else inv.spec
        if source is None:
            source = inv.source if inv.source is not None else ListSource(inv.runs)
        self.source: RunSource = source
        # The outcomes that are the failure under study (bad results), and with passed every result;
        # a run of another outcome is no result.  `error`, the older word, is `infra`.
        self.failure = frozenset(outcome(s) for s in self.spec.failure)
        self.results = self.failure | {"passed"}
        if "infra" in self.results:
            self.results |= {"error"}
            self.failure |= {"error"}
        # known failures whose runs are results: the signature names a declared outcome
        self._counted_sigs = frozenset(k for k, s in inv.signatures.items() if s.outcome in self.failure)
        # what the pieces being worked out read (memo.py); shared with the context this one is part of
        self._tracks: list[dict[Token, str]] = within._tracks if within is not None else []
        self._noting: Optional[list[tuple[Token, Optional[str]]]] = None  # what :meth:`pool` is noting that it reads
        self._pools: dict[str, Pool] = {}  # (selector, metric) -> its pool (:meth:`pool`)
        self._ones: dict[tuple, Optional[Measure]] = {}  # (metric, value, n) -> :meth:`measure_one`
        self.subjects: dict[str, Any] = {}  # subject -> (its context, what making it read): triage.rules.engine.subjects
        self.whole = within is None  # of the whole investigation, not one subject's runs
        self.memo = Memo(keep=False)  # the pieces of an earlier evaluation to reuse (none: work everything out)
        self.by_config = _Configs(self)  # config -> its runs, in the order recorded
        self.by_key = _Keys(self)  # "run_id/config" -> the run (the first, as a scan would find)
        self.by_id = _Ids(self)  # run id -> its runs (one per config)
        self.tolerance = stats.Tolerance.parse(self.spec.tolerance) if self.spec.tolerance is not None else None
        self.confidence = self.spec.confidence
        self.warnings: list[str] = []  # said once in the report: noise that cannot decide, a missing scale
        self.spec_bisects = inv.bisects  # the bisects whose points no `{config: X}` reference pools
        self.refs: dict[str, tuple[Optional[Measure], str]] = {}
        per_subject = self.spec.subject is not None and within is None
        for name, ref in self.spec.references.items():
            if per_subject and ref.value is None:  # a config's or a run's runs: resolved per subject only
                self.refs[name] = (None, f"{name} (per {self.spec.subject})")
                continue
            self.refs[name] = self._resolve_reference(name, ref)
        good, bad = self.refs.get("good", (None, "")), self.refs.get("bad", (None, ""))
        self.margin: Optional[float] = None
        if good[0] is not None and bad[0] is not None:
            self.margin = abs(good[0].value - bad[0].value) / 2 or None
            if self.margin is not None and not stats.compare(good[0], bad[0], tolerance=self.tolerance,
                                                             confidence=self.confidence).different:
                # a gap that is noise of either sign is no difference that matters
                self.margin = None
                self.warnings.append(f"good ({fmt(good[0].value)}) and bad ({fmt(bad[0].value)}) are not shown "
                                     "different: no margin, so nothing reads as the same as either and no "
                                     "recovery can be told; repeat the references or give conditions a margin:")
            elif self.margin is None:
                self.warnings.append(f"good and bad are the same value ({fmt(good[0].value)}): no reading can "
                                     "tell them apart; check the references")
            else:
                self._warn_wide_noise(good[0], bad[0])
        self.warnings.extend(no_noise_warnings(self.spec))
        self.bisects = _Bisects(self) if within is None else within.bisects  # bisect id -> BisectState
        # what a piece may read that this evaluation works out before it, as short texts:
        # read as ("v", name) tokens (memo.py), e.g. a base config's newest valid run
        self.derived: dict[str, str] = {} if within is None else within.derived
        # values worked out once per evaluation outside the pieces, by name (a base's newest valid run)
        self.once: dict[str, Any] = {} if within is None else within.once
        if within is not None:
            self.memo = within.memo

    # -- what is read -----------------------------------------------------
    @property
    def runs(self) -> list[RunRec]:
        """Every run, in the order recorded."""
        self.read(ALL)
        return self.source.all()

    def read(self, token: Token, fingerprint: Optional[str] = None) -> None:
        """Note that the pieces being worked out read ``token`` (as it is now)."""
        if self._noting is not None:
            self._noting.append((token, fingerprint))
        if self._tracks:
            fp = self.source.fingerprint(token) if fingerprint is None else fingerprint
            for track in self._tracks:
                track[token] = fp

    @contextmanager
    def unnoted(self) -> Iterator[None]:
        """Nothing read inside is noted for the pieces being worked out (a piece of its own,
        worked out inside one, notes what it reads for itself; the one around it notes it)."""
        tracks, noting = list(self._tracks), self._noting
        self._tracks.clear()  # shared with the contexts this one is part of: emptied in place
        self._noting = None
        try:
            yield
        finally:
            self._tracks[:] = tracks
            self._noting = noting

    def order(self, run: RunRec) -> int:
        return self.source.order(run)

    def runs_with(self, config: str, keys: Sequence[str]) -> list[RunRec]:
        """A config's runs that recorded every one of ``keys`` in their provenance
        (what a bisect looks at): only a change to those makes its reading stale."""
        self.read(with_keys(config, keys))
        has: dict[int, bool] = {}  # id of a provenance mapping (shared by runs that recorded the same) -> it has them
        want = set(keys)
        out = []
        for r in self.source.config(config):
            ok = has.get(id(r.provenance))
            if ok is None:
                ok = has[id(r.provenance)] = r.provenance.keys() >= want  # in C, not a generator a run
            if ok:
                out.append(r)
        return out

    # -- metrics ----------------------------------------------------------
    def settings(self, metric: str) -> MetricSpec:
        return self.spec.metrics.get(metric, _NO_SETTINGS)

    def direction(self, metric: Optional[str] = None) -> str:
        """Which way is better for a metric (its own setting, else the investigation's)."""
        return self.settings(metric or self.spec.metric).direction or self.spec.direction

    def noise_sd(self, metric: str, value: float) -> Optional[float]:
        """The metric's declared run-to-run SD at ``value`` (a relative noise scales with it)."""
        noise = self.settings(metric).noise
        return stats.Tolerance.parse(noise).absolute(value) if noise is not None else None

    def has_metric(self, run: RunRec, metric: str) -> bool:
        return metric in run.metrics or (metric == FAIL_RATE and run.status in self.results)

    def _warn_wide_noise(self, good: Measure, bad: Measure) -> None:
        """A tolerance or noise wider than the difference that matters: every reading is can't tell."""
        assert self.margin is not None
        pair = f"good ({fmt(good.value)}) from bad ({fmt(bad.value)})"
        if self.tolerance is not None and self.tolerance.absolute(bad.value) > self.margin:
            self.warnings.append(f"tolerance {self.tolerance} cannot tell {pair}: readings between them are can't tell; "
                                 "narrow it, or give a condition its own margin:")
        metric = self.spec.metric
        sd = self.noise_sd(metric, bad.value)
        if sd and stats.z_quantile((1 + self.confidence) / 2) * sd > self.margin:
            self.warnings.append(f"the noise of one {metric} run (±{fmt(sd)} SD) cannot tell {pair}: "
                                 "repeats narrow it")

    def unscaled(self, runs: Sequence[RunRec]) -> dict[str, tuple[int, int, float, int]]:
        """Per metric, the first of ``runs`` whose value with an n is not a proportion on its
        scale: (the run's order, the metric's place in the run, value, n)."""
        out: dict[str, tuple[int, int, float, int]] = {}
        scales: dict[str, float] = {}
        seen: set[int] = set()  # metrics mappings read already (runs that recorded the same share one)
        for r in runs:
            if id(r.metrics) in seen:
                continue
            seen.add(id(r.metrics))
            for name, (value, n) in r.metrics.items():
                if n is None or name in out:
                    continue
                scale = scales.get(name)
                if scale is None:
                    scale = scales[name] = self.settings(name).scale or 1.0
                if not 0.0 <= value / scale <= 1.0:
                    out[name] = (self.order(r), list(r.metrics).index(name), value, n)
        return out

    def warn_unscaled(self, firsts: Sequence[tuple[str, tuple[int, int, float, int]]]) -> None:
        """Say once per metric that a value with an n is not a proportion (the first such run)."""
        seen: dict[str, tuple[int, int, float, int]] = {}
        for name, first in firsts:
            if name not in seen or first[:2] < seen[name][:2]:
                seen[name] = first
        for name, (_, _, value, n) in sorted(seen.items(), key=lambda x: x[1][:2]):
            scale = self.settings(name).scale or 1.0
            self.warnings.append(
                f"{name} {fmt(value)} has n={n} but is not a proportion in [0, {num(scale)}]: it gets no "
                f"binomial band; declare its scale (metrics: {{{name}: {{scale: 100}}}} for a percentage)")

    # -- runs -------------------------------------------------------------
    def valid(self, run: RunRec) -> bool:
        """Whether a run can decide anything: :meth:`invalid_reason` is None,
        without making the reason (the engine asks this of every run many times)."""
        return (not run.excluded and run.status in self.results
                and (not run.signature or run.signature in self._counted_sigs))

    def invalid_reason(self, run: RunRec, brief: bool = False) -> Optional[str]:
        """Why a run cannot decide anything, or None for a valid run."""
        if run.excluded:
            return f"excluded: {run.excluded_reason or 'no reason given'}"
        if run.signature and not (run.signature in self._counted_sigs and run.status in self.results):
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
        if run.status not in self.results:
            word = run.status if run.status != "failed" else "failed, not a declared failure"
            return word + (f" ({run.note})" if run.note and not brief else "")
        return None

    def named(self, name: str) -> list[RunRec]:
        """The runs a run id or a run key names, in the order recorded."""
        if "/" not in name:  # no key is without a "/": the id's runs
            return list(self.by_id.get(name, []))
        # a key (or an id that holds a "/"): the runs of that id, and the run of that key
        runs = list(self.by_id.get(name, []))
        run = self.by_key.get(name)
        if run is not None and all(r is not run for r in runs):
            runs.append(run)
        return sorted(runs, key=self.order)

    def short(self, config: str) -> str:
        prefix = self.spec.config_prefix
        if prefix and config.startswith(prefix) and len(config) > len(prefix):
            return config[len(prefix):]
        return config

    def select(self, sel: Selector, base: Optional[list[RunRec]] = None) -> list[RunRec]:
        ids = None if sel.run is None else {sel.run} if isinstance(sel.run, str) else set(sel.run)
        if sel.config is not None:
            configs = [sel.config] if isinstance(sel.config, str) else sel.config
            runs = [r for c in configs for r in self.by_config.get(c, [])]
        elif base is not None:
            runs = base
        elif ids is not None:  # the runs the ids name, as a scan of every run would find them
            found = {id(r): r for name in ids for r in self.named(name)}
            runs = sorted(found.values(), key=self.order)
        else:
            runs = self.runs
        if ids is not None:
            runs = [r for r in runs if r.run_id in ids or r.key in ids]
        if sel.provenance:
            runs = [r for r in runs if _provenance_matches(r, sel.provenance)]
        return runs

    def pool(self, sel: Selector, metric: str, without: Sequence[str] = ()) -> tuple[
            int, bool, Optional[Measure], str, Sequence[str], Optional[str]]:
        """How many valid runs ``sel`` selects that have ``metric``, less those of the keys
        ``without``; whether any was left out; their pooled measure, label and keys; and the
        name of the piece that keeps those keys (None: none does).
        Worked out once per evaluation for each selector and metric (many rules and
        predictions compare with one config's thousands of runs), and one config's kept as a
        piece of its own (:mod:`triage.rules.engine.pools`); what selecting them read is
        noted again each time, for the piece that asks."""
        key = repr((sel.config, sel.run, sel.provenance, metric))
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = self._new_pool(sel, metric)
        else:
            for token, fingerprint in pool.reads:
                self.read(token, fingerprint)
        if not without or not pool.holds_any(without):
            return pool.count, False, pool.measure, pool.label, pool.keys, pool.piece
        left = set(each(without))
        runs = [r for r in pool.runs() if r.key not in left]
        if not runs:
            return 0, True, None, "", [], None
        return (len(runs), True, self.measure(runs, metric), self.label(runs, counted=metric == FAIL_RATE),
                list(dict.fromkeys(r.key for r in runs)), None)

    def kept_pools(self, configs: Sequence[str], metric: str) -> list[tuple[Any, Optional[str]]]:
        """Each config's pool of its valid runs with ``metric`` kept as a piece (a
        :class:`triage.rules.engine.pools.Pooled` and the piece's name), what each read noted
        for the piece that asks; only where pools are kept (:func:`triage.rules.engine.pools.kept_here`)."""
        out = []
        for config in configs:
            sel = Selector.model_construct(config=config)
            self.pool(sel, metric)
            kept = self._pools[repr((sel.config, sel.run, sel.provenance, metric))]
            out.append((kept._kept, kept.piece))
        return out

    def _new_pool(self, sel: Selector, metric: str) -> "Pool":
        from triage.rules.engine import pools

        config = pools.config_of(self, sel, metric)
        if config is not None:  # kept as a piece: what the asking piece reads is the pool
            kept, fingerprint = pools.pooled(self, config, metric)
            token = pools.token(config, metric)
            self.read(token, fingerprint)
            pool = Pool.kept(self, kept, metric, sel, [(token, fingerprint)])
            pool.piece = token[1]  # what names the piece that keeps its keys
            return pool
        outer, self._noting = self._noting, []
        try:
            runs = [r for r in self.select(sel) if self.valid(r) and self.has_metric(r, metric)]
            reads = self._noting
        finally:
            self._noting = outer
        if outer is not None:
            outer += reads
        return Pool(self, runs, metric, reads)

    def measure(self, runs: Sequence[RunRec], metric: str) -> Optional[Measure]:
        """The runs' pooled value of a metric, with its n, scale and declared noise."""
        if metric == FAIL_RATE:
            return self._fail_rate(runs)
        vals = [r.metrics[metric] for r in runs if metric in r.metrics]
        if not vals:
            return None
        return self.measure_values([v for v, _ in vals], {n for _, n in vals}, metric)

    def measure_values(self, values: Sequence[float], ns: Any, metric: str, sums: Any = None) -> Measure:
        """:meth:`measure` of runs' ``values`` of ``metric`` (not a fail rate) and their distinct
        sample counts (``sums``: their exact sums, kept with a pool)."""
        n = next(iter(ns)) if len(ns) == 1 else None
        scale = self.settings(metric).scale or 1.0
        return Measure.of(values, n, noise=self.noise_sd(metric, sum(values) / len(values)), scale=scale, sums=sums)

    def measure_one(self, metric: str, value: float, n: Optional[int]) -> Optional[Measure]:
        """:meth:`measure` of one valid run that recorded ``value`` (with ``n``) for ``metric``,
        worked out once per value: a pass over thousands of runs meets the same values again."""
        key = (metric, value, n, type(value))
        m = self._ones.get(key, self)
        if m is self:
            m = self._ones[key] = self.measure([RunRec("", "", "passed", {metric: (value, n)})], metric)
        return m

    def _fail_rate(self, runs: Sequence[RunRec]) -> Optional[Measure]:
        """k failed of n: a run's own counts (fail_rate=3/20), else 1 of 1 if its outcome is a declared
        failure (failed, or timeout when declared), 0 of 1 if it passed."""
        k = n = 0
        for r in runs:
            if FAIL_RATE in r.metrics:
                value, count = r.metrics[FAIL_RATE]
                count = count or 1
                k, n = k + round(value * count), n + count
            elif r.status in self.results:
                k, n = k + (r.status != "passed"), n + 1
        return Measure(k / n, n) if n else None

    def label(self, runs: Sequence[RunRec], counted: bool = False) -> str:
        """The runs' config(s), with how many runs were pooled unless the value shows its counts."""
        return self.label_of(sorted({r.config for r in runs}), len(runs), counted)

    def label_of(self, configs: Sequence[str], count: int, counted: bool = False) -> str:
        """:meth:`label` of ``count`` runs of ``configs`` (sorted)."""
        if len(configs) == 1:
            text = self.short(configs[0])
            return text if count == 1 or counted else f"{text} (×{count})"
        return ", ".join(self.short(c) for c in configs)

    @staticmethod
    def shown(m: Measure, metric: str) -> str:
        """A measure for a sentence: a fail rate as its counts ("fails 7/50"), else its value."""
        if metric == FAIL_RATE and m.n and not m.fixed:
            return f"fails {round(m.value * m.n)}/{m.n}"
        return fmt(m.value)

    def _resolve_reference(self, name: str, ref: Any) -> tuple[Optional[Measure], str]:
        metric = self.spec.metric
        if ref.value is not None:
            scale = self.settings(metric).scale or 1.0
            return Measure(ref.value, ref.n, fixed=ref.n is None, scale=scale), f"{name} {fmt(ref.value)}"
        if ref.run is not None:
            runs = self.named(ref.run)
        else:
            runs = self._reference_runs(ref)
        runs = [r for r in runs if self.valid(r) and self.has_metric(r, metric)]
        if not runs:
            return None, f"{name} (no valid run yet)"
        if ref.run is not None or ref.newest:  # one run: the newest if its id names several
            runs = sorted(runs, key=_run_order)[-1:]
        m = self.measure(runs, metric)  # a config: its valid repeats, pooled
        label = f"{name} {self.shown(m, metric)}" if m else name
        pooled = m is not None and len(runs) > 1 and metric != FAIL_RATE
        if pooled:
            self._warn_disagreeing(name, runs, metric)
        return m, f"{label} (×{len(runs)})" if pooled else label

    def _reference_runs(self, ref: Any) -> list[RunRec]:
        """A `{config: X}` reference's runs: those `where` selects, less the points of a bisect over X
        (a bisect point is a run of its own question, not a repeat of the reference), unless
        `where` names that bisect's axis."""
        runs = list(self.by_config.get(ref.config, []))
        if ref.where:
            runs = [r for r in runs if _provenance_matches(r, ref.where)]
        for b in self.spec_bisects:
            configs = [b.config] if isinstance(b.config, str) else b.config
            keys = [b.axis] if isinstance(b.axis, str) else list(b.axis)
            if (configs is not None and ref.config not in configs) or set(keys) & set(ref.where):
                continue
            points = {(p,) if isinstance(p, str) else tuple(p) for p in b.points}
            runs = [r for r in runs if not all(k in r.provenance for k in keys)
                    or tuple(str(r.provenance[k]) for k in keys) not in points]
        return runs

    def _warn_disagreeing(self, name: str, runs: Sequence[RunRec], metric: str) -> None:
        """A reference that pools runs which disagree beyond their noise: said once, naming them."""
        ordered = sorted(runs, key=lambda r: r.metrics[metric][0] if metric in r.metrics else 0.0)
        low, high = ordered[0], ordered[-1]
        lo_m, hi_m = self.measure([low], metric), self.measure([high], metric)
        if lo_m is None or hi_m is None:
            return
        c = stats.compare(hi_m, lo_m, tolerance=self.tolerance, confidence=self.confidence)
        if c.different and c.method != "exact":
            self.warnings.append(
                f"reference {name} pools {len(runs)} runs that disagree beyond their noise: {high.run_id} "
                f"{fmt(hi_m.value)} vs {low.run_id} {fmt(lo_m.value)} ({c.noise}); narrow it with where: "
                "{KEY: VALUE} or newest: true, or exclude the run that does not belong")

    # -- bounds -----------------------------------------------------------
    def bound(self, b: Any) -> tuple[Optional[float], str]:
        if isinstance(b, (int, float)):
            return float(b), num(float(b))
        if b == "gate":
            return self.spec.gate, f"gate {fmt(self.spec.gate)}" if self.spec.gate is not None else "gate"
        m, label = self.refs.get(b, (None, b))
        return (m.value if m else None), label


def no_noise_warnings(spec: Any) -> list[str]:
    """The compared metrics that have no noise estimate at all (no `noise`, no `tolerance`, no
    sample count known from the rule file): their comparisons are exact, and any difference decides."""
    if spec.tolerance is not None:
        return []
    out = []
    refs_n = any(getattr(r, "n", None) for r in spec.references.values())
    for name in dict.fromkeys([spec.metric, *spec.metrics]):
        st = spec.metrics.get(name, _NO_SETTINGS)
        if name == FAIL_RATE or st.noise is not None or st.n_max is not None or st.scale is not None:
            continue
        if name == spec.metric and refs_n:
            continue
        out.append(f"{name} has no noise estimate: its comparisons are exact, so any difference decides and "
                   f"two runs that differ by chance can rule out the true cause; declare the run-to-run noise "
                   f"(metrics: {{{name}: {{noise: 2%}}}}, an SD), an investigation-wide tolerance (tolerance: 1%), "
                   f"or record its sample count ({name}=VALUE/N)")
    return out


def num(x: float) -> str:
    """A metric value for a sentence: whole numbers (probe counts) stay whole."""
    if float(x).is_integer() and abs(x) < 1e9:
        return str(int(x))
    return fmt(x)


def _run_order(r: RunRec) -> str:
    """Sort key, oldest first, by time; a stable sort keeps runs of one time
    (or none) in the order they were recorded, never by id text."""
    return r.time or ""


def _provenance_matches(run: RunRec, want: Mapping[str, Any]) -> bool:
    for k, v in want.items():
        have = run.provenance.get(k)
        options = v if isinstance(v, list) else [v]
        if have is None or str(have) not in {str(o) for o in options}:
            return False
    return True


class Pool:
    """The runs of a selector that can be pooled for a metric (:meth:`Context.pool`)."""

    def __init__(self, ctx: Context, runs: list[RunRec], metric: str,
                 reads: list[tuple[Token, Optional[str]]]) -> None:
        self._runs, self.reads = runs, reads
        self.count = len(runs)
        self.keys: Sequence[str] = list(dict.fromkeys(r.key for r in runs))
        self._keyset: Optional[frozenset] = None
        self.measure = ctx.measure(runs, metric) if runs else None
        self.label = ctx.label(runs, counted=metric == FAIL_RATE) if runs else ""
        self._ctx, self._sel, self._metric = ctx, None, metric
        self._kept: Any = None
        self.piece: Optional[str] = None  # the name of the piece that keeps its keys (a kept pool's: _new_pool)

    @classmethod
    def kept(cls, ctx: Context, kept: Any, metric: str, sel: Selector,
             reads: list[tuple[Token, Optional[str]]]) -> "Pool":
        """A pool of one config kept as a piece (:class:`triage.rules.engine.pools.Pooled`):
        its runs are read only if asked for."""
        pool = cls(ctx, [], metric, reads)
        pool._kept, pool._sel, pool.count, pool.keys = kept, sel, kept.count, kept.keys
        if kept.count:
            pool.measure = ctx.measure_values(kept.values, kept.ns, metric, kept.sums)
            text = ctx.short(kept.config)  # as Context.label says it of one config's runs
            pool.label = text if kept.count == 1 else f"{text} (×{kept.count})"
        return pool

    def holds_any(self, keys: Sequence[str]) -> bool:
        """Whether any of ``keys`` is pooled here."""
        if self._kept is not None:
            return self._kept.holds_any(keys)
        if self._keyset is None:
            self._keyset = frozenset(self.keys)
        return not self._keyset.isdisjoint(each(keys))

    def runs(self) -> list[RunRec]:
        """The pooled runs (of a kept pool: read now, noted for the piece that asks)."""
        if self._kept is None:
            return self._runs
        ctx, metric = self._ctx, self._metric
        return [r for r in ctx.select(self._sel) if ctx.valid(r) and ctx.has_metric(r, metric)]


class _Configs:
    """config -> its runs, read through the context (so that what is read is noted)."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def get(self, config: str, default: Any = None) -> Any:
        self._ctx.read(("c", config))
        runs = self._ctx.source.config(config)
        return runs if runs else default

    def __getitem__(self, config: str) -> list[RunRec]:
        runs = self.get(config)
        if runs is None:
            raise KeyError(config)
        return runs

    def __contains__(self, config: object) -> bool:
        return isinstance(config, str) and self.get(config) is not None


class _Ids(_Configs):
    def get(self, run_id: str, default: Any = None) -> Any:
        self._ctx.read(("i", run_id))
        runs = self._ctx.source.run_id(run_id)
        return runs if runs else default


class _Keys:
    """"run_id/config" -> the first run of that key; found through its config's runs."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._known: dict[str, dict[str, RunRec]] = {}
        self._configs: Optional[set[str]] = None

    def get(self, key: str, default: Any = None) -> Any:
        if self._configs is None:
            self._configs = set(self._ctx.source.configs())
        for _, config in splits(key):
            self._ctx.read(("c", config))
            if config in self._configs:
                runs = self._known.get(config)
                if runs is None:
                    runs = self._known[config] = {}
                    for r in self._ctx.source.config(config):
                        runs.setdefault(r.key, r)
                if key in runs:
                    return runs[key]
        return default


class _Bisects(dict):
    """bisect id -> its state; reading one notes it (a rule over a bisect reads its state)."""

    def __init__(self, ctx: Context) -> None:
        super().__init__()
        self._ctx = ctx
        self.fingerprints: dict[str, str] = {}  # bisect id -> its state, as a short text

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if key in self.fingerprints:
            self._ctx.read(("b", key), self.fingerprints[key])
        return super().get(key, default)
