"""Bulk import of run records: all or nothing per file, idempotent, fast.

JSON Lines or CSV (see :mod:`triage.ingest.records`).  Every record is
checked in Python, then written in batches with one bulk upsert each
(:class:`~triage.kb.store.RunWriter`), all in the caller's transaction: the
first bad record raises ``InputError`` naming ``FILE:LINE``, the caller's
session rolls back, and the knowledge base stays as it was.
"""

from __future__ import annotations

import gc
import io
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from triage.errors import InputError
from triage.ingest.records import Record, check_record, quick_record, read_csv
from triage.kb import store

FORMATS = ("jsonl", "csv")
#: Records per bulk statement.
BATCH = 5000

_scan = json.JSONDecoder().scan_once  # the C scanner under json.loads, without its per-call overhead


@dataclass
class ImportResult:
    total: int = 0
    created: int = 0
    updated: int = 0
    investigations: list[str] = field(default_factory=list)


def guess_format(path: str, fmt: Optional[str]) -> str:
    """``--format`` if given, else by extension: ``.csv`` is CSV, anything
    else (``.jsonl``, ``.json``, standard input) JSON Lines."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(f"--format {fmt!r}: expected jsonl or csv")
        return fmt
    return "csv" if path.lower().endswith(".csv") else "jsonl"


def _open_text(path: str) -> Any:
    if path == "-":
        if sys.stdin is None:
            raise InputError("-: there is no standard input to read records from")
        raw = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
        return io.TextIOWrapper(raw, encoding="utf-8", newline="") if raw is not None else sys.stdin
    try:
        return open(path, encoding="utf-8", newline="")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file of records") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


def _jsonl(fh: Any, path: str) -> Iterator[tuple[int, Any]]:
    scan = _scan
    for lineno, line in enumerate(fh, 1):
        try:
            rec, end = scan(line, 0)
            if end != len(line) and line[end:].strip():
                raise ValueError
        except (StopIteration, ValueError):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)  # for its message (or a line that starts with blanks)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{lineno}: not valid JSON ({e.msg} at column {e.colno})") from None
        yield lineno, rec


def import_file(s: Any, path: str, *, default_investigation: Optional[str] = None, fmt: Optional[str] = None,
                progress: Optional[Callable[[int, Optional[int]], None]] = None) -> ImportResult:
    """Upsert every record of a file in the caller's transaction.

    ``progress(bytes_read, file_size)`` is called after each batch (the size
    is None for standard input).
    """
    fmt = guess_format(path, fmt)
    result = ImportResult()
    fh = _open_text(path)
    total = os.fstat(fh.fileno()).st_size if path != "-" else None
    collect = gc.isenabled()
    gc.disable()  # the import makes many small objects and keeps them: collecting finds nothing
    try:
        records = read_csv(fh, path) if fmt == "csv" else _jsonl(fh, path)
        writer = store.RunWriter(s)
        known: set[Optional[str]] = set()
        batch: list[Record] = []
        for lineno, rec in records:
            r = quick_record(rec) or check_record(rec, f"{path}:{lineno}")
            iid = r.investigation or default_investigation
            if iid not in known:
                where = f"{path}:{lineno}"
                if iid is None:
                    raise InputError(f"{where}: the record names no investigation; add one or pass --pr")
                if s.get(store.m.Investigation, iid) is None:
                    raise InputError(f"{where}: no investigation {iid!r}; load its rule file first")
                known.add(iid)
                result.investigations.append(iid)
            batch.append(r if r.investigation == iid else r._replace(investigation=iid))
            if len(batch) >= BATCH:
                result.created += writer.write(batch)
                result.total += len(batch)
                batch = []
                if progress is not None:
                    progress(_position(fh), total)
        result.created += writer.write(batch)
        result.total += len(batch)
        writer.done()
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    finally:
        if collect:
            gc.enable()
        if path != "-":
            fh.close()
    result.updated = result.total - result.created
    if progress is not None:
        progress(total or 0, total)
    return result


def _position(fh: Any) -> int:
    try:
        return fh.buffer.tell()
    except (AttributeError, OSError, ValueError):
        return 0
