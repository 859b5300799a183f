"""Runs: recording one (``add-run``), writing many (imports), finding and deleting them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator, Optional, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from triage.errors import InputError
from triage.kb import configruns
from triage.kb import tables
from triage.kb.tables import models as m
from triage.kb.db import _msgspec_encode, _utc, conflict_insert, json_text, lock_investigation, now


def runs_of(s: Session, iid: str) -> list[m.Run]:
    q = select(m.Run).where(m.Run.investigation_id == iid).order_by(m.Run.pk)
    return list(s.execute(q).scalars())


#: What ``runs list`` shows of each run (:func:`listed_runs`).
LISTED = ("run_id", "config", "status", "metrics", "provenance", "time", "url", "note", "signature_id", "excluded",
          "excluded_reason")


def listed_runs(s: Session, iid: str, last: Optional[int] = None) -> list[Any]:
    """The runs of ``iid`` in the order recorded (only the ``last`` recorded, if given), as rows of
    what ``runs list`` shows (:data:`LISTED`, by attribute as on a run), not objects of the ORM:
    a hundred thousand of those took a gigabyte."""
    t = tables.Run
    q = select(*(t.c[c] for c in LISTED)).where(t.c.investigation_id == iid)
    if last is None:
        return list(s.execute(q.order_by(t.c.pk)))
    rows = list(s.execute(q.order_by(t.c.pk.desc()).limit(last)))
    rows.reverse()
    return rows


def listed_records(s: Session, iid: str, last: Optional[int] = None) -> Iterator[list[dict]]:
    """What ``runs list --format json`` shows of each run of ``iid`` (the ``last`` recorded, if
    given), in the order recorded, a batch of :data:`EXPORT_BATCH` at a time, read as the
    driver's rows (as :func:`records_of` reads them): a hundred thousand runs read whole and
    written as one text held half a gigabyte."""
    from triage.kb.investigations import _json_decode

    t = tables.Run
    mine = t.c.investigation_id == iid
    q = select(*_as_driven(LISTED)).where(mine)
    if last is not None:
        if last <= 0:
            return
        first = s.execute(select(t.c.pk).where(mine).order_by(t.c.pk.desc()).offset(last - 1).limit(1)).scalar()
        if first is not None:  # else fewer runs than that: every one
            q = q.where(t.c.pk >= first)
    result = s.execute(q.order_by(t.c.pk), execution_options={"yield_per": EXPORT_BATCH})
    decode, times = _json_decode(), _times_read(s)
    for rows in result.partitions():
        yield [{"run_id": run_id, "config": config, "status": status, "metrics": decode(metrics),
                "provenance": decode(provenance), "time": times(when) if when is not None else None, "url": url,
                "note": note, "signature": signature, "excluded": bool(excluded), "excluded_reason": excluded_reason}
               for run_id, config, status, metrics, provenance, when, url, note, signature, excluded, excluded_reason
               in rows]


def count_runs(s: Session, iid: str) -> int:
    """How many runs ``iid`` has."""
    t = tables.Run
    return s.execute(select(func.count()).select_from(t).where(t.c.investigation_id == iid)).scalar_one()


#: The runs an export reads and writes at a time (:func:`records_of`).
EXPORT_BATCH = 2000


def records_of(s: Session, iid: str) -> Iterator[list[dict]]:
    """The runs of ``iid`` as records (:func:`run_to_record`), in the order recorded, a batch of
    :data:`EXPORT_BATCH` at a time: read as the driver's rows (no objects of the ORM, no
    processing per column: the JSON columns as their text, decoded in C), and never all held
    at once (a hundred thousand made whole took 600 MiB)."""
    from triage.kb.investigations import _json_decode

    t = tables.Run
    result = s.execute(select(*_as_driven(_RECORD_COLUMNS)).where(t.c.investigation_id == iid).order_by(t.c.pk),
                       execution_options={"yield_per": EXPORT_BATCH})
    decode, times = _json_decode(), _times_read(s)
    for rows in result.partitions():
        yield [_record(iid, run_id, config, status, decode(metrics), decode(provenance), url,
                       times(when) if when is not None else None,
                       note, log_excerpt, signature, signature_line, bool(excluded), excluded_reason,
                       times(updated, micro=True))
               for (run_id, config, status, metrics, provenance, url, when, note, log_excerpt, signature,
                    signature_line, excluded, excluded_reason, updated) in rows]


def named_in(s: Session, iid: str) -> Iterator[list[dict]]:
    """What the runs of ``iid`` name: their metrics and provenance (as :func:`records_of` gives
    them), a batch at a time: what a CSV export's header is made of, read without the rest of
    each run."""
    from sqlalchemy import Text, cast

    from triage.kb.investigations import _json_decode

    t = tables.Run
    result = s.execute(select(cast(t.c.metrics, Text), cast(t.c.provenance, Text)).where(t.c.investigation_id == iid),
                       execution_options={"yield_per": EXPORT_BATCH})
    decode = _json_decode()
    for rows in result.partitions():
        yield [{"metrics": decode(metrics), "provenance": decode(provenance)} for metrics, provenance in rows]


#: The run table's columns a record is read from (:func:`records_of`), in :func:`_record`'s order.
_RECORD_COLUMNS = ("run_id", "config", "status", "metrics", "provenance", "url", "time", "note", "log_excerpt",
                   "signature_id", "signature_line", "excluded", "excluded_reason", "updated_at")
_TIMES = ("time", "updated_at")


def _as_driven(names: Sequence[str]) -> list:
    """The run table's columns ``names``, read as the driver gives them: the JSON columns as
    their text (decoded by the reader, in C), times with no processing (:func:`_times_read`)."""
    from sqlalchemy import String, Text, cast, type_coerce

    from triage.kb.investigations import JSON_COLUMNS

    t = tables.Run
    return [cast(t.c[c], Text) if c in JSON_COLUMNS else type_coerce(t.c[c], String) if c in _TIMES else t.c[c]
            for c in names]


def _times_read(s: Session) -> Any:
    """``times(value, micro=False)``: a time column's value as the driver gives it, as a
    record writes it (``datetime.isoformat`` in UTC, to the microsecond if ``micro``), as the
    ORM's would be.  SQLite's text as triage writes it is turned as text; any other value
    goes through the column type's own processing, as the ORM's does."""
    from triage.kb.investigations import time_text

    dialect = s.get_bind().dialect
    process = tables.Run.c.time.type.dialect_impl(dialect).result_processor(dialect, None)  # to an aware UTC time
    texts: dict[Any, str] = {}  # the runs of a nightly's matrix share their workflow run's time

    def times(value: Any, micro: bool = False) -> str:
        got = texts.get(value) if not micro else None
        if got is not None:
            return got
        if type(value) is str and len(value) == 26 and value[10] == " " and value[19] == ".":
            got = value[:10] + "T" + value[11:] + "+00:00" if micro else time_text(value)
        else:
            at = process(value)
            got = at.isoformat(timespec="microseconds") if micro else at.isoformat()
        if not micro and len(texts) < 100_000:
            texts[value] = got
        return got
    return times


TEXT_FIELDS = ("url", "note", "log_excerpt", "signature_id", "signature_line", "excluded_reason")


@dataclass
class RunInput:
    """What ``add-run`` or an import says about one run (None: leave as is).

    Empty text is no text: ``""`` in a text field clears it, and a provenance
    key given an empty value is removed (``--set image=``), so that what is
    stored reads back the same from JSON Lines and from CSV.
    """

    run_id: str
    config: str
    status: Optional[str] = None
    metrics: Optional[dict[str, dict]] = None
    provenance: Optional[dict[str, str]] = None
    url: Optional[str] = None
    time: Optional[datetime] = None
    note: Optional[str] = None
    log_excerpt: Optional[str] = None
    signature_id: Optional[str] = None
    signature_line: Optional[str] = None
    excluded: Optional[bool] = None
    excluded_reason: Optional[str] = None


def upsert_run(s: Session, iid: str, data: RunInput, *, replace: bool = False) -> tuple[m.Run, bool]:
    """Record a run, or update the one with the same run id + config.

    Metrics and provenance given are merged into what is there (``replace``
    makes the input the whole record, as an import does).  Returns the row
    and whether it was created.

    The investigation is held first
    (:func:`~triage.kb.db.lock_investigation`), so that a merge reads what
    the last writer wrote; the write itself is one
    ``INSERT ... ON CONFLICT DO UPDATE`` statement, so that two writers of a
    new run never both try to create it.
    """
    lock_investigation(s, iid)
    t = tables.Run
    q = select(t).where(t.c.investigation_id == iid, t.c.run_id == data.run_id, t.c.config == data.config)
    old = s.execute(q).mappings().first()
    created = old is None
    if old is None:
        if data.status is None:
            raise InputError(f"run {data.run_id} ({data.config}) is new: give its --status")
        old = {c: None for c in RUN_COLUMNS} | {"metrics": {}, "provenance": {}, "excluded": False}
    row = dict(old) | {"investigation_id": iid, "run_id": data.run_id, "config": data.config}
    if data.status is not None:
        row["status"] = data.status
    if data.metrics is not None:
        row["metrics"] = dict(data.metrics) if replace else {**old["metrics"], **data.metrics}
    if data.provenance is not None:
        merged = dict(data.provenance) if replace else {**old["provenance"], **data.provenance}
        row["provenance"] = {k: v for k, v in merged.items() if v != ""}
    if data.time is not None or replace:
        row["time"] = data.time
    for name in TEXT_FIELDS:
        value = getattr(data, name)
        if value is not None or replace:
            row[name] = value or None
    if data.excluded is not None:
        row["excluded"] = data.excluded
    elif replace:
        row["excluded"] = False
    stamp = now()
    values = {c: row[c] for c in RUN_COLUMNS} | {"created_at": stamp, "updated_at": stamp}
    stmt = _upsert_statement(s.connection().dialect, overwrite=True)
    if stmt is None:  # another database: the ORM, under the lock taken above
        obj = s.execute(select(m.Run).where(m.Run.investigation_id == iid, m.Run.run_id == data.run_id,
                                            m.Run.config == data.config)).scalars().first()
        if obj is None:
            obj = m.Run(**values)
            s.add(obj)
        else:
            for k, v in values.items():
                if k != "created_at":
                    setattr(obj, k, v)
        s.flush()
        configruns.refresh(s, iid, [data.config])
        return obj, created
    s.execute(stmt, values)
    # the run as written, its columns as attributes (no mapped object: see find_investigation)
    obj = s.execute(select(t).where(t.c.investigation_id == iid, t.c.run_id == data.run_id,
                                    t.c.config == data.config)).one()
    if created:  # one more run: the config's numbers move by it
        configruns.added(s, iid, data.config, obj.pk)
    else:
        configruns.refresh(s, iid, [data.config])
    return obj, created


def _upsert_statement(dialect: Any, *, overwrite: bool) -> Any:
    """``INSERT ... ON CONFLICT (identity) DO UPDATE`` of a whole run (SQLite
    and PostgreSQL; None for another database).  An update keeps the run's
    ``created_at``; unless ``overwrite``, it only replaces a run whose
    ``updated_at`` is not newer than the record's."""
    insert = conflict_insert(dialect.name)
    if insert is None:
        return None
    from sqlalchemy import bindparam

    table = tables.Run
    ins = insert(table).values({c: bindparam(c) for c in STORED_COLUMNS})
    return ins.on_conflict_do_update(
        index_elements=[table.c[c] for c in _IDENTITY],
        set_={c: ins.excluded[c] for c in STORED_COLUMNS if c not in _IDENTITY and c != "created_at"},
        where=None if overwrite else table.c.updated_at <= ins.excluded.updated_at,
    )


