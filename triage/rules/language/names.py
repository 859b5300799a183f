"""The metric and config names an investigation knows, and the closest one to a typo."""

from __future__ import annotations

from typing import Any, Iterable, Optional


def _walk(value: Any, into: dict[str, set[str]]) -> None:
    """Every string found at any depth under each key of ``into`` (a string or a list of
    strings), added to that key's set: one pass for all the keys."""
    if isinstance(value, dict):
        for k, v in value.items():
            out = into.get(k)
            if out is not None:
                out.update([v] if isinstance(v, str) else [x for x in v if isinstance(x, str)]
                           if isinstance(v, list) else [])
            if isinstance(v, (dict, list)):
                _walk(v, into)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, (dict, list)):
                _walk(v, into)


def known_names(spec: dict, definitions: Iterable[dict], extractors: Iterable[dict]) -> tuple[set[str], set[str]]:
    """(metrics, configs) that an investigation's spec, its recipes, rules and
    bisects (``definitions``: their specs as stored) and its extractors name."""
    metrics: set[str] = {spec["metric"]} | set(spec.get("metrics") or {})
    configs: set[str] = set()
    into = {"metric": metrics, "config": configs, "base": configs}
    for doc in [spec, *definitions]:
        _walk(doc, into)
        if "base" in doc and "id" in doc:  # a recipe: its id is a config
            configs.add(doc["id"])
    metrics |= {x["metric"] for x in extractors if x.get("metric")}
    return metrics, configs


def closest(name: str, known: Iterable[str]) -> Optional[str]:
    """The known name most like ``name`` (rapidfuzz ratio ≥ 60), else None."""
    from rapidfuzz import fuzz, process

    hit = process.extractOne(name, list(known), scorer=fuzz.ratio, score_cutoff=60)
    return hit[0] if hit else None
