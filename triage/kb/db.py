"""The database: engines, sessions and locks.

The default database is ``kb.sqlite`` in the current directory; ``--db`` or
``TRIAGE_DB`` (read by the command line) take any SQLAlchemy URL (``postgresql+psycopg://…`` for a team).
Writes happen in one transaction per command: an error leaves the knowledge
base as it was.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Optional

from sqlalchemy import create_engine, event, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session

from triage.errors import InputError, RuntimeFailure
from triage.kb import tables

DEFAULT_DB = "kb.sqlite"


def now() -> datetime:
    return datetime.now(timezone.utc)


def resolve_url(db: Optional[str]) -> str:
    """A SQLAlchemy URL from ``--db``/``TRIAGE_DB`` (default ``kb.sqlite``); a bare path means SQLite."""
    value = db or DEFAULT_DB
    if "://" in value:
        if value.startswith("sqlite:///file:"):  # SQLite's URI form: its parameters stay (mode=ro)
            path, sep, query = value[len("sqlite:///file:"):].partition("?")
            return f"sqlite:///file:{Path(path).resolve()}{sep}{query}"
        if value.startswith("sqlite:///") and not value.startswith("sqlite:////") and ":memory:" not in value:
            value = "sqlite:///" + str(Path(value[len("sqlite:///"):]).resolve())
        return value
    return f"sqlite:///{Path(value).resolve()}"


def missing_file(url: str) -> Optional[Path]:
    """The SQLite file a URL names when it does not exist yet (None: it exists, or not SQLite)."""
    from triage.kb.readonly import sqlite_path

    path = sqlite_path(url)
    return None if path is None or path.exists() else path


_engines: dict[str, Engine] = {}

#: SQLite: how long a writer waits for another's lock (the busy timeout), and
#: how many more times it tries to take it after that.
BUSY_TIMEOUT = 30.0
BUSY_RETRIES = 3


def _sqlite_busy(e: BaseException) -> bool:
    return "locked" in str(e) or "busy" in str(e)


def _retry_busy(action: Any) -> Any:
    """Run ``action()``; again, up to :data:`BUSY_RETRIES` times, while SQLite says it is locked."""
    import sqlite3
    import time

    for attempt in range(BUSY_RETRIES + 1):
        try:
            return action()
        except sqlite3.OperationalError as e:
            if attempt == BUSY_RETRIES or not _sqlite_busy(e):
                raise
            time.sleep(0.05 * (attempt + 1))


def get_engine(url: str, *, upgrade: bool = True) -> Engine:
    """The engine of a knowledge base, created, checked or upgraded on first use
    (:func:`triage.kb.migrate.prepare`; ``upgrade=False`` only checks).

    SQLite runs in WAL mode, and every transaction begins with ``BEGIN
    IMMEDIATE``: writers take the write lock first, waiting for it up to
    :data:`BUSY_TIMEOUT` seconds (then retrying), so that no transaction
    fails halfway with "database is locked".
    """
    if url in _engines:
        return _engines[url]
    from triage.kb import readonly

    path = readonly.sqlite_path(url)
    if path is not None and path.is_dir():
        raise InputError(f"the knowledge base {_safe(url)} is a directory: point --db at a knowledge base, "
                         "or at a new file to start one")
    try:
        if url.startswith("sqlite"):
            _bind_as_is()
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT}, json_serializer=json_text)

            @event.listens_for(engine, "connect")
            def _pragmas(dbapi_conn: Any, _: Any) -> None:
                dbapi_conn.isolation_level = None  # transactions are begun below, IMMEDIATE
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA foreign_keys=ON")
                _retry_busy(lambda: cur.execute("PRAGMA journal_mode=WAL"))
                cur.execute("PRAGMA synchronous=NORMAL")
                # Debian's SQLite zeroes every page it frees (secure_delete=ON), each one written to
                # the WAL and then to the file: an evaluation replacing a few megabytes of stored
                # pieces wrote them twice over.  FAST purges deleted content from the pages it
                # writes anyway, and leaves freed pages as they are.
                cur.execute("PRAGMA secure_delete=FAST")
                cur.close()

            @event.listens_for(engine, "begin")
            def _begin(conn: Any) -> None:
                cur = conn.connection.dbapi_connection.cursor()
                try:
                    _retry_busy(lambda: cur.execute("BEGIN IMMEDIATE"))
                finally:
                    cur.close()

        else:
            engine = create_engine(url, pool_pre_ping=True, json_serializer=json_text)
    except (ArgumentError, NoSuchModuleError, ModuleNotFoundError) as e:
        raise InputError(_unusable_url(_safe(url), e)) from None
    from triage.kb import migrate

    try:
        if readonly.is_copy(url):  # the file itself is not upgraded: nothing to say, nothing to keep
            migrate.prepare(engine, _safe(url), upgrade=upgrade, keep_copy=False)
        else:
            migrate.prepare(engine, _safe(url), upgrade=upgrade, notify=_notify)
    except OperationalError as e:
        detail = " ".join(str(e.orig).split())
        raise RuntimeFailure(f"cannot open the knowledge base {_safe(url)}: {detail}") from None
    except BaseException:
        engine.dispose()
        raise
    if upgrade:
        _engines[url] = engine
    return engine


def _bind_as_is() -> None:
    """Have Python's ``sqlite3`` bind None and bytes as they are, without
    looking for an adapter first.  For a parameter of any type but int,
    float, str and bytearray it looks one up, and for None and bytes finds
    none only after raising and clearing two AttributeErrors (the protocol's
    ``__adapt__``, the value's ``__conform__``), for every value: a run has
    half a dozen empty columns, so an import of 100,000 runs raised a million
    of them.  An adapter registered for the type is one dict lookup and a C
    call that gives the value back (``{}.get(None)`` is None; ``bytes(b)``
    is ``b``).  Process-wide, and what is bound is the same."""
    import sqlite3

    sqlite3.register_adapter(type(None), _NONE)
    sqlite3.register_adapter(bytes, bytes)


_NONE = {}.get  # None for None, in C


def dispose_engines() -> None:
    """Close every connection this process opened: SQLite moves its write-ahead
    log into the database file now, while the process can still say so."""
    while _engines:
        _engines.popitem()[1].dispose()


POSTGRES_HINT = ("for PostgreSQL, install `triage[postgres]` (pip install 'triage[postgres]') "
                 "and use postgresql+psycopg://USER@HOST/DB")


def _unusable_url(url: str, e: Exception) -> str:
    """What to do about a --db URL SQLAlchemy cannot open: the PostgreSQL case in plain words."""
    scheme = url.split("://")[0]
    if scheme.startswith("postgres"):
        return f"--db {url}: {POSTGRES_HINT}"
    if isinstance(e, ModuleNotFoundError):
        return f"--db: the driver for {scheme} is not installed ({e.name})"
    return f"--db: not a database URL SQLAlchemy can use: {url} ({e.__class__.__name__})"


def discard_new(path: Path) -> None:
    """Remove the SQLite file a failed command created (and its WAL files), so
    that a command that exits non-zero leaves nothing behind.  Kept when it
    holds an investigation: another process wrote to it meanwhile."""
    import sqlite3

    url = f"sqlite:///{path}"
    engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()
    if not path.exists():
        return
    try:
        con = sqlite3.connect(path, timeout=BUSY_TIMEOUT)
        try:
            used = con.execute("SELECT 1 FROM investigation LIMIT 1").fetchone() is not None
        finally:
            con.close()
    except sqlite3.Error:
        used = False  # no tables yet: nothing in it
    if not used:
        for extra in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{extra}").unlink(missing_ok=True)


def _notify(message: str) -> None:
    import sys

    sys.stderr.write(message + "\n")


def _safe(url: str) -> str:
    """The URL without its password, for messages (a SQLite URL has none: as it is)."""
    from sqlalchemy.engine import make_url

    if url.startswith("sqlite:"):
        return url
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<database>"


_pending_rules: dict[str, Any] = {}


def sync_on_open(url: str, ruleset: Any) -> None:
    """Sync ``ruleset`` in the next :func:`session` of ``url``: in the
    command's own transaction, so that a command that fails writes nothing."""
    _pending_rules[url] = ruleset


_committed = [0]  # sessions committed by this process, so far


def commits() -> int:
    """How many sessions of :func:`session` this process committed so far."""
    return _committed[0]


@contextmanager
def session(url: str) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error.

    Rule files handed to :func:`sync_on_open` are synced first, in the same
    transaction.
    """
    with Session(get_engine(url), expire_on_commit=False) as s:
        try:
            ruleset = _pending_rules.get(url)
            if ruleset is not None:
                from triage.kb.sync import sync_rules  # here: sync imports this module

                sync_rules(s, ruleset)
            yield s
            s.commit()
            _committed[0] += 1
            if ruleset is not None and _pending_rules.get(url) is ruleset:
                del _pending_rules[url]
        except BaseException:
            s.rollback()
            raise


_read_engines: dict[str, Engine] = {}


@contextmanager
def read_session(url: str) -> Iterator[Session]:
    """A session that only reads and never waits for, nor takes, the write
    lock (:func:`read_engine`): for pages that show the knowledge base while
    writers work (the dashboard), so that a slow page holds up no writer."""
    engine = _read_engines.get(url)
    if engine is None:
        engine = _read_engines[url] = read_engine(url)
    with Session(engine, expire_on_commit=False) as s:
        try:
            yield s
        finally:
            s.rollback()


def read_engine(url: str) -> Engine:
    """An engine whose connections only read, each transaction from one
    snapshot, and never wait for a writer: on SQLite, query-only connections
    whose transactions begin deferred (in WAL mode a reader does not wait for
    the writer's lock); on PostgreSQL, read-only repeatable-read transactions.
    Not pooled.  For a process that reads beside this one's writer
    (:mod:`triage.kb.parallel`); the knowledge base was prepared already."""
    from sqlalchemy.pool import NullPool

    if url.startswith("sqlite"):
        _bind_as_is()
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT}, poolclass=NullPool)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _: Any) -> None:
            dbapi_conn.isolation_level = None
            dbapi_conn.execute("PRAGMA query_only=ON")  # a write fails at once instead of waiting for the lock

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            conn.connection.dbapi_connection.execute("BEGIN")

        return engine
    engine = create_engine(url, poolclass=NullPool, isolation_level="REPEATABLE READ")
    return engine.execution_options(postgresql_readonly=True)


def lock_investigation(s: Session, iid: str) -> None:
    """Hold the investigation for this transaction: a row lock on PostgreSQL
    (``SELECT ... FOR UPDATE``); on SQLite the transaction holds the write
    lock already (``BEGIN IMMEDIATE``).  Writers of one investigation take
    it in turn."""
    t = tables.Investigation
    s.execute(select(t.c.id).where(t.c.id == iid).with_for_update())


try:  # several times faster than json.dumps, which matters to bulk imports
    from msgspec.json import encode as _msgspec_encode
except ImportError:  # pragma: no cover - a dependency
    _msgspec_encode = None


def conflict_insert(dialect: str) -> Any:
    """SQLAlchemy's ``insert`` that says what to do on a conflict (``ON CONFLICT ... DO``), for
    the databases that have one (SQLite's and PostgreSQL's); None for another."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        return None
    return insert


def json_text(value: Any) -> str:
    """The JSON text the knowledge base stores for a JSON column (compact,
    UTF-8); the engine's serializer, so that the ORM and
    :class:`~triage.kb.runs.RunWriter` write the same text."""
    if _msgspec_encode is not None:
        return _msgspec_encode(value).decode("utf-8")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))  # pragma: no cover


def _utc(t: datetime) -> datetime:
    """Stored times come back naive from SQLite: they are UTC."""
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)
