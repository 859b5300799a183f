"""The bounds on what one input may cost, each raisable by an environment variable.

Every reader of user or log text stays within these: a small hostile file
must never take gigabytes or minutes.  A value that is not a positive number
falls back to the default.  README.md lists them all ("Limits").

The readers are too deep to be handed the values: the edge that reads the
environment (:class:`triage.settings.Settings`: a command, a server, a test)
sets them here once with :func:`configure`.  Until then every limit is its
default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["Limit", "LIMITS", "configure", "defaults", "get", "parse", "seconds"]


@dataclass(frozen=True)
class Limit:
    env: str
    default: float
    what: str


def parse(raw: Optional[str], default: float) -> float:
    """A limit's value from its variable's text: a positive finite number, else ``default``."""
    if raw:
        try:
            v = float(raw)
        except ValueError:
            return default
        if v > 0 and v == v and v != float("inf"):
            return v
    return default


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
    "results_bytes": Limit("TRIAGE_MAX_RESULTS_BYTES", 32 << 20, "bytes of one results file (JUnit XML, lm-eval or benchmark JSON)"),
    "result_entries": Limit("TRIAGE_MAX_RESULT_ENTRIES", 100_000, "test cases, tasks or benchmarks in one results file"),
    "artifact_bytes": Limit("TRIAGE_MAX_ARTIFACT_BYTES", 256 << 20, "bytes of one workflow run artifact (a zip) to download"),
    "artifact_entries": Limit("TRIAGE_MAX_ARTIFACT_ENTRIES", 10_000, "entries of one workflow run artifact (a zip)"),
    "record_bytes": Limit("TRIAGE_MAX_RECORD_BYTES", 16 << 20, "bytes of one line of a file of run records"),
    "rule_file_bytes": Limit("TRIAGE_MAX_RULE_FILE_BYTES", 4 << 20, "bytes of one rule file"),
    "rule_text": Limit("TRIAGE_MAX_RULE_TEXT", 10_000, "characters of one text in a rule file"),
    "pending_uploads": Limit("TRIAGE_MAX_PENDING_UPLOADS", 8, "webhook bodies over 1 MiB read at once, before their signature is known"),
    "pending_requests": Limit("TRIAGE_MAX_PENDING_REQUESTS", 32, "webhook bodies of any size read at once, before their signature is known"),
    "body_seconds": Limit("TRIAGE_MAX_BODY_SECONDS", 20, "seconds a webhook body may take to arrive"),
    "stuck_seconds": Limit("TRIAGE_MAX_STEP_SECONDS", 300, "seconds a server worker may spend on one step before /healthz calls it stuck"),
}


def defaults() -> dict[str, float]:
    """Every limit at its default."""
    return {name: limit.default for name, limit in LIMITS.items()}


_in_force: dict[str, float] = defaults()


def configure(settings: Any) -> None:
    """The limits of ``settings`` (:class:`triage.settings.Settings`) in force from now on in this process."""
    global _in_force
    _in_force = {**defaults(), **settings.limits}


def get(name: str) -> int:
    """The limit ``name`` in force (an int; seconds may be fractional via :func:`seconds`)."""
    return int(_in_force[name])


def seconds(name: str) -> float:
    return _in_force[name]
