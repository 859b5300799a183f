"""Invalid runs of one config that say the same thing, said once.

A knowledge base that grows for years holds thousands of crashed runs and
runs a known failure matched.  Each one saying the same thing, in evidence
and in warnings, would make the report grow with the runs instead of with
what they say: runs of one config with the same reason are one entry, with
their count and the first run ids.  A group of one reads as it always did.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

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
    return head_of(len(ids), ids[:NAMED], config, short, prefix)


def head_of(count: int, first: Sequence[str], config: str, short: Callable[[str], str], prefix: str = "") -> str:
    """:func:`head` from the count of runs and the first ``NAMED`` of their ids."""
    if count == 1:
        return f"{prefix}{first[0]} ({short(config)})"
    named = ", ".join(first[:NAMED]) + (", …" if count > NAMED else "")
    return f"{count:,} runs of {short(config)} ({named})"
