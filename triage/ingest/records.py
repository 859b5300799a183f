"""Run records as they travel in files (JSON Lines): read, check, write.

A record is one JSON object per line::

    {"investigation": "kimik26-disagg", "run_id": "28907609511",
     "config": "kimik26-fp8-1k1k-1p1d-aiterdecode", "status": "failed",
     "metrics": {"gsm8k": {"value": 0.879, "n": 1319}},
     "provenance": {"sha": "0aac976"}, "url": "...", "time": "2026-06-20T00:00:00",
     "note": "...", "log_excerpt": "...", "signature": null,
     "excluded": false, "excluded_reason": null}

Only ``run_id``, ``config`` and ``status`` are required (and ``investigation``
unless the command names one).
"""

from __future__ import annotations

import json
from typing import Any, Optional

from triage.errors import InputError
from triage.ingest.runs import normalise_metrics, parse_status, parse_time
from triage.kb.store import RunInput

FIELDS = (
    "investigation", "run_id", "config", "status", "metrics", "provenance", "url", "time", "note",
    "log_excerpt", "signature", "signature_line", "excluded", "excluded_reason",
)


def record_to_input(rec: Any, where: str) -> tuple[Optional[str], RunInput]:
    """Check one record and turn it into (investigation id, RunInput)."""
    if not isinstance(rec, dict):
        raise InputError(f"{where}: a record must be a JSON object")
    unknown = sorted(set(rec) - set(FIELDS))
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(unknown)}; expected {', '.join(FIELDS)}")
    for key in ("run_id", "config", "status"):
        if rec.get(key) in (None, ""):
            raise InputError(f"{where}: missing {key}")
    run_id = rec["run_id"]
    if isinstance(run_id, bool) or not isinstance(run_id, (str, int)):
        raise InputError(f"{where}: run_id must be a string or a number")
    if not isinstance(rec["config"], str):
        raise InputError(f"{where}: config must be a string")
    try:
        status = parse_status(rec["status"])
        when = parse_time(rec.get("time"))
    except InputError as e:
        raise InputError(f"{where}: {e.message}") from None
    prov = rec.get("provenance") or {}
    if not isinstance(prov, dict) or any(isinstance(v, (dict, list)) for v in prov.values()):
        raise InputError(f"{where}: provenance must be a flat mapping of key to value")
    for key in ("url", "note", "log_excerpt", "signature", "signature_line", "excluded_reason", "investigation"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            raise InputError(f"{where}: {key} must be a string")
    if rec.get("excluded") is not None and not isinstance(rec["excluded"], bool):
        raise InputError(f"{where}: excluded must be true or false")
    data = RunInput(
        run_id=str(run_id),
        config=rec["config"],
        status=status,
        metrics=normalise_metrics(rec.get("metrics") or {}, where),
        provenance={str(k): str(v) for k, v in prov.items()},
        url=rec.get("url"),
        time=when,
        note=rec.get("note"),
        log_excerpt=rec.get("log_excerpt"),
        signature_id=rec.get("signature"),
        signature_line=rec.get("signature_line"),
        excluded=bool(rec.get("excluded", False)),
        excluded_reason=rec.get("excluded_reason"),
    )
    return rec.get("investigation"), data


def run_to_record(run: Any) -> dict:
    """A stored run as a record (the inverse of ``record_to_input``)."""
    rec = {
        "investigation": run.investigation_id,
        "run_id": run.run_id,
        "config": run.config,
        "status": run.status,
        "metrics": {k: dict(v) for k, v in sorted(run.metrics.items())},
        "provenance": dict(sorted(run.provenance.items())),
        "url": run.url,
        "time": run.time.isoformat() if run.time else None,
        "note": run.note,
        "log_excerpt": run.log_excerpt,
        "signature": run.signature_id,
        "signature_line": run.signature_line,
        "excluded": run.excluded,
        "excluded_reason": run.excluded_reason,
    }
    return {k: v for k, v in rec.items() if v is not None and v != {} or k in ("run_id", "config", "status")}


def dumps(rec: dict) -> str:
    return json.dumps(rec, ensure_ascii=False, sort_keys=False)
