"""Turn what a user typed (or a record in a file) into a run to store."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Optional

from triage.errors import InputError
from triage.rules.schema import STATUSES

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]*$")


def parse_metric(text: str) -> tuple[str, dict]:
    """``gsm8k=0.878`` or ``gsm8k=0.878/1319`` -> ("gsm8k", {"value": .878, "n": 1319}).

    ``fail_rate=3/20`` is a count: 3 of 20 iterations failed -> {"value": 0.15, "n": 20}.
    """
    hint = f"--metric {text!r}: expected NAME=VALUE or NAME=VALUE/N, e.g. gsm8k=0.878/1319"
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise InputError(hint)
    value_text, slash, n_text = rest.partition("/")
    try:
        value = float(value_text)
    except ValueError:
        raise InputError(hint) from None
    if not math.isfinite(value):
        raise InputError(f"--metric {text!r}: the value must be a finite number")
    out: dict[str, Any] = {"value": value}
    if slash:
        if not n_text.strip().isdigit() or int(n_text) < 1:
            raise InputError(f"--metric {text!r}: the sample count after '/' must be a whole number ≥ 1")
        out["n"] = int(n_text)
        if name == "fail_rate":  # counts: fail_rate=3/20 is 3 of 20 iterations failed
            if not value.is_integer() or not 0 <= value <= out["n"]:
                raise InputError(f"--metric {text!r}: fail_rate=K/N needs a whole K from 0 to N failed")
            out["value"] = value / out["n"]
    return name, out


def parse_metrics(items: Iterable[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for item in items:
        name, value = parse_metric(item)
        if name in out:
            raise InputError(f"--metric {name} given twice")
        out[name] = value
    return out


def parse_assignments(items: Iterable[str], flag: str = "--set") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _NAME.match(key):
            raise InputError(f"{flag} {item!r}: expected KEY=VALUE, e.g. image=v0.5.14-rocm720-mi35x-20260626")
        out[key] = value.strip()
    return out


def parse_status(status: Optional[str]) -> Optional[str]:
    if status is None:
        return None
    if status not in STATUSES:
        raise InputError(f"--status {status!r}: expected one of {', '.join(STATUSES)}")
    return status


def parse_time(text: Optional[str]) -> Optional[datetime]:
    """ISO 8601 date or date-time, as an aware UTC time (naive input is UTC)."""
    if text is None or text == "":
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"time {text!r}: expected an ISO 8601 date or date-time, e.g. 2026-06-26T12:00:00Z") from None
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


_AGE = re.compile(r"^(\d+)\s*([mhdw])$")
_AGE_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime) -> datetime:
    """``--since``: an ISO 8601 time, or an age before ``now`` such as ``90m``, ``12h``, ``2d``, ``1w``."""
    age = _AGE.match(text.strip())
    if age:
        return now - timedelta(**{_AGE_UNITS[age.group(2)]: int(age.group(1))})
    try:
        value = parse_time(text)
    except InputError:
        value = None
    if value is None:
        raise InputError(f"--since {text!r}: expected last-post, an ISO 8601 time (2026-06-26T12:00Z) "
                         "or an age such as 12h, 2d or 1w")
    return value


def normalise_metrics(raw: Any, where: str) -> dict[str, dict]:
    """Metrics from a record: ``{name: value}`` or ``{name: {value, n}}``."""
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
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InputError(f"{where}: metric {name} must be a finite number, got {value!r}")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise InputError(f"{where}: metric {name}: n must be a whole number ≥ 1, got {n!r}")
        out[name] = {"value": float(value)} | ({"n": n} if n is not None else {})
    return out
