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
from itertools import islice
from operator import itemgetter
from typing import Any, Callable, Iterator, Optional

from triage import limits
from triage.errors import InputError
from triage.inputs import bounded_lines, check_regular
from triage.ingest.records import Record, ScalesOf, check_record, quick_line, quick_record, read_csv
from triage.ingest.runs import metric_scales
from triage.kb import store

FORMATS = ("jsonl", "csv")
#: Records per bulk statement.
BATCH = 5000

@dataclass
class ImportResult:
    total: int = 0
    created: int = 0
    updated: int = 0
    older: int = 0  # records older than the stored run (by updated_at): the newer was kept
    investigations: list[str] = field(default_factory=list)
    configs: dict[str, set[str]] = field(default_factory=dict)  # investigation -> the configs written to


def guess_format(path: str, fmt: Optional[str], results: bool = False) -> str:
    """``--format`` if given, else by extension: ``.csv`` is CSV, anything
    else (``.jsonl``, ``.json``, standard input) JSON Lines.  ``results``: the
    command takes results files too (their formats named in the message)."""
    if fmt is not None:
        if fmt not in FORMATS:
            from triage.ingest.results import FORMATS as RESULTS

            known = ["jsonl", "csv", *(RESULTS if results else ())]
            raise InputError(f"--format {fmt!r}: expected {', '.join(known[:-1])} or {known[-1]}")
        return fmt
    return "csv" if path.lower().endswith(".csv") else "jsonl"


def _open(path: str, text: bool) -> Any:
    """The file (``-``: standard input), as text for CSV, as bytes for JSON
    Lines (msgspec reads UTF-8 bytes as they are)."""
    if path == "-":
        if sys.stdin is None:
            raise InputError("-: there is no standard input to read records from")
        raw = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
        if raw is None:  # a text stream without bytes under it
            return sys.stdin if text else io.BytesIO(sys.stdin.read().encode("utf-8"))
        return io.TextIOWrapper(raw, encoding="utf-8", newline="") if text else raw
    check_regular(path)  # a FIFO would block
    try:
        return open(path, encoding="utf-8", newline="") if text else open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file of records") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None


