"""Recipe runs that differ from their base in a variable the recipe does not declare."""

from __future__ import annotations

from typing import Any, Optional

from triage.rules.context import Context, _run_order, num
from triage.rules.records import (
    Confound,
    Investigation,
    RunRec,
)
from triage.rules.schema import RecipeSpec

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
    runs = [r for r in runs if ctx.invalid_reason(r) is None]
    return sorted(runs, key=_run_order)[-1] if runs else None


def find_confounds(inv: Investigation, ctx: Context) -> list[Confound]:
    """Valid recipe runs whose recorded provenance differs from their base run
    in a key the recipe does not declare (`vary`), or that recorded another
    value for a key it does declare.  Keys in `ignore_provenance` never count;
    keys recorded on only one side cannot be compared and are left alone."""
    return [c for recipe in inv.recipes for c in confounds_of(recipe, ctx)]


def confounds_of(recipe: RecipeSpec, ctx: Context) -> list[Confound]:
    """:func:`find_confounds` for one recipe."""
    ignore = set(ctx.spec.ignore_provenance)
    out: list[Confound] = []
    runs = sorted((r for r in ctx.by_config.get(recipe.id, []) if ctx.invalid_reason(r) is None), key=_run_order)
    if runs:
        declared = {k: _scalar(v) for k, v in recipe.vary.items()}
        base = base_run(recipe, ctx)
        for r in runs:
            for key, want in declared.items():
                have = r.provenance.get(key)
                if key not in ignore and have is not None and have != want:
                    out.append(Confound(r.key, recipe.id, key, have, None, declared=want))
            if base is None:
                continue
            shared = (set(r.provenance) & set(base.provenance)) - set(declared) - ignore
            for key in sorted(shared):
                if r.provenance[key] != base.provenance[key]:
                    out.append(Confound(r.key, recipe.id, key, r.provenance[key], base.provenance[key], base.key))
    return out
