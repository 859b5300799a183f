"""Invalid runs of one config that say the same thing, said once.

A knowledge base that grows for years holds thousands of crashed runs and
runs a known failure matched.  Each one saying the same thing, in evidence
and in warnings, would make the report grow with the runs instead of with
what they say: runs of one config with the same reason are one entry, with
their count and the first run ids.  A group of one reads as it always did.
"""

from __future__ import annotations

from typing import Callable, Iterable

#: Run ids a summary names before "…".
NAMED = 3


def group(entries: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str], list[str]]:
    """``(run key or id, config, what)`` triples by ``(config, what)``, first seen first."""
    out: dict[tuple[str, str], list[str]] = {}
    for ident, config, what in entries:
        out.setdefault((config, what), []).append(ident)
    return out


def head(ids: list[str], config: str, short: Callable[[str], str], prefix: str = "") -> str:
    """``12345 (cfg)`` for one run, ``12 runs of cfg (1, 2, 3, …)`` for several."""
    if len(ids) == 1:
        return f"{prefix}{ids[0]} ({short(config)})"
    named = ", ".join(ids[:NAMED]) + (", …" if len(ids) > NAMED else "")
    return f"{len(ids):,} runs of {short(config)} ({named})"
