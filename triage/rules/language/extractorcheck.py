"""What an extractor of a rule file must be: one thing read, by a log pattern or a JSON path;
and what a signature's regex must be.

A ``pattern`` is a regular expression run on RE2 over a log's lines (with a
named group ``value``, unless it sets a status); a ``json`` is a JMESPath
expression over a JSON results file (``add-run --results``).  The patterns are
compiled here as the log reader compiles them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_extractor", "check_signature"]


def check_extractor(spec: Any) -> None:
    """Raise ValueError (pydantic reports it at the extractor's place) if ``spec`` is not one."""
    from triage.rules.language.schema import _statuses

    kinds = [k for k in ("metric", "provenance", "status") if getattr(spec, k) is not None]
    if len(kinds) != 1:
        raise ValueError("an extractor reads exactly one of metric, provenance or status")
    if kinds[0] == "status":
        _statuses(list(spec.status.values()) if isinstance(spec.status, dict) else [spec.status])
    if (spec.pattern is None) == (spec.json_ is None):
        raise ValueError("an extractor has exactly one of pattern (a log line) or json (a path in a results file)")
    if spec.n_json is not None and (spec.json_ is None or kinds[0] != "metric"):
        raise ValueError("n_json goes with a json: metric extractor (its sample count in the same file)")
    if spec.n_json is not None and spec.n is not None:
        raise ValueError("either n or n_json, not both")
    if spec.json_ is not None:
        import jmespath
        from jmespath.exceptions import JMESPathError

        for expr in (spec.json_, spec.n_json):
            try:
                if expr is not None:
                    jmespath.compile(expr)
            except JMESPathError as e:
                raise ValueError(f"bad JMESPath expression: {str(e).splitlines()[0]}") from None
        return
    from triage.rules.language.userregex import UserRegexError, compile_user

    try:
        rx = compile_user(spec.pattern)
    except UserRegexError as e:
        raise ValueError(f"bad pattern: {e}") from None
    if (kinds[0] != "status" or isinstance(spec.status, dict)) and "value" not in rx.groupindex:
        raise ValueError("the pattern needs a named group (?P<value>...)")


def check_signature(spec: Any) -> None:
    """Raise ValueError if a signature's ``regex`` text is not a regular expression the
    log reader can run, or matches an empty line."""
    if not spec.regex:
        return
    from triage.rules.language.userregex import UserRegexError, compile_user

    try:
        rx = compile_user(spec.text)
    except UserRegexError as e:
        raise ValueError(f"bad regex: {e}") from None
    if rx.search("") is not None:
        raise ValueError("the regex matches an empty line")
