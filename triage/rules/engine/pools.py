"""A config's runs pooled for a metric, kept as a piece of their own.

Rules and predictions compare their runs with other runs pooled (``better_than:
{config: BASE}``): every recipe's prediction that compares with the base pools
the base's thousands of runs.  Worked out from the runs, such a pool read them
all, and so did every evaluation after a run was added to that config.  Kept
as a piece (``q:CONFIG<US>METRIC``: the pooled runs' keys, values and sample
counts), it is updated from the runs added since (:func:`triage.rules.engine.memo._updated`);
a piece that compares with it notes that it read the pool (``("q",
"CONFIG<US>METRIC")``, which holds while the config's runs do) rather than
the config's runs, so that the evaluation after an ``add-run`` reads the
added run, not the config.  A piece reused keeps the pools it read
(:meth:`triage.rules.engine.memo.Memo.piece`): the next evaluation that
compares with the config again updates them.

Only what a pool of one config says is kept: its runs' measure (from their
values, in the order recorded), label and keys; a comparison whose own runs
are among the pool's leaves them out of it, from the runs read then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from triage.rules.decisions.sums import Sums, exact_values
from triage.rules.engine.keys import SEP, Keys, each
from triage.rules.engine.memo import Codec
from triage.rules.engine.records import RunRec

if TYPE_CHECKING:
    from triage.rules.engine.context import Context
    from triage.rules.language.schema import Selector

#: The read token kind of a pool: the config's runs, as far as the pool of them goes.
POOL = "q"


def token(config: str, metric: str) -> tuple[str, str]:
    """What a piece that compares with the pool notes it read (its piece: ``q:`` and the name)."""
    return POOL, f"{config}\x1f{metric}"


class Pooled:
    """A config's valid runs with a metric, as a pool keeps them: their keys (once each,
    in the order recorded), how many runs, each run's value and the distinct sample counts."""

    __slots__ = ("config", "keys", "count", "values", "ns", "sums")

    def __init__(self, config: str, keys: Keys, count: int, values: list, ns: list,
                 sums: Optional[Sums] = None) -> None:
        self.config, self.keys, self.count, self.values, self.ns = config, keys, count, values, ns
        self.sums = sums  # the values' exact sums (None: a value that is not a finite float)

    @classmethod
    def of(cls, config: str, runs: Sequence[RunRec], metric: str) -> Pooled:
        # as the config's run ids, each key ending with it: a key of another config is told
        # apart by its end, without a search of the text (triage.rules.engine.chained)
        ids = list(dict.fromkeys(r.run_id for r in runs))
        keys = Keys.suffixed(SEP.join(ids), f"/{config}", len(ids))
        values = [r.metrics[metric][0] for r in runs]
        return cls(config, keys, len(runs), values, list(dict.fromkeys(r.metrics[metric][1] for r in runs)),
                   Sums.of(values) if exact_values(values) else None)

    def added(self, runs: Sequence[RunRec], metric: str) -> Optional[Pooled]:
        """With ``runs`` recorded after these (None: one of them has a key already pooled)."""
        if not runs:
            return self
        more = [r.key for r in runs]
        if len(set(more)) < len(more) or any(k in self.keys for k in more):
            return None
        values = [r.metrics[metric][0] for r in runs]
        sums = self.sums.plus(values) if self.sums is not None and exact_values(values) else None
        return Pooled(self.config, self.keys.appended(more), self.count + len(runs), [*self.values, *values],
                      list(dict.fromkeys([*self.ns, *(r.metrics[metric][1] for r in runs)])), sums)

    def holds_any(self, keys: Sequence[str]) -> bool:
        """Whether any of ``keys`` is pooled here: only a key that ends with the config can be
        (a pool among them named so: only if its keys can end with it)."""
        if keys is self.keys:
            return bool(keys)
        if isinstance(keys, Keys) and not keys.may_name([self.config]):
            return False
        parts = getattr(keys, "parts", None)
        if parts is not None:  # a comparison's own runs, then pools (triage.rules.engine.chained)
            return any(self.holds_any(p) for p in parts)
        suffix = f"/{self.config}"
        ours = [k for k in each(keys) if k.endswith(suffix)]
        if len(ours) > 16:  # a search of the text for each would go through it as many times
            return not set(self.keys).isdisjoint(ours)
        return any(k in self.keys for k in ours)


def _encode(p: Pooled) -> list:
    return [p.config, p.keys.ids(f"/{p.config}"), p.count, p.values, p.ns,
            p.sums.encoded() if p.sums is not None else None]


def _decode(row: Sequence[Any]) -> Pooled:
    config, ids, count, values, ns, sums = row if len(row) == 6 else (*row, None)  # a pool kept without sums
    return Pooled(config, Keys.suffixed(ids, f"/{config}"), count, list(values), list(ns),
                  Sums.decoded(sums) if sums is not None else None)


POOLED: Codec[Pooled] = Codec(_encode, _decode)


def config_of(ctx: "Context", sel: "Selector", metric: str) -> Optional[str]:
    """The config whose pool ``sel`` asks for, if it is kept as a piece: one config, no run ids
    or provenance, a metric of values (a fail rate counts outcomes), in an evaluation that
    keeps its pieces, of the whole investigation (not one subject's runs)."""
    if isinstance(sel.config, str) and sel.run is None and not sel.provenance and kept_here(ctx, metric):
        return sel.config
    return None


def kept_here(ctx: "Context", metric: str) -> bool:
    """Whether a config's pool of ``metric`` is kept as a piece in this evaluation: a metric of
    values (a fail rate counts outcomes), an evaluation that keeps its pieces, of the whole
    investigation (not one subject's runs)."""
    from triage.rules.engine.context import FAIL_RATE

    return metric != FAIL_RATE and ctx.memo.keep and ctx.whole


def pooled(ctx: "Context", config: str, metric: str) -> tuple[Pooled, str]:
    """The pool of ``config``'s valid runs with ``metric``, from the memo (updated from the runs
    added since) or worked out; and the fingerprint of the config's runs it holds for.  What it
    reads is not noted for the piece that asks: the caller notes the pool."""
    with ctx.unnoted():
        made = ctx.memo.piece(
            ctx, POOL + ":" + token(config, metric)[1],
            lambda: Pooled.of(config, [r for r in ctx.by_config.get(config, [])
                                       if ctx.valid(r) and ctx.has_metric(r, metric)], metric),
            POOLED,
            update=lambda old, new: old.added([r for r in new if ctx.valid(r) and ctx.has_metric(r, metric)],
                                              metric))
    return made, ctx.source.fingerprint(("c", config))
