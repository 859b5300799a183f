"""JSON text as ``json.dumps(indent=2, ensure_ascii=False)`` writes it, at C speed.

``json.dumps`` with an indent falls back to its pure-Python encoder, which
costs seconds on a large report.  The C encoder writes the compact form and
msgspec re-indents it, leaving every number's text as ``json`` wrote it: the
same bytes.  NaN and infinities (not JSON, which msgspec refuses) take the
slow path.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable


def dumps(obj: Any) -> str:
    """``obj`` as indented JSON text (two spaces, UTF-8 kept as it is)."""
    import msgspec

    # no check for cycles: a view is a tree (the check keeps an entry per list and mapping)
    compact = json.dumps(obj, ensure_ascii=False, check_circular=False)
    try:
        return msgspec.json.format(compact, indent=2)
    except msgspec.DecodeError:
        return json.dumps(obj, indent=2, ensure_ascii=False)


def write_list(batches: Iterable[list], write: Callable[[str], Any]) -> None:
    """A list given a batch at a time, written as :func:`dumps` of it whole and a line end: each
    batch as its own text, the brackets of the whole around them.  A list of a hundred thousand
    runs is never held whole, nor its text.  Nothing is written before the first batch."""
    opened = False
    for batch in batches:
        if not batch:
            continue
        inner = dumps(batch)[2:-2]  # "[\n" + its items, each at the first level + "\n]"
        write(("[\n" if not opened else ",\n") + inner)
        opened = True
    write("\n]\n" if opened else "[]\n")