#: Records at least, for an import into SQLite to build the run table's indexes after
#: writing them (:meth:`RunWriter.expect`).
REBUILD_AT = 20_000

#: The columns of a whole run record, in the order :class:`RunWriter` takes them.
RUN_COLUMNS = ("investigation_id", "run_id", "config", "status", "metrics", "provenance", "url", "time", "note",
               "log_excerpt", "signature_id", "signature_line", "excluded", "excluded_reason")
#: The columns a run is written with, in the order of :meth:`RunWriter.stored`.
STORED_COLUMNS = RUN_COLUMNS + ("created_at", "updated_at")
_IDENTITY = ("investigation_id", "run_id", "config")


_PROBE = datetime(2026, 6, 26, 3, 14, 15, 926535, tzinfo=timezone.utc)


def _same(value: Any) -> Any:
    return value


#: Times :meth:`RunWriter.stored` keeps in their stored form at most.
_TIMES_MOST = 100_000


def _iso_utc(value: datetime) -> str:
    """An aware time, in UTC, as SQLite's DATETIME stores it: ``2026-06-26 03:14:15.926535``."""
    return value.astimezone(timezone.utc).isoformat(" ", "microseconds")[:26]


class RunWriter:
    """Whole run records written in bulk, inside the session's transaction.

    Each record replaces the run with its identity (investigation, run id,
    config), as ``upsert_run(..., replace=True)`` does, with one statement
    per batch: ``INSERT ... ON CONFLICT (identity) DO UPDATE`` (SQLite and
    PostgreSQL; another database falls back to one upsert per record).  An
    updated run keeps its ``created_at``; every written run gets the same
    ``updated_at``.  The statement is built with SQLAlchemy Core, compiled
    once, and run with the driver's ``executemany`` on values already in
    their stored form, which is what makes 100,000 records quick.
    """

    def __init__(self, s: Session, *, overwrite: bool = False) -> None:
        self.s = s
        self.conn = s.connection()
        dialect = self.conn.dialect
        self.overwrite = overwrite
        self.bulk = dialect.name in ("sqlite", "postgresql")
        # identities the knowledge base has, as written so far, with their updated_at
        self._known: dict[tuple[str, str, str], datetime] = {}
        self._loaded: set[str] = set()  # investigations whose identities are in _known
        self._rebuild: list[str] = []  # indexes of the run table dropped, to build again in done()
        stamp = now()
        self._stamp = stamp
        if not self.bulk:
            return
        table = tables.Run
        names = STORED_COLUMNS
        compiled = _upsert_statement(dialect, overwrite=overwrite).compile(dialect=dialect)
        self._sql = str(compiled)
        self._order = list(compiled.positiontup) if compiled.positional else None  # type: ignore[arg-type]
        self._pick = None  # positions to reorder values by, if the statement orders them otherwise
        if self._order is not None and self._order != list(names):
            self._pick = [names.index(c) for c in self._order]
        # The processors the ORM applies, so that both write the same text.
        # For times, the database type's own: the UTCDateTime around it only
        # converts to UTC, and every time here is UTC already.
        self._time = table.c.time.type.impl_instance.dialect_impl(dialect).bind_processor(dialect)
        if self._time is not None:
            if self._time(_PROBE) == _iso_utc(_PROBE):
                self._time = _iso_utc  # the same text (checked on a sample just now), C calls instead of Python
            else:  # pragma: no cover - another SQLAlchemy's format
                proc = self._time
                self._time = lambda value: proc(value.astimezone(timezone.utc))
        self._bool = table.c.excluded.type.dialect_impl(dialect).bind_processor(dialect)
        if self._bool is not None and [(type(x), x) for x in map(self._bool, (True, False))] == [(int, 1), (int, 0)]:
            self._bool = int  # what it does (SQLite has no booleans), in C
        self._stamp_value = self._time(stamp) if self._time else stamp
        self._times: dict[datetime, Any] = {}  # times written, in their stored form (:meth:`stored`)

    def expect(self, records: int) -> None:
        """Before the first write: about how many records are coming.  On SQLite,
        when they are at least :data:`REBUILD_AT` and at least as many as the run
        table holds, its secondary indexes are dropped now and built again in
        :meth:`done`: one sort of every entry instead of an insertion into two
        B-trees per run (a third of the writing time of 100,000 runs into an
        empty table).  In the caller's transaction, like the rest: a failed
        import rolls the drop back too.  The unique index stays: the upsert
        needs it."""
        if self._rebuild or not self.bulk or self.conn.dialect.name != "sqlite" or records < REBUILD_AT:
            return
        held = self.conn.execute(select(func.max(tables.Run.c.pk))).scalar() or 0
        if records < held:  # an insertion into large indexes costs less than sorting them whole
            return
        found = self.conn.exec_driver_sql(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'run' AND sql IS NOT NULL"
            " AND sql NOT LIKE 'CREATE UNIQUE%' ORDER BY name").all()
        for name, _ in found:
            self.conn.exec_driver_sql(f'DROP INDEX "{name}"')
        self._rebuild = [sql for _, sql in found]

    def _load_known(self, iid: str) -> None:
        lock_investigation(self.s, iid)  # PostgreSQL: what is read now stays true until the commit
        t = tables.Run
        q = select(t.c.run_id, t.c.config, t.c.updated_at).where(t.c.investigation_id == iid)
        self._known.update(((iid, a, b), _utc(t)) for a, b, t in self.s.execute(q))
        self._loaded.add(iid)

    def write(self, rows: Sequence[tuple]) -> tuple[int, int]:
        """Write records, each a tuple in :data:`RUN_COLUMNS` order (``time``
        an aware datetime, ``metrics``/``provenance`` mappings), then its
        ``updated_at`` (an aware datetime; None: now); a later record with
        the same identity wins.

        A record older than the stored run (by ``updated_at``) is skipped
        unless the writer overwrites.  Returns how many runs were new and how
        many records were skipped as older."""
        latest: dict[tuple, tuple] = {}
        for r in rows:
            latest[(r[0], r[1], r[2])] = r
        known, loaded = self._known, self._loaded
        for iid in {key[0] for key in latest} - loaded:
            self._load_known(iid)
        stamp_dt = self._stamp
        stored = [key for key in latest if key in known]
        new, older = len(latest) - len(stored), 0
        if stored and not self.overwrite:
            for key in stored:
                if known[key] > (latest[key][14] or stamp_dt):
                    del latest[key]
                    older += 1
        known.update({key: r[14] or stamp_dt for key, r in latest.items()})
        if not self.bulk:
            t = tables.Run
            for r in latest.values():
                upsert_run(self.s, r[0], RunInput(*r[1:12], excluded=r[12], excluded_reason=r[13]), replace=True)
                if r[14] is not None:
                    self.s.execute(t.update().where(t.c.investigation_id == r[0], t.c.run_id == r[1],
                                                    t.c.config == r[2]).values(updated_at=r[14]))
            return new, older
        values = self.stored(latest.values())
        if self._pick is not None:
            values = [tuple(v[i] for i in self._pick) for v in values]
        elif self._order is None:
            values = [dict(zip(STORED_COLUMNS, v)) for v in values]  # type: ignore[misc]
        if values:
            self.conn.exec_driver_sql(self._sql, values)
        return new, older

    def stored(self, rows: Iterable[tuple]) -> list[tuple]:
        """Records (as :meth:`write` takes them) in their stored form, column by column
        (:data:`STORED_COLUMNS`): what the database is given."""
        stamp = self._stamp_value
        bool_ = self._bool or _same
        # A time in its stored form, looked up first: the runs of a nightly's matrix share
        # their workflow run's (100,000 runs of a wide investigation hold 18,000 times),
        # and a lookup costs a third of turning one (an instant in another zone is equal,
        # and stored the same).  Past a bound, the table starts again.
        times = self._times
        if len(times) > _TIMES_MOST:
            times.clear()
        known = times.get
        time_ = self._time or _same  # no processor: the time as it is, kept the same way

        def turned(value: Any) -> Any:  # a time not seen yet
            text = times[value] = time_(value)
            return text
        enc = _msgspec_encode
        if enc is None:  # pragma: no cover - msgspec is a dependency
            return [(r[0], r[1], r[2], r[3], json_text(r[4]), json_text(r[5]), r[6], r[7] and turned(r[7]), r[8],
                     r[9], r[10], r[11], bool_(r[12]), r[13], stamp, r[14] and turned(r[14]) or stamp)
                    for r in rows]
        # the same, with the encoder called directly: this is the import's inner loop
        return [(r[0], r[1], r[2], r[3], enc(r[4]).decode(), enc(r[5]).decode(), r[6],
                 r[7] and (known(r[7]) or turned(r[7])), r[8], r[9], r[10], r[11], bool_(r[12]), r[13], stamp,
                 r[14] and (known(r[14]) or turned(r[14])) or stamp)
                for r in rows]

    def done(self) -> None:
        """After the last batch: each written investigation's configs in numbers
        (:mod:`triage.kb.configruns`), worked out again; objects the session
        holds are stale now.  Indexes :meth:`expect` dropped are built first."""
        for sql in self._rebuild:
            self.conn.exec_driver_sql(sql)
        self._rebuild = []
        for iid in sorted(self._loaded):
            configruns.refresh(self.s, iid)
        self.s.expire_all()
        # the identities written are the knowledge base's now: a later write reads them again
        # (an import of 100,000 runs held them through its evaluation, 30 MiB)
        self._known, self._loaded = {}, set()