Batch = tuple[list[int], list[tuple]]  # line numbers and the checked records on them (Record's fields)


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list) -> dict:
    """A JSON object whose keys are all different (else the last would win unseen)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        raise DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


def _slow_line(raw: bytes, where: str, scales: Optional[ScalesOf] = None) -> Optional[Record]:
    """A line the quick path refused: parsed and checked one field at a
    time, for the message that names its problem (None: a blank line)."""
    if not raw.strip():
        return None
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text") from None
    try:
        rec = json.loads(line, object_pairs_hook=_no_duplicates)
    except DuplicateKey as e:
        raise InputError(f"{where}: the key {e.args[0]!r} is given twice") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts
        raise InputError(f"{where}: not valid JSON (a number with too many digits)") from None
    return check_record(rec, where, scales)


def _jsonl_batches(fh: Any, path: str, scales: Optional[ScalesOf] = None) -> Iterator[Batch]:
    """The file's records, :data:`BATCH` lines at a time.  List
    comprehensions over a batch keep Python's per-record overhead low.
    ``scales``: the metrics' scales by investigation (a percentage with its n
    takes the slow path, which checks it on its scale)."""
    first = 1
    most = limits.get("text")
    source = bounded_lines(fh, path)
    while True:
        lines = list(islice(source, BATCH))
        if not lines:
            return
        records = [quick_line(x, most) for x in lines]
        numbers = list(range(first, first + len(lines)))
        if None in records:  # unusual lines: the slow way, in order
            records = [r if r is not None else _slow_line(x, f"{path}:{n}", scales)
                       for r, x, n in zip(records, lines, numbers)]
            if None in records:  # blank lines
                numbers = [n for n, r in zip(numbers, records) if r is not None]
                records = [r for r in records if r is not None]
        first += len(lines)
        yield numbers, records  # type: ignore[misc]


def _csv_batches(fh: Any, path: str, scales: Optional[ScalesOf] = None) -> Iterator[Batch]:
    rows = read_csv(bounded_lines(fh, path), path)
    while True:
        chunk = list(islice(rows, BATCH))
        if not chunk:
            return
        yield [n for n, _ in chunk], [quick_record(rec) or check_record(rec, f"{path}:{n}", scales) for n, rec in chunk]


def scales_in(s: Any, default: Optional[str]) -> ScalesOf:
    """The metrics' declared scales of the investigation a record names (``default``
    when it names none), read from the knowledge base once per investigation."""
    known: dict[Optional[str], dict[str, float]] = {}

    def of(iid: Optional[str]) -> dict[str, float]:
        iid = iid or default
        if iid not in known:
            spec = _spec(s, iid) if iid is not None else None
            known[iid] = metric_scales(spec) if spec is not None else {}
        return known[iid]

    return of


def _spec(s: Any, iid: str) -> Optional[dict]:
    """The stored definition of the investigation ``iid`` (None: there is none), read as a
    column: an import maps no table class."""
    from sqlalchemy import select

    from triage.kb import tables

    t = tables.Investigation
    return s.execute(select(t.c.spec).where(t.c.id == iid)).scalar_one_or_none()


def import_file(s: Any, path: str, *, default_investigation: Optional[str] = None, fmt: Optional[str] = None,
                progress: Optional[Callable[[int, Optional[int]], None]] = None,
                overwrite: bool = False, writer: Optional[store.RunWriter] = None) -> ImportResult:
    """Upsert every record of a file in the caller's transaction.

    A record never replaces a run stored with a newer ``updated_at``: it is
    counted in ``older`` instead, unless ``overwrite``.  Each investigation
    is held (:func:`~triage.kb.store.lock_investigation`) from its first
    record to the commit, so that the counts are true when imports run in
    parallel.  ``progress(bytes_read, file_size)`` is called after each
    batch (the size is None for standard input).  ``writer``: the session's
    writer to use (made here if not given).
    """
    fmt = guess_format(path, fmt)
    result = ImportResult()
    fh = _open(path, text=fmt == "csv")
    total = os.fstat(fh.fileno()).st_size if path != "-" else None
    collect = gc.isenabled()
    gc.disable()  # the import makes many small objects and keeps them: collecting finds nothing
    try:
        if writer is None:
            writer = store.RunWriter(s, overwrite=overwrite)
        known: set[str] = set()
        batches = (_csv_batches if fmt == "csv" else _jsonl_batches)(fh, path, scales_in(s, default_investigation))
        for numbers, records in batches:
            if not result.total and total:  # the first batch: how many records the file holds, about
                read = _position(fh)
                if read:
                    writer.expect(total * len(records) // read)
            named = {r[0] for r in records}
            if None in named:
                records = [r if r[0] else (default_investigation,) + tuple(r[1:]) for r in records]
                named = {r[0] for r in records}
            new = named - known
            for n, r in zip(numbers, records) if new else ():
                if r[0] in new:  # the first record naming an investigation not seen yet
                    if r[0] is None:
                        raise InputError(f"{path}:{n}: the record names no investigation; add one or pass --pr")
                    if _spec(s, r[0]) is None:
                        raise InputError(f"{path}:{n}: no investigation {r[0]!r}; load its rule file first")
                    new.discard(r[0])
                    known.add(r[0])
                    result.investigations.append(r[0])
            _note_configs(result.configs, named, records)
            created, older = writer.write(records)
            result.created += created
            result.older += older
            result.total += len(records)
            if progress is not None:
                progress(_position(fh), total)
        writer.done()
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    finally:
        if collect:
            gc.enable()
        if path != "-":
            fh.close()
    result.updated = result.total - result.created - result.older
    if progress is not None:
        progress(total or 0, total)
    return result


def _note_configs(configs: dict[str, set[str]], named: set[str], records: list[tuple]) -> None:
    """Add the configs ``records`` write to, by investigation (``named``: theirs)."""
    if len(named) == 1:  # the usual batch: one investigation's, its configs in one pass in C
        configs.setdefault(next(iter(named)), set()).update(map(itemgetter(2), records))
        return
    for iid, config in {(r[0], r[2]) for r in records}:
        configs.setdefault(iid, set()).add(config)


def _position(fh: Any) -> int:
    try:
        return (fh.buffer if hasattr(fh, "buffer") else fh).tell()
    except (AttributeError, OSError, ValueError):
        return 0
