"""Configs that rule files and runs disagree on: a typo, most likely.

A typo in a bisect's ``config:`` passes every schema check, and the bisect
then silently finds no runs and asks for its points again. Once runs
exist, a config that a bisect or a recipe's ``base`` names but no run
records, and runs under a config that nothing names, are worth a warning
with the closest name on the other side. (A recipe's own config may not have
run yet: that is what the suggestions are for.)
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from triage.errors import Problem
from triage.rules.language.names import closest, known_names


SAID_EACH = 5  # up to this many unnamed configs get a warning (and a closest name) each


def _expected(spec: dict, recipes: Iterable[dict], bisects: Iterable[dict]) -> list[tuple[str, str]]:
    """(who names it, config) for every config that runs should be recorded under."""
    out: list[tuple[str, str]] = []
    if spec.get("base"):
        out.append(("the investigation's base", spec["base"]))
    for r in recipes:
        if r.get("base"):
            out.append((f"recipe `{r['id']}` has base", r["base"]))
    for b in bisects:
        configs = b.get("config") or []
        for c in [configs] if isinstance(configs, str) else configs:
            out.append((f"bisect `{b['id']}` names config", c))
    return out


def _hint(name: str, among: Iterable[str]) -> str:
    near: Optional[str] = closest(name, [x for x in among if x != name])
    return f"; did you mean `{near}`?" if near else ""


def config_warnings(spec: dict, recipes: list[dict], rules: list[dict], bisects: list[dict],
                    recorded: Iterable[str], in_use: Optional[Iterable[str]] = None) -> list[str]:
    """Warnings about configs named but never recorded, and recorded but never named.

    ``spec``, ``recipes``, ``rules``, ``bisects``: the investigation's definitions as
    plain data; ``recorded``: the configs its runs were recorded under; ``in_use``:
    those with a run that is not excluded (default: all), the only ones an unnamed
    config is warned about (excluding a run says it is out on purpose). Nothing
    is said before the first run."""
    recorded = sorted(set(recorded))
    if not recorded:
        return []
    in_use = set(recorded if in_use is None else in_use)
    _, named = known_names(spec, [*recipes, *rules, *bisects], [])
    out = []
    for who, config in _expected(spec, recipes, bisects):
        if config not in recorded:
            out.append(f"{who} `{config}`, which no run records{_hint(config, set(recorded) - named)}")
    unnamed = [config for config in recorded if config not in named and config in in_use]
    if len(unnamed) > SAID_EACH:  # many: runs recorded on purpose under configs of their own, said once
        shown = ", ".join(f"`{c}`" for c in unnamed[:SAID_EACH])
        out.append(f"runs under {len(unnamed)} configs that nothing in the rule file names: {shown} "
                   f"(+{len(unnamed) - SAID_EACH} more)")
        return out
    for config in unnamed:
        out.append(f"runs under config `{config}`, which nothing in the rule file names{_hint(config, named)}")
    return out


def for_specs(spec: Any, recipes: Sequence[Any], rules: Sequence[Any], bisects: Sequence[Any],
              recorded: Iterable[str], in_use: Optional[Iterable[str]] = None) -> list[str]:
    """:func:`config_warnings` of an investigation's parsed definitions (the engine's
    input, or a loaded rule file)."""
    def dump(x: Any) -> dict:
        return x.model_dump(mode="json", by_alias=True, exclude_none=True)

    return config_warnings(dump(spec), [dump(r) for r in recipes], [dump(r) for r in rules],
                           [dump(b) for b in bisects], recorded, in_use)


def config_problems(f: Any, recorded: dict[str, list[str]]) -> list[Problem]:
    """`triage check`'s warnings about a loaded rule file's configs against the runs
    ``recorded`` per investigation, each at the line of its investigation."""
    inv = f.spec.investigation
    if inv is None or not recorded.get(inv.id):
        return []
    line, col = f.where(("investigation",), key=True)
    return [Problem(f.path, line, col, f"warning: {w}")
            for w in for_specs(inv, f.spec.recipes, f.spec.rules, f.spec.bisects, recorded[inv.id])]
