"""Reading a results file within the limits, before any format's reader sees it.

A results file is read whole (it is a document, not a stream of lines), so
its size is checked before it is read: a 1 GB JSON is refused by its size,
not by running out of memory.  JSON is parsed by the standard library and
its nesting checked; XML is parsed by ``defusedxml`` as a stream, refusing
any document type declaration (so no entity is ever expanded and no
external entity fetched), and its depth and element count are bounded.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

from triage import limits
from triage.errors import InputError
from triage.inputs import check_regular

__all__ = ["check_size", "load_json", "xml_events", "entries_limit", "json_depth_problem"]


def check_size(path: str) -> int:
    """The file's size, refused past ``TRIAGE_MAX_RESULTS_BYTES`` before it is read."""
    check_regular(path)
    most = limits.get("results_bytes")
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if size > most:
        raise InputError(f"{path}: more than {most:,} bytes; TRIAGE_MAX_RESULTS_BYTES raises the limit")
    return size


def entries_limit(path: str, count: int, what: str) -> None:
    """Refuse a file with more than ``TRIAGE_MAX_RESULT_ENTRIES`` test cases, tasks or benchmarks."""
    most = limits.get("result_entries")
    if count > most:
        raise InputError(f"{path}: more than {most:,} {what}; TRIAGE_MAX_RESULT_ENTRIES raises the limit")


def read_head(path: str, size: int = 512) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def json_depth_problem(value: Any, most: int) -> bool:
    """Whether ``value`` nests deeper than ``most`` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > most:
                return True
            stack.extend((c, depth + 1) for c in (v.values() if isinstance(v, dict) else v))
    return False


def load_json(path: str) -> Any:
    """The file's JSON value, within the size and nesting limits."""
    import json

    check_size(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limits.get("results_bytes") + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    values = raw.count(b",") + raw.count(b"{") + raw.count(b"[")  # an upper bound, counted in C
    if values > 20 * limits.get("result_entries"):
        raise InputError(f"{path}: more than {20 * limits.get('result_entries'):,} JSON values; "
                         "TRIAGE_MAX_RESULT_ENTRIES raises the limit (twenty values each)")
    most = limits.get("json_depth")
    deep = InputError(f"{path}: JSON nested more than {most} deep; TRIAGE_MAX_JSON_DEPTH raises the limit")
    try:
        value = json.loads(raw)
    except RecursionError:
        raise deep from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not JSON ({str(e).splitlines()[0]})") from None
    if json_depth_problem(value, most):
        raise deep
    return value


def xml_events(path: str) -> Iterator[tuple[str, Any, int]]:
    """``(event, element, depth)`` for each start and end of an element, parsed
    safely: a DTD is refused, depth and element count are bounded."""
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import iterparse

    check_size(path)
    deepest = limits.get("json_depth")
    most = limits.get("result_entries") * 10  # a test case is a few elements
    depth = count = 0
    try:
        for event, elem in iterparse(path, events=("start", "end"), forbid_dtd=True):
            if event == "start":
                depth += 1
                count += 1
                if depth > deepest:
                    raise InputError(f"{path}: XML nested more than {deepest} deep; "
                                     "TRIAGE_MAX_JSON_DEPTH raises the limit")
                if count > most:
                    raise InputError(f"{path}: more than {most:,} XML elements; "
                                     "TRIAGE_MAX_RESULT_ENTRIES raises the limit (ten elements each)")
            yield event, elem, depth
            if event == "end":
                depth -= 1
    except DefusedXmlException:
        raise InputError(f"{path}: an XML document type declaration (DTD) is refused: "
                         "its entities could expand without bound or read other files") from None
    except ParseError as e:
        raise InputError(f"{path}: not well-formed XML ({e})") from None
