"""What one config's runs say, worked out once per config and kept while its runs are unchanged.

Everything the evaluation needs of every run (which runs decide nothing and
why, repeats that disagree, values that are not proportions, where each
recipe stands, how many attempts in a row gave no result) is read per config
here, so that an evaluation after one new run reads that run's config and
the stored facts of the others (:mod:`triage.rules.memo`).  Entries that are
merged across configs carry the place of their first run in the order
recorded, so that merged they read as one pass over every run would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from triage.rules import summary
from triage.rules.context import Context, _run_order
from triage.rules.memo import Codec
from triage.rules.readings import repeats_in
from triage.rules.records import RunRec


@dataclass(frozen=True)
class ConfigFacts:
    config: str
    keys: tuple[str, ...] = ()  # its runs' keys, oldest first (by time, then as recorded)
    valid: tuple[str, ...] = ()  # those that can decide something, in the same order
    newest_why: str = ""  # why the newest run decides nothing ("" when it is valid)
    newest_blocker: str = ""  # its known failure that a plain re-run will not fix
    trailing_invalid: int = 0  # newest runs in a row that decided nothing
    valid_metrics: tuple[str, ...] = ()  # the metrics some valid run records
    valid_ns: tuple[int, ...] = ()  # the sample counts of the primary metric in valid runs
    invalid: tuple[tuple[int, str, str], ...] = ()  # (order, key, why in brief) of each run that decides nothing
    inconclusive: tuple[tuple[int, str], ...] = ()  # (order of the first, warning) per reason runs decide nothing
    repeats: tuple[tuple[int, str], ...] = ()  # (order of the first, warning) per group of disagreeing repeats
    unscaled: tuple[tuple[str, tuple[int, int, float, int]], ...] = ()  # see Context.unscaled
    provenances: tuple[tuple[tuple[str, str], ...], ...] = ()  # the valid runs' distinct provenances
    valid_provenance: tuple[int, ...] = ()  # per valid run (as in ``valid``), its provenance's place there


def config_facts(config: str, ctx: Context) -> ConfigFacts:
    from triage.rules.suggest import _blocker, _trailing_invalid

    runs: Sequence[RunRec] = ctx.by_config.get(config, [])
    if not runs:
        return ConfigFacts(config)
    ordered = sorted(runs, key=_run_order)
    why = {id(r): ctx.invalid_reason(r) for r in runs}
    valid = [r for r in ordered if why[id(r)] is None]
    newest = ordered[-1]
    metric = ctx.spec.metric
    said = summary.group((r.run_id, r.config, w) for r in runs if (w := why[id(r)]) is not None)
    provenances: dict[tuple[tuple[str, str], ...], int] = {}
    for r in valid:
        provenances.setdefault(tuple(r.provenance.items()), len(provenances))
    first: dict[str, int] = {}
    for r in runs:
        w = why[id(r)]
        if w is not None and w not in first:
            first[w] = ctx.order(r)
    return ConfigFacts(
        config,
        keys=tuple(r.key for r in ordered),
        valid=tuple(r.key for r in valid),
        newest_why=(ctx.invalid_reason(newest, brief=True) or "") if why[id(newest)] is not None else "",
        newest_blocker=_blocker(newest, ctx) if why[id(newest)] is not None else "",
        trailing_invalid=_trailing_invalid(runs, ctx),
        valid_metrics=tuple(sorted({m for r in valid for m in r.metrics})),
        valid_ns=tuple(sorted({n for r in valid if metric in r.metrics and (n := r.metrics[metric][1])})),
        invalid=tuple((ctx.order(r), r.key, ctx.invalid_reason(r, brief=True) or "")
                      for r in runs if why[id(r)] is not None),
        inconclusive=tuple((first[w], f"{summary.head(ids, c, ctx.short)}: {w}") for (c, w), ids in said.items()),
        repeats=tuple((order, w.message) for order, w in repeats_in(runs, ctx)),
        unscaled=tuple(ctx.unscaled(runs).items()),
        provenances=tuple(provenances),
        valid_provenance=tuple(provenances[tuple(r.provenance.items())] for r in valid),
    )


def _encode(f: ConfigFacts) -> list:
    return [f.config, list(f.keys), list(f.valid), f.newest_why, f.newest_blocker, f.trailing_invalid,
            list(f.valid_metrics), list(f.valid_ns), [list(x) for x in f.invalid], [list(x) for x in f.inconclusive],
            [list(x) for x in f.repeats], [[name, list(first)] for name, first in f.unscaled],
            [[list(kv) for kv in p] for p in f.provenances], list(f.valid_provenance)]


def _decode(row: Sequence[Any]) -> ConfigFacts:
    (config, keys, valid, newest_why, newest_blocker, trailing, metrics, ns, invalid, inconclusive, repeats,
     unscaled, provenances, valid_provenance) = row
    return ConfigFacts(
        config, tuple(keys), tuple(valid), newest_why, newest_blocker, trailing, tuple(metrics), tuple(ns),
        tuple(map(tuple, invalid)), tuple(map(tuple, inconclusive)), tuple(map(tuple, repeats)),
        tuple((name, tuple(first)) for name, first in unscaled),
        tuple(tuple(map(tuple, p)) for p in provenances), tuple(valid_provenance))


FACTS: Codec[ConfigFacts] = Codec(_encode, _decode)


def facts(config: str, ctx: Context) -> ConfigFacts:
    """A config's facts, from the memo when its runs are unchanged."""
    return ctx.memo.piece(ctx, f"f:{config}", lambda: config_facts(config, ctx), FACTS)
