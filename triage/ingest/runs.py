"""Turn what a user typed (or a record in a file) into a run to store."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping, Optional

from triage import limits
from triage.errors import InputError
from triage.numbers import out_of_range
from triage.rules.language.schema import OUTCOMES, STATUSES, outcome

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*\Z")  # \Z: "$" would take a final newline
#: The largest sample count (the knowledge base's integers are 32-bit on PostgreSQL).
MAX_N = 2**31 - 1


def check_text(what: str, value: Optional[str], *, required: bool = False) -> Optional[str]:
    """Text for the knowledge base: no NUL (PostgreSQL cannot store one), at
    most ``TRIAGE_MAX_TEXT`` characters, and not empty when ``required``."""
    if value is None:
        return None
    if required and not value.strip():
        raise InputError(f"{what} is empty")
    if "\x00" in value:
        raise InputError(f"{what}: a NUL character is not allowed")
    if not storable(value):
        raise InputError(f"{what}: not valid Unicode (a lone surrogate)")
    cap = limits.get("text")
    if len(value) > cap:
        raise InputError(f"{what}: {len(value):,} characters, more than {cap:,}; TRIAGE_MAX_TEXT raises the limit")
    return value


def check_config(what: str, value: Optional[str]) -> str:
    """A config name: text as :func:`check_text` wants it, and nothing
    invisible (zero-width or bidirectional characters), which would make
    two names that look the same."""
    check_text(what, value, required=True)
    assert value is not None
    if not value.isprintable():  # rare: only then is each character looked at
        import unicodedata

        bad = next((c for c in value if unicodedata.category(c) in _INVISIBLE), None)
        if bad is not None:
            raise InputError(f"{what} {value!r}: an invisible character (U+{ord(bad):04X}) is not allowed")
    return value


#: Unicode categories of characters that show nothing: format characters (zero-width
#: spaces and joiners, bidirectional controls).  Control characters and line
#: separators are shown escaped wherever triage prints a name.
_INVISIBLE = frozenset(["Cf"])


def storable(value: str) -> bool:
    """Whether ``value`` has a UTF-8 form (no lone surrogates)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def proportion_problem(value: float, n: Optional[int], scale: float = 1.0) -> Optional[str]:
    """What is wrong with a metric value given with a sample count ``n``:
    it is then a proportion, and must lie in [0, ``scale``]."""
    if n is not None and not 0.0 <= value <= scale:
        return f"a proportion (given with n) must lie in [0, {scale:g}], got {value!r}"
    return None


#: No metric has a declared scale: every proportion lies in [0, 1].
NO_SCALES: Mapping[str, float] = {}


def metric_scales(spec: Mapping[str, Any]) -> dict[str, float]:
    """Each metric's declared full scale (``metrics: {top1: {scale: 100}}``), from an
    investigation's definition as the knowledge base stores it; a metric not named is on 1."""
    declared = spec.get("metrics") or {}
    return {name: float(m["scale"]) for name, m in declared.items() if isinstance(m, dict) and m.get("scale")}


def _scale_problem(name: str, value: float, n: Optional[int], scales: Optional[Mapping[str, float]]) -> Optional[str]:
    """:func:`proportion_problem` on the metric's scale; ``scales`` None: not known yet, not checked."""
    return None if scales is None else proportion_problem(value, n, scales.get(name, 1.0))


def _finite(value: Any) -> Optional[float]:
    """``value`` as a finite float, or None (NaN, infinities, ints too big for a float)."""
    try:
        v = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return v if math.isfinite(v) else None


def parse_metric(text: str, scales: Optional[Mapping[str, float]] = NO_SCALES) -> tuple[str, dict]:
    """``gsm8k=0.878`` or ``gsm8k=0.878/1319`` -> ("gsm8k", {"value": .878, "n": 1319}).

    ``fail_rate=3/20`` is a count: 3 of 20 iterations failed -> {"value": 0.15, "n": 20}.
    A value with its n is a proportion on the metric's scale in ``scales`` (1
    unless named; None: the investigation is not known yet, so not checked).
    """
    hint = (f"--metric {text!r}: expected NAME=VALUE, NAME=VALUE/N or NAME=V1,V2,V3 (repeats), "
            "e.g. gsm8k=0.878/1319 or p99_ms=141.2,138.5,140.1")
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise InputError(hint)
    value_text, slash, n_text = rest.partition("/")
    try:
        float(value_text)
    except ValueError:
        raise InputError(hint) from None
    value = _finite(value_text)
    if value is None:
        raise InputError(f"--metric {text!r}: the value must be a finite number")
    if out_of_range(value):
        raise InputError(f"--metric {text!r}: the value is {out_of_range(value)}")
    out: dict[str, Any] = {"value": value}
    if slash:
        count = n_text.strip()
        if not count.isdigit() or len(count) > 10 or not 1 <= int(count) <= MAX_N:
            raise InputError(f"--metric {text!r}: the sample count after '/' must be a whole number from 1 to {MAX_N:,}")
        out["n"] = int(count)
        if name == "fail_rate":  # counts: fail_rate=3/20 is 3 of 20 iterations failed
            if not value.is_integer() or not 0 <= value <= out["n"]:
                raise InputError(f"--metric {text!r}: fail_rate=K/N needs a whole K from 0 to N failed")
            out["value"] = value = value / out["n"]
    problem = _scale_problem(name, value, out.get("n"), scales)
    if problem:
        raise InputError(f"--metric {text!r}: {problem}")
    return name, out


