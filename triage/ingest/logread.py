"""Reading a run's log into its record.

PLACEHOLDER, to be replaced by the log-reading work (metric extractors in
``ingest/extract.py``, known-failure signatures in ``ingest/signatures.py``,
``ingest/logs.py``'s ``open_log``).  Until then a log only gives the run its
excerpt: the last lines.  The two entry points and their signatures are what
the commands call, so the replacement can keep them:

* :func:`apply_log` -- lines already read (``add-run --from-github``);
* :func:`read_log_into` -- a file, plain or gzip, or ``-`` (``add-run --log``).
"""

from __future__ import annotations

import gzip
import sys
from typing import Any

from triage.errors import InputError

EXCERPT_LINES = 20


def apply_log(session: Any, investigation: Any, run_input: Any, lines: list[str]) -> list[str]:
    """Fill ``run_input`` from a log's ``lines``; return messages for the user.

    ``session`` and ``investigation`` give access to the investigation's
    extractors and the known signatures (``store.extractors_for``,
    ``store.signature_specs``); this placeholder reads neither.
    """
    tail = [line.rstrip("\r\n") for line in lines[-EXCERPT_LINES:]]
    run_input.log_excerpt = "\n".join(tail)
    return []


def read_log_into(session: Any, investigation: Any, run_input: Any, path: str) -> list[str]:
    """:func:`apply_log` on a log file (plain or gzip; ``-`` is stdin)."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            text = data.decode("utf-8", errors="replace")
    except EOFError:
        raise InputError(f"--log {path}: the gzip file is cut short") from None
    except OSError as e:
        raise InputError(f"--log {path}: {e.strerror or e}") from None
    return apply_log(session, investigation, run_input, text.splitlines())