def find_runs(s: Session, iid: str, run_id: str, config: Optional[str] = None) -> list[m.Run]:
    q = select(m.Run).where(m.Run.investigation_id == iid, m.Run.run_id == run_id)
    if config is not None:
        q = q.where(m.Run.config == config)
    return list(s.execute(q.order_by(m.Run.config)).scalars())


def delete_runs(s: Session, runs: Sequence[m.Run], because: str) -> None:
    """Remove runs, keeping each whole record and the reason in ``run_deletion``."""
    at = now()
    written: dict[str, set[str]] = {}
    for iid in sorted({r.investigation_id for r in runs}):
        lock_investigation(s, iid)
    for r in runs:
        s.add(m.RunDeletion(investigation_id=r.investigation_id, run_id=r.run_id, config=r.config,
                            because=because, record=run_to_record(r), at=at))
        written.setdefault(r.investigation_id, set()).add(r.config)
        s.delete(r)
    s.flush()
    for iid, configs in sorted(written.items()):
        configruns.refresh(s, iid, configs)


def run_deletions(s: Session, iid: str) -> list[m.RunDeletion]:
    q = select(m.RunDeletion).where(m.RunDeletion.investigation_id == iid).order_by(m.RunDeletion.pk)
    return list(s.execute(q).scalars())


