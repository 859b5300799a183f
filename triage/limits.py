"""The bounds on what one input may cost, each raisable by an environment variable.

Every reader of user or log text stays within these: a small hostile file
must never take gigabytes or minutes.  A value that is not a positive number
falls back to the default.  README.md lists them all ("Limits").
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["Limit", "LIMITS", "get"]


@dataclass(frozen=True)
class Limit:
    env: str
    default: float
    what: str

    def value(self) -> float:
        raw = os.environ.get(self.env)
        if raw:
            try:
                v = float(raw)
            except ValueError:
                return self.default
            if v > 0 and v == v and v != float("inf"):
                return v
        return self.default


LIMITS = {
    "yaml_nodes": Limit("TRIAGE_MAX_YAML_NODES", 20_000, "values a rule file may expand to (aliases counted each time)"),
    "yaml_depth": Limit("TRIAGE_MAX_YAML_DEPTH", 64, "nesting depth of a rule file"),
    "template_output": Limit("TRIAGE_MAX_TEMPLATE_OUTPUT", 100_000, "characters a rule-file template (because:) may render"),
    "template_seconds": Limit("TRIAGE_MAX_TEMPLATE_SECONDS", 2.0, "seconds a rule-file template may take"),
    "log_line": Limit("TRIAGE_MAX_LOG_LINE", 8 << 20, "bytes of one log line; the rest is cut and flagged"),
    "log_bytes": Limit("TRIAGE_MAX_LOG_BYTES", 8 << 30, "bytes a log may hold (decompressed)"),
    "gzip_ratio": Limit("TRIAGE_MAX_GZIP_RATIO", 200, "decompressed to compressed size of a gzip log, past its first 64 MiB"),
    "text": Limit("TRIAGE_MAX_TEXT", 1 << 20, "characters of one text field of a run (note, log excerpt, url...)"),
    "json_depth": Limit("TRIAGE_MAX_JSON_DEPTH", 32, "nesting depth of a JSON record"),
}


def get(name: str) -> int:
    """The limit ``name`` in force (an int; seconds may be fractional via :func:`seconds`)."""
    return int(LIMITS[name].value())


def seconds(name: str) -> float:
    return LIMITS[name].value()