def parse_metrics(items: Iterable[str], scales: Optional[Mapping[str, float]] = NO_SCALES) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for item in items:
        name, value = parse_metric(item, scales)
        if name in out:
            raise InputError(f"--metric {name} given twice")
        out[name] = value
    return out


#: at most this many repeats in one --metric
MAX_REPEATS = 1000


def parse_repeats(items: Iterable[str], scales: Optional[Mapping[str, float]] = NO_SCALES) -> list[dict[str, dict]]:
    """``--metric`` values, one dict per repeat: ``p99_ms=141.2,138.5,140.1`` is
    three repeats (with ``/N`` after the last value when every one had N).  A
    metric given once applies to every repeat; lists must agree in length.
    ``scales``: as for :func:`parse_metric`."""
    items = list(items)
    split: dict[str, list[str]] = {}
    for item in items:
        name, sep, rest = item.partition("=")
        values, slash, n_text = rest.partition("/")
        parts = values.split(",")
        if len(parts) > MAX_REPEATS:
            raise InputError(f"--metric {name.strip()}: at most {MAX_REPEATS:,} repeats in one call")
        if any(not p.strip() for p in parts) and len(parts) > 1:
            raise InputError(f"--metric {item!r}: an empty repeat; give NAME=V1,V2,V3 (repeats of one config)")
        split[item] = [f"{name}{sep}{p.strip()}{slash}{n_text}" for p in parts]
    counts = {len(v) for v in split.values() if len(v) > 1}
    if len(counts) > 1:
        raise InputError("--metric: repeat lists of different lengths "
                         f"({', '.join(str(c) for c in sorted(counts))}); give each metric once or as many times")
    k = counts.pop() if counts else 1
    return [parse_metrics([v[i] if len(v) > 1 else v[0] for v in split.values()], scales) for i in range(k)]


def parse_assignments(items: Iterable[str], flag: str = "--set") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _NAME.match(key):
            raise InputError(f"{flag} {item!r}: expected KEY=VALUE, e.g. image=v0.5.14-rocm720-mi35x-20260626")
        out[key] = check_text(f"{flag} {key}", value.strip())  # type: ignore[assignment]
    return out


def parse_status(status: Optional[str]) -> Optional[str]:
    """The outcome a status names (``error``, the older word, is ``infra``)."""
    if status is None:
        return None
    if status not in STATUSES:
        raise InputError(f"--status {status!r}: expected one of {', '.join(OUTCOMES)}")
    return outcome(status)


def parse_time(text: Optional[str]) -> Optional[datetime]:
    """ISO 8601 date or date-time, as an aware UTC time (naive input is UTC)."""
    if text is None or text == "":
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"time {text!r}: expected an ISO 8601 date or date-time, e.g. 2026-06-26T12:00:00Z") from None
    try:
        value = value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    except OverflowError:
        value = datetime.min.replace(tzinfo=timezone.utc)  # refused just below
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise InputError(f"time {text!r}: out of range; expected a year from {MIN_YEAR} to {MAX_YEAR} (in UTC)")
    return value


#: Times outside these years are refused (the edges of the calendar overflow
#: when a zone is applied, and no CI run happened then).
MIN_YEAR, MAX_YEAR = 1970, 9998


_AGE = re.compile(r"^(\d{1,12})\s*([mhdw])\Z")
_AGE_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime) -> datetime:
    """``--since``: an ISO 8601 time, or an age before ``now`` such as ``90m``, ``12h``, ``2d``, ``1w``."""
    age = _AGE.match(text.strip())
    if age:
        try:
            return now - timedelta(**{_AGE_UNITS[age.group(2)]: int(age.group(1))})
        except OverflowError:
            raise InputError(f"--since {text!r}: too long ago; give an age within the calendar") from None
    try:
        value = parse_time(text)
    except InputError as e:
        if "out of range" in e.message:
            raise InputError(f"--since {e.message}") from None
        value = None
    if value is None:
        raise InputError(f"--since {text!r}: expected last-post, an ISO 8601 time (2026-06-26T12:00Z) "
                         "or an age such as 12h, 2d or 1w")
    return value


def normalise_metrics(raw: Any, where: str, scales: Mapping[str, float] = NO_SCALES) -> dict[str, dict]:
    """Metrics from a record: ``{name: value}`` or ``{name: {value, n}}``; a value
    with its n is a proportion on the metric's scale in ``scales`` (1 unless named)."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: metrics must be a mapping of name to value")
    out: dict[str, dict] = {}
    for name, v in raw.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise InputError(f"{where}: bad metric name {name!r}")
        if isinstance(v, dict):
            extra = set(v) - {"value", "n"}
            if extra or "value" not in v:
                raise InputError(f"{where}: metric {name} must be a number or {{value, n}}")
            value, n = v["value"], v.get("n")
        else:
            value, n = v, None
        finite = None if isinstance(value, bool) or not isinstance(value, (int, float)) else _finite(value)
        if finite is None:
            shown = repr(value) if not isinstance(value, int) else f"a {len(str(abs(value)))}-digit integer"
            raise InputError(f"{where}: metric {name} must be a finite number, got {shown}")
        if out_of_range(finite):
            raise InputError(f"{where}: metric {name} is {out_of_range(finite)}, got {value!r}")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N):
            raise InputError(f"{where}: metric {name}: n must be a whole number from 1 to {MAX_N:,}, got {n!r}")
        problem = _scale_problem(name, finite, n, scales)
        if problem:
            raise InputError(f"{where}: metric {name}: {problem}")
        out[name] = {"value": finite} | ({"n": n} if n is not None else {})
    return out
