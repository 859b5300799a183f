"""Regular expressions from rule files, run by RE2: linear time, always.

Extractor patterns and regex signatures come from users.  Python's ``re``
backtracks, so ``^(a|aa)+(?P<value>[0-9])$`` on a 44-character line runs for
minutes; RE2 guarantees time linear in the line.  A pattern that needs
backtracking (look-arounds, back-references, possessive quantifiers, atomic
groups) is refused with the reason, never run by ``re``.

RE2's syntax is Python's for everything else, except that ``\\w``, ``\\d``,
``\\s`` and ``\\b`` are ASCII-only.
"""

from __future__ import annotations

import re
from typing import Any

import re2

__all__ = ["compile_user", "UserRegexError"]

_MAX_MEM = 64 << 20


class UserRegexError(ValueError):
    """A user pattern RE2 refuses; the message says why."""


def _options() -> Any:
    opts = re2.Options()
    opts.log_errors = False
    opts.max_mem = _MAX_MEM
    return opts


_BACKTRACKING = (
    ("(?<=", "a look-behind (?<=...)"),
    ("(?<!", "a look-behind (?<!...)"),
    ("(?=", "a look-ahead (?=...)"),
    ("(?!", "a look-ahead (?!...)"),
    ("(?>", "an atomic group (?>...)"),
)


def _reason(pattern: str, detail: str) -> str:
    for token, name in _BACKTRACKING:
        if token in pattern and token in detail:
            return f"{name} needs backtracking, which triage does not run; write the pattern without it"
    if "invalid escape sequence: \\" in detail and detail.rstrip()[-1:].isdigit():
        return "a back-reference needs backtracking, which triage does not run; write the pattern without it"
    if "(?P=" in pattern:
        return "a back-reference needs backtracking, which triage does not run; write the pattern without it"
    if "bad repetition operator: *+" in detail or "bad repetition operator: ++" in detail \
            or "bad repetition operator: ?+" in detail:
        return "a possessive quantifier is not supported; use the plain one"
    if "pattern too large" in detail:
        return "the pattern is too large (its automaton exceeds 64 MiB)"
    return detail


def compile_user(pattern: str, *, multiline: bool = False) -> Any:
    """The RE2 pattern for ``pattern``; :class:`UserRegexError` with the reason when RE2 cannot run it."""
    if not isinstance(pattern, str):
        raise UserRegexError("a pattern is text")
    if "\x00" in pattern:
        raise UserRegexError("a pattern cannot hold a NUL character")
    try:  # Python's message for plain syntax errors: the one users know
        re.compile(pattern)
    except re.error as e:
        raise UserRegexError(str(e)) from None
    except (RecursionError, OverflowError, MemoryError):
        raise UserRegexError("the pattern is too large") from None
    text = "(?m)" + pattern if multiline else pattern
    try:
        return re2.compile(text, _options())
    except re2.error as e:
        detail = e.args[0] if e.args else str(e)
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise UserRegexError(_reason(pattern, str(detail))) from None