def run_to_record(run: Any) -> dict:
    """A stored run as a record (the inverse of ``record_to_input``)."""
    return _record(run.investigation_id, run.run_id, run.config, run.status, run.metrics, run.provenance, run.url,
                   run.time.isoformat() if run.time else None, run.note, run.log_excerpt, run.signature_id,
                   run.signature_line, run.excluded, run.excluded_reason, _utc_text(run.updated_at))


def _record(iid: str, run_id: str, config: str, status: str, metrics: dict, provenance: dict, url: Optional[str],
            time: Optional[str], note: Optional[str], log_excerpt: Optional[str], signature: Optional[str],
            signature_line: Optional[str], excluded: bool, excluded_reason: Optional[str],
            updated_at: Optional[str]) -> dict:
    """A run's record from its stored values (times as their text): metrics and provenance by
    name, and none of the fields that are absent (None, or an empty mapping)."""
    rec = {
        "investigation": iid,
        "run_id": run_id,
        "config": config,
        "status": status,
        "metrics": {k: dict(v) for k, v in sorted(metrics.items())},
        "provenance": dict(sorted(provenance.items())),
        "url": url,
        "time": time,
        "note": note,
        "log_excerpt": log_excerpt,
        "signature": signature,
        "signature_line": signature_line,
        "excluded": excluded,
        "excluded_reason": excluded_reason,
        "updated_at": updated_at,
    }
    return {k: v for k, v in rec.items() if v is not None and v != {} or k in ("run_id", "config", "status")}


def _utc_text(t: Optional[datetime]) -> Optional[str]:
    """A stored time as ISO 8601 in UTC, to the microsecond (SQLite gives it back without a zone)."""
    if t is None:
        return None
    t = t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
    return t.isoformat(timespec="microseconds")
