"""Any other JSON: extractors name their values with JMESPath (``jmespath``).

A rule file's extractor may read a results file instead of a log line:
``{id: gsm8k, json: 'results.gsm8k."exact_match,strict-match"', metric: gsm8k, n: 1319}``,
or ``add-run --json-path gsm8k=EXPR``.  The expression's value is:

* for a metric: a number (with the extractor's ``n``, or the count that its
  ``n_json`` expression finds in the same file), or a list of numbers
  (repeats of the run); nothing found is no value;
* for provenance: a text or a number, stored as text;
* for a status: looked up in the extractor's map; without a map, a value
  that is neither null nor false sets the extractor's status.

Extractors apply to every JSON results file, after its format's reader: an
extractor's metric replaces the reader's metric of the same name.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from triage.errors import InputError
from triage.ingest.results.common import Found, number

MAX_COUNT = 2**31 - 1  # a sample count, as the knowledge base stores it

__all__ = ["compile_path", "apply_extractors", "cli_extractors"]


def compile_path(expr: str) -> Any:
    """The compiled JMESPath expression; ValueError says what is wrong with it."""
    import jmespath
    from jmespath.exceptions import JMESPathError

    try:
        return jmespath.compile(expr)
    except JMESPathError as e:
        raise ValueError(f"bad JMESPath expression {expr!r}: {str(e).splitlines()[0]}") from None


def cli_extractors(items: Sequence[str]) -> list[dict]:
    """``--json-path NAME=EXPR`` as extractor definitions."""
    from triage.ingest.runs import _NAME

    out = []
    for item in items:
        name, sep, expr = item.partition("=")
        if not sep or not _NAME.match(name.strip()) or not expr.strip():
            raise InputError(f"--json-path {item!r}: expected NAME=EXPRESSION, e.g. gsm8k='results.gsm8k.acc'")
        try:
            compile_path(expr.strip())
        except ValueError as e:
            raise InputError(f"--json-path {name.strip()}: {e}") from None
        out.append({"id": f"json-path-{name.strip()}", "json": expr.strip(), "metric": name.strip()})
    return out


def _status(d: Mapping[str, Any], value: Any) -> Any:
    if isinstance(d.get("status"), Mapping):
        return d["status"].get(value) if isinstance(value, str) else None
    return d.get("status") if value is not None and value is not False else None


def apply_extractors(path: str, doc: Any, extractors: Sequence[Mapping[str, Any]], found: Found) -> None:
    """Each JSON extractor's value from ``doc`` into ``found`` (the first declared wins)."""
    from triage.ingest.runs import check_text
    from triage.rules.language.schema import outcome as outcome_of

    seen: set[str] = set()
    for d in extractors:
        value = compile_path(d["json"]).search(doc)
        key = d.get("metric") or d.get("provenance") or "status"
        if value is None or key in seen:
            continue
        if d.get("metric"):
            _metric(path, d, value, found, _n(path, d, doc))
        elif d.get("provenance"):
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                found.provenance[key] = check_text(f"{path}: {d['id']}", str(value)) or ""
                found.said.append(f"{key}: {str(value)[:80]} ({d['id']})")
        else:
            status = _status(d, value)
            if status is None:
                continue
            found.status = outcome_of(status)
            found.said.append(f"status {found.status} ({d['id']})")
        seen.add(key)


def _n(path: str, d: Mapping[str, Any], doc: Any) -> Any:
    """The metric's sample count: the extractor's ``n``, or what ``n_json`` finds (None: none)."""
    if not d.get("n_json"):
        return d.get("n")
    value = compile_path(d["n_json"]).search(doc)
    if value is None:
        return None
    n = number(value)
    if n is None or isinstance(value, bool) or n != int(n) or not 1 <= n <= MAX_COUNT:
        raise InputError(f"{path}: extractor {d['id']}: n_json: {d['n_json']} is {str(value)[:60]!r}, "
                         "not a sample count")
    return int(n)


def _metric(path: str, d: Mapping[str, Any], value: Any, found: Found, n: Any) -> None:
    name = d["metric"]
    if isinstance(value, list) and len(value) >= 2:
        values = [number(v) for v in value]
        if None in values:
            raise InputError(f"{path}: extractor {d['id']}: {name} holds a value that is not a number")
        found.metrics.pop(name, None)
        found.repeats[name] = values  # type: ignore[assignment]
        found.said.append(f"{name}: {len(values)} repeats ({d['id']})")
        return
    v = number(value[0] if isinstance(value, list) and value else value)
    if v is None:
        raise InputError(f"{path}: extractor {d['id']}: {name} is {str(value)[:60]!r}, not a number")
    found.repeats.pop(name, None)
    found.metrics[name] = {"value": v} | ({"n": n} if n else {})
    found.said.append(f"{name}={v:g}" + (f"/{n}" if n else "") + f" ({d['id']})")
