"""Recipe runs that differ from their base in a variable the recipe does not declare."""

from __future__ import annotations

from typing import Any, Optional

from triage.rules.engine import summary
from triage.rules.engine.keys import Keys, once
from triage.rules.engine.context import Context, _run_order, num
from triage.rules.engine.records import (
    Combo,
    Confounds,
    RunRec,
    Warning_,
)
from triage.rules.language.schema import RecipeSpec

# --------------------------------------------------------------------------
# Confounds


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return num(v) if isinstance(v, float) else str(v)


def base_run(recipe: RecipeSpec, ctx: Context) -> Optional[RunRec]:
    """The run a recipe's runs are compared with: ``base_run``, else the newest
    valid run of its base config."""
    if recipe.base_run:
        runs = ctx.named(recipe.base_run)
        own = [r for r in runs if r.config == recipe.base]
        runs = own or runs
    elif recipe.base:
        runs = ctx.by_config.get(recipe.base, [])
    else:
        return None
    runs = [r for r in runs if ctx.valid(r)]
    return sorted(runs, key=_run_order)[-1] if runs else None


Base = Optional[tuple[str, dict[str, str]]]  # the run a recipe's runs are compared with: its key and provenance


def newest_base(recipe: RecipeSpec, ctx: Context) -> Base:
    """The newest valid run of a recipe's base config, from what that config's runs say
    (None: no base config, or no valid run of it); for a recipe without a ``base_run``."""
    from triage.rules.engine.facts import facts

    if recipe.base_run or not recipe.base:
        return None
    of_base = facts(recipe.base, ctx)  # read as before: noted for the piece that asks
    if not of_base.valid:
        return None
    return of_base.valid[-1], dict(of_base.newest_provenance)


def confounds_of(recipe: RecipeSpec, ctx: Context, newest: Base = None) -> Confounds:
    """A recipe's valid runs whose recorded provenance differs from their base
    run in a key the recipe does not declare (`vary`), or that recorded another
    value for a key it does declare.  Keys in `ignore_provenance` never count;
    keys recorded on only one side cannot be compared and are left alone.
    Read from what its config's runs say (:mod:`triage.rules.engine.facts`): runs that
    recorded the same provenance are compared with the base once.  ``newest``:
    :func:`newest_base`, when the caller looked it up (else it is looked up here)."""
    from triage.rules.engine.facts import facts

    own = facts(recipe.id, ctx)
    if not own.valid:
        return []
    ignore = set(ctx.spec.ignore_provenance) | ({ctx.spec.subject} if ctx.spec.subject else set())
    declared = {k: _scalar(v) for k, v in recipe.vary.items()}
    base: Base = None
    if recipe.base_run:
        run = base_run(recipe, ctx)
        base = (run.key, dict(run.provenance)) if run is not None else None
    else:
        base = newest if newest is not None else newest_base(recipe, ctx)
    said: dict[int, list[tuple]] = {}  # provenance -> what its runs differ in
    # the keys compared with the base: its own, less those declared or ignored (once, not a provenance)
    compared = sorted(set(base[1]) - set(declared) - ignore) if base is not None else []
    for i, items in enumerate(once(own.provenances)):  # not kept: looked into once
        prov = dict(items)
        found = []
        for key, want in declared.items():
            have = prov.get(key)
            if key not in ignore and have is not None and have != want:
                found.append((key, have, None, None, want))
        if base is not None:
            base_key, base_prov = base
            for key in compared:
                have = prov.get(key)
                if have is not None and have != base_prov[key]:
                    found.append((key, have, base_prov[key], base_key, None))
        said[i] = found
    if not any(said.values()):  # no provenance differs: no need to go through the runs
        return Confounds().saying(())
    # as columns (Confounds): a confound per run and key, each kind once, first seen first
    combos: dict[Combo, int] = {}
    per: dict[int, list[tuple[str, int]]] = {}  # provenance -> (value, kind) of each key it differs in
    runs, values, places = [], [], []
    for run, i in zip(own.valid, own.valid_provenance):
        got = per.get(i)
        if got is None:
            got = per[i] = [(value, combos.setdefault((recipe.id, key, base_value, base_key, want), len(combos)))
                            for key, value, base_value, base_key, want in said[i]]
        for value, place in got:
            runs.append(run)
            values.append(value)
            places.append(place)
    made = Confounds([(Keys.of(runs), values, places, list(combos))])
    return made.saying(_said(made, ctx))  # kept with the recipe's piece: not grouped again


def confound_warnings(confounds: Confounds, ctx: Context) -> list[Warning_]:
    """One warning per config and difference, with how many runs it holds for: runs of a
    recipe that differ from its base in one key are said once, whether they recorded one
    value of it or each their own (a sha per commit: then the count of values and the first).
    What each recipe's say is kept with its piece: grouping a wide investigation's hundreds of
    thousands of confounded runs again took an add-run 0.15 s."""
    said = confounds.said()
    return [Warning_("confound", text) for text in (said if said is not None else _said(confounds, ctx))]


def _said(confounds: Confounds, ctx: Context) -> list[str]:
    return [f"{summary.head_of(count, ids, config, ctx.short, 'run ')}: {first.what(ctx, values)}"
            for config, first, count, ids, values in confounds.groups()]
