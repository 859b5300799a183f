"""Bulk import of run records: all or nothing per file, idempotent."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from triage.errors import InputError
from triage.ingest.records import record_to_input
from triage.kb import store


@dataclass
class ImportResult:
    total: int = 0
    created: int = 0
    updated: int = 0
    investigations: list[str] = field(default_factory=list)


def _lines(path: str) -> Iterator[tuple[int, str]]:
    if path == "-":
        for i, line in enumerate(sys.stdin, 1):
            yield i, line
        return
    try:
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                yield i, line
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None


def import_file(s: Any, path: str, *, default_investigation: Optional[str] = None) -> ImportResult:
    """Upsert every record of a JSON Lines file in the caller's transaction.

    The first bad record raises ``InputError`` naming its line; the caller's
    session then rolls back, so the knowledge base stays as it was.
    """
    result = ImportResult()
    known: dict[str, bool] = {}
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
        iid, data = record_to_input(rec, where)
        iid = iid or default_investigation
        if iid is None:
            raise InputError(f"{where}: the record names no investigation; add one or pass --pr")
        if iid not in known:
            known[iid] = s.get(store.m.Investigation, iid) is not None
            if not known[iid]:
                raise InputError(f"{where}: no investigation {iid!r}; load its rule file first")
            result.investigations.append(iid)
        _, created = store.upsert_run(s, iid, data, replace=True)
        result.total += 1
        result.created += created
        result.updated += not created
    return result
