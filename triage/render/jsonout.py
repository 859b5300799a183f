"""JSON text as ``json.dumps(indent=2, ensure_ascii=False)`` writes it, at C speed.

``json.dumps`` with an indent falls back to its pure-Python encoder, which
costs seconds on a large report.  The C encoder writes the compact form and
msgspec re-indents it, leaving every number's text as ``json`` wrote it: the
same bytes.  NaN and infinities (not JSON, which msgspec refuses) take the
slow path.
"""

from __future__ import annotations

import json
from typing import Any


def dumps(obj: Any) -> str:
    """``obj`` as indented JSON text (two spaces, UTF-8 kept as it is)."""
    import msgspec

    # no check for cycles: a view is a tree (the check keeps an entry per list and mapping)
    compact = json.dumps(obj, ensure_ascii=False, check_circular=False)
    try:
        return msgspec.json.format(compact, indent=2)
    except msgspec.DecodeError:
        return json.dumps(obj, indent=2, ensure_ascii=False)
