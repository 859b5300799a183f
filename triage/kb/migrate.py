"""The knowledge base's schema version: check it, create it, upgrade it.

The version is ``meta.schema_version``, a whole number; the migration to
version N is ``migrations/versions/NNNN_*.py`` (an Alembic revision
``"NNNN"``).  The newest file's number is the version this triage writes
(:func:`head`).  Opening a knowledge base (:func:`prepare`):

* empty: the tables are created at the newest version;
* at the newest version: nothing to do -- the check reads one row and does
  not import Alembic, so that start-up stays fast;
* at an older version: it is upgraded, in one transaction, after a copy of a
  SQLite file is saved next to it (``kb.sqlite.v1.bak``);
* with tables but no version, or a version this triage does not know, or a
  file that is no SQLite database: refused as bad input
  (:class:`~triage.errors.InputError`, exit 2), with what to do.

Concurrent openers are serialised while they create or upgrade (SQLite's
``BEGIN IMMEDIATE``, a transaction-scoped advisory lock on PostgreSQL), and
the version is read again under that lock.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from sqlalchemy import text
from sqlalchemy.exc import DatabaseError
from sqlalchemy.engine import Connection, Engine

from triage.errors import InputError

VERSIONS = Path(__file__).resolve().parent / "migrations" / "versions"
_FILE = re.compile(r"^(\d{4})_[a-z0-9_]+\.py$")
#: The advisory lock key PostgreSQL openers take while they create or upgrade.
PG_LOCK_KEY = 0x7472696167  # "triag"


def revisions() -> list[int]:
    """The migration numbers, in order (from the file names; no Alembic)."""
    return sorted(int(m.group(1)) for name in os.listdir(VERSIONS) if (m := _FILE.match(name)))


def head() -> int:
    """The schema version this triage writes: the newest migration's number."""
    return revisions()[-1]


@dataclass
class Status:
    version: Optional[int]  # None: no version (empty, or tables without one)
    head: int
    empty: bool  # no tables at all
    raw: Optional[str] = None  # the version as stored, when it is not a number this triage knows

    @property
    def state(self) -> str:
        if self.empty:
            return "empty"
        if self.raw is not None or self.version is None:
            return "unknown"
        if self.version == self.head:
            return "current"
        return "older" if self.version < self.head else "newer"


def read_status(conn: Connection) -> Status:
    """The knowledge base's version, read with plain SQL."""
    from sqlalchemy import inspect

    tables = set(inspect(conn).get_table_names())
    top = head()
    if not tables:
        return Status(None, top, True)
    if "meta" not in tables:
        return Status(None, top, False)
    raw = conn.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
    if raw is None:
        return Status(None, top, False)
    if not raw.isdigit():
        return Status(None, top, False, raw)
    version = int(raw)
    if version < 1 or (version <= top and version not in revisions()):
        return Status(None, top, False, raw)
    return Status(version, top, False)


def refusal(status: Status, where: str) -> str:
    """What is wrong with a knowledge base triage will not open, and what to do."""
    if status.state == "newer":
        return (f"the knowledge base {where} has schema version {status.version}, newer than this triage's "
                f"{status.head}: upgrade triage to open it")
    if status.raw is not None:
        return (f"the knowledge base {where} has an unknown schema version {status.raw!r} (this triage knows "
                f"1 to {status.head}): restore it from a backup, or point --db at another knowledge base")
    return (f"the knowledge base {where} has tables but no schema version (meta.schema_version): it was not "
            "made by triage, or the row was lost; restore it from a backup, or start a new knowledge base "
            "(--db) and import the runs into it")


def _locked(conn: Connection) -> None:
    """Serialise creators and upgraders (SQLite: the transaction is IMMEDIATE already)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_LOCK_KEY})


def prepare(engine: Engine, where: str, *, upgrade: bool = True, notify: Any = None, keep_copy: bool = True) -> Status:
    """Make the knowledge base usable: create, check, or upgrade it.

    ``upgrade=False`` only checks (``triage db status``).  ``notify(text)``
    hears about an upgrade (for stderr).  ``keep_copy=False``: no copy of a
    SQLite file before its upgrade (a private copy).  Returns the status found first.
    """
    try:
        with engine.connect() as conn:
            first = read_status(conn)
            conn.rollback()
    except DatabaseError as e:
        if "file is not a database" not in str(e):
            raise
        raise InputError(f"the knowledge base {where} is not a SQLite database: point --db at a knowledge "
                         "base, or at a new file to start one") from None
    if first.state == "current" or (not upgrade and first.state in ("older", "empty")):
        return first
    if first.state in ("unknown", "newer"):
        raise InputError(refusal(first, where))
    backup = backup_sqlite(engine, first.version) if first.state == "older" and keep_copy else None
    with engine.begin() as conn:
        _locked(conn)
        now = read_status(conn)  # again: another process may have done it meanwhile
        if now.state == "empty":
            _create(conn)
        elif now.state == "older":
            _upgrade(conn, now.version or 1)
            if notify is not None:
                saved = f" (the previous file is saved as {backup})" if backup else ""
                notify(f"upgraded the knowledge base {where} from schema version {now.version} to {now.head}{saved}")
        elif now.state != "current":
            raise InputError(refusal(now, where))
        elif backup is not None:  # another process upgraded it meanwhile: its copy is the one to keep
            Path(backup).unlink(missing_ok=True)
            if notify is not None:
                notify(f"the knowledge base {where} was upgraded to schema version {now.head} by another "
                       "process meanwhile")
    return first


def _create(conn: Connection) -> None:
    from triage.kb import tables

    tables.metadata().create_all(conn, checkfirst=False)
    _set_version(conn, head())


def _set_version(conn: Connection, version: int) -> None:
    updated = conn.execute(text("UPDATE meta SET value = :v WHERE key = 'schema_version'"), {"v": str(version)})
    if updated.rowcount == 0:
        conn.execute(text("INSERT INTO meta (key, value) VALUES ('schema_version', :v)"), {"v": str(version)})


def _upgrade(conn: Connection, version: int) -> None:
    """Run the migrations after ``version`` to the head with Alembic, in the
    caller's transaction (imported only here: most runs never need it)."""
    from alembic.config import Config
    from alembic.runtime.environment import EnvironmentContext
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(VERSIONS.parent))
    script = ScriptDirectory.from_config(cfg)
    target = f"{head():04d}"

    def steps(rev: Any, _context: Any) -> Any:
        return script._upgrade_revs(target, rev)

    with EnvironmentContext(cfg, script, fn=steps, destination_rev=target) as env:
        env.configure(connection=conn, transaction_per_migration=False)
        env.get_context().stamp(script, f"{version:04d}")  # meta.schema_version is the truth
        env.run_migrations()
    _set_version(conn, head())


def backup_sqlite(engine: Engine, version: Optional[int]) -> Optional[str]:
    """A consistent copy of a SQLite knowledge base file next to it
    (``NAME.vN.bak``, or ``NAME.vN.2.bak`` when that exists); None for
    another database or an in-memory one."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    path = Path(url.database)
    target = path.with_name(f"{path.name}.v{version}.bak")
    k = 2
    while target.exists():
        target, k = path.with_name(f"{path.name}.v{version}.{k}.bak"), k + 1
    src = sqlite3.connect(str(path), timeout=30)
    try:
        dst = sqlite3.connect(str(target))
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    return str(target)
