"""Each config's runs in numbers, kept as they are written.

An evaluation asks, for every config of an investigation, whether its runs
changed since a piece read them: their count, smallest and largest key,
newest write and the sum of their write times (``updated_at``, which every
write of a run sets) say so.  A grouped query over the (investigation,
config, updated_at) index gives them all, but it reads an index entry per
run: 60 ms at 100,000 runs, on every command that evaluates.  So the numbers
are kept in ``configruns``, a row per config, worked out again by the same
query, restricted to the configs written, by every writer of runs
(``upsert_run``, the import's ``RunWriter``, ``delete_runs``) under the
investigation's lock, in the writer's transaction.  Migration 0008 worked out
the investigations written before the table existed, so every investigation
with runs has its rows.  The snapshot's fingerprint (:mod:`triage.kb.snapshot`)
reads the numbers too.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from sqlalchemy import Integer, case, cast, delete, func, insert, literal, select, update
from sqlalchemy.orm import Session

from triage.kb import tables


def millis(s: Session, column: Any) -> Any:
    """A timestamp column in whole milliseconds since 1970 (an integer), in the session's dialect."""
    if s.get_bind().dialect.name == "postgresql":
        return func.round(func.extract("epoch", column) * 1000)
    return cast(func.round((func.julianday(column) - 2440587.5) * 86400000.0), Integer)


def times_sum(s: Session, column: Any) -> Any:
    """The sum of a timestamp column in whole milliseconds (exact: integers), in the session's dialect."""
    return func.sum(millis(s, column))


def _grouped(s: Session, iid: str, configs: Optional[list[str]] = None) -> Any:
    t = tables.Run
    q = (select(t.c.config, func.min(t.c.pk), func.count(), func.max(t.c.pk), func.max(t.c.updated_at),
                times_sum(s, t.c.updated_at))
         .where(t.c.investigation_id == iid).group_by(t.c.config))
    return q.where(t.c.config.in_(configs)) if configs is not None else q


def stored(s: Session, iid: str) -> list[tuple]:
    """``(config, first key, count, largest key, newest write, sum of write times)``
    for each config with runs, by its first run, as kept."""
    c = tables.ConfigRuns
    rows = s.execute(select(c.c.config, c.c.first_pk, c.c.count, c.c.max_pk, c.c.max_updated, c.c.times)
                     .where(c.c.investigation_id == iid)).all()
    return sorted(((config, first, n, top, newest, int(times or 0)) for config, first, n, top, newest, times in rows),
                  key=lambda row: row[1])


def refresh(s: Session, iid: str, configs: Optional[Iterable[str]] = None) -> None:
    """Work the numbers of ``configs`` (None: every config) of ``iid`` out again
    from its runs, after a write of them; the caller holds the investigation."""
    c = tables.ConfigRuns
    some = sorted(set(configs)) if configs is not None else None
    gone = delete(c).where(c.c.investigation_id == iid)
    s.execute(gone.where(c.c.config.in_(some)) if some is not None else gone)
    q = _grouped(s, iid, some)
    rows = q.with_only_columns(literal(iid), *q.selected_columns)
    s.execute(insert(c).from_select(["investigation_id", "config", "first_pk", "count", "max_pk", "max_updated",
                                     "times"], rows))


def added(s: Session, iid: str, config: str, pk: int) -> None:
    """The numbers of ``config`` of ``iid`` after one new run (key ``pk``) was
    written: one more run, its key and its write time, in one statement
    instead of a pass over every run of the config.  The sum takes the run's
    time as :func:`refresh` does (integers: the same sum).  A config without
    numbers yet is worked out whole."""
    c, r = tables.ConfigRuns, tables.Run
    written = select(r.c.updated_at).where(r.c.pk == pk).scalar_subquery()
    q = (update(c).where(c.c.investigation_id == iid, c.c.config == config)
         .values(count=c.c.count + 1,
                 first_pk=case((c.c.first_pk <= pk, c.c.first_pk), else_=pk),
                 max_pk=case((c.c.max_pk >= pk, c.c.max_pk), else_=pk),
                 max_updated=case((c.c.max_updated >= written, c.c.max_updated), else_=written),
                 times=c.c.times + select(millis(s, r.c.updated_at)).where(r.c.pk == pk).scalar_subquery()))
    if s.execute(q).rowcount == 0:
        refresh(s, iid, [config])


def recorded_configs(url: str, iids: list[str]) -> dict[str, list[str]]:
    """The configs each of ``iids`` has runs under, for a command that only reads
    rule files (`triage check`): empty where there is no knowledge base yet, or
    it cannot be read, since rule files are checked without one."""
    from sqlalchemy.exc import SQLAlchemyError

    from triage.errors import TriageError
    from triage.kb.db import missing_file, read_engine

    if missing_file(url) is not None or not iids:
        return {}
    try:
        with Session(read_engine(url)) as s:
            c = tables.ConfigRuns
            rows = s.execute(select(c.c.investigation_id, c.c.config).where(c.c.investigation_id.in_(iids))).all()
    except (SQLAlchemyError, TriageError):
        return {}
    out: dict[str, list[str]] = {}
    for iid, config in rows:
        out.setdefault(iid, []).append(config)
    return out
