"""Engine, sessions and every query the commands use.

The default database is ``kb.sqlite`` in the current directory; ``--db`` or
``TRIAGE_DB`` take any SQLAlchemy URL (``postgresql+psycopg://…`` for a team).
Writes happen in one transaction per command: an error leaves the knowledge
base as it was.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Sequence

from sqlalchemy import event, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlmodel import Session, create_engine

from triage.errors import InputError, NoInvestigation, RuntimeFailure
from triage.kb import models as m

DEFAULT_DB = "kb.sqlite"


def now() -> datetime:
    return datetime.now(timezone.utc)


def resolve_url(db: Optional[str]) -> str:
    """A SQLAlchemy URL from ``--db``/``TRIAGE_DB``; a bare path means SQLite."""
    value = db or os.environ.get("TRIAGE_DB") or DEFAULT_DB
    if "://" in value:
        if value.startswith("sqlite:///") and not value.startswith("sqlite:////") and ":memory:" not in value:
            value = "sqlite:///" + str(Path(value[len("sqlite:///"):]).resolve())
        return value
    return f"sqlite:///{Path(value).resolve()}"


def missing_file(url: str) -> Optional[Path]:
    """The SQLite file a URL names when it does not exist yet (None: it exists, or not SQLite)."""
    if not url.startswith("sqlite:///") or ":memory:" in url:
        return None
    path = Path(url[len("sqlite:///"):])
    return None if path.exists() else path


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
    try:
        if url.startswith("sqlite"):
            engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT}, json_serializer=json_text)

            @event.listens_for(engine, "connect")
            def _pragmas(dbapi_conn: Any, _: Any) -> None:
                dbapi_conn.isolation_level = None  # transactions are begun below, IMMEDIATE
                cur = dbapi_conn.cursor()
                cur.execute("PRAGMA foreign_keys=ON")
                _retry_busy(lambda: cur.execute("PRAGMA journal_mode=WAL"))
                cur.execute("PRAGMA synchronous=NORMAL")
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
    except (ArgumentError, NoSuchModuleError) as e:
        raise InputError(f"--db: not a database URL SQLAlchemy can use: {url} ({e.__class__.__name__})") from None
    except ModuleNotFoundError as e:
        raise InputError(f"--db: the driver for {url.split('://')[0]} is not installed ({e.name}); "
                         "for PostgreSQL: pip install 'triage[postgres]'") from None
    from triage.kb import migrate

    try:
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


def _notify(message: str) -> None:
    import sys

    sys.stderr.write(message + "\n")


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<database>"


_pending_rules: dict[str, Any] = {}


def sync_on_open(url: str, ruleset: Any) -> None:
    """Sync ``ruleset`` in the next :func:`session` of ``url``: in the
    command's own transaction, so that a command that fails writes nothing."""
    _pending_rules[url] = ruleset


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
                sync_rules(s, ruleset)
            yield s
            s.commit()
            if ruleset is not None and _pending_rules.get(url) is ruleset:
                del _pending_rules[url]
        except BaseException:
            s.rollback()
            raise


def lock_investigation(s: Session, iid: str) -> None:
    """Hold the investigation for this transaction: a row lock on PostgreSQL
    (``SELECT ... FOR UPDATE``); on SQLite the transaction holds the write
    lock already (``BEGIN IMMEDIATE``).  Writers of one investigation take
    it in turn."""
    s.execute(select(m.Investigation.id).where(m.Investigation.id == iid).with_for_update())


# --------------------------------------------------------------------------
# Rule files -> definitions


def sync_rules(s: Session, ruleset: Any, *, force: bool = False) -> list[str]:
    """Upsert the definitions of every rule file whose content changed.

    Definitions of an investigation are replaced wholesale by its file (the
    file is the source of truth); runs and evidence history are never touched.
    Returns the paths that were (re)loaded.
    """
    loaded: list[str] = []
    locked = False
    keys = {str(Path(f.path).resolve()): f for f in ruleset.files}
    # One query for every file's last load: a file's check costs no statement of its own.
    known = {r.path: r for r in s.execute(select(m.RuleSource).where(m.RuleSource.path.in_(list(keys)))).scalars()} \
        if keys else {}
    for key, f in keys.items():
        src = known.get(key)
        if src is not None and src.sha256 == f.sha256 and not force:
            continue
        if not locked and s.get_bind().dialect.name == "postgresql":
            # one loader at a time (SQLite's transaction holds the write lock already)
            from sqlalchemy import text

            from triage.kb.migrate import PG_LOCK_KEY

            s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_LOCK_KEY + 1})
            locked = True
            s.expire_all()
            src = s.get(m.RuleSource, key)
            if src is not None and src.sha256 == f.sha256 and not force:
                continue
        _upsert_file(s, f)
        if src is None:
            s.add(m.RuleSource(path=key, sha256=f.sha256, loaded_at=now()))
        else:
            src.sha256, src.loaded_at = f.sha256, now()
        loaded.append(f.path)
    s.flush()
    return loaded


def _dump(model: Any) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


def _upsert_file(s: Session, f: Any) -> None:
    """Load one rule file: what it declares is upserted, and what it declared
    before and no longer does is retired (signatures keep their row, with
    ``retired_at``; the investigation's definitions are replaced)."""
    spec = f.spec
    declared = {sig.id for sig in spec.signatures}
    for sig in spec.signatures:
        row = s.get(m.Signature, sig.id)
        if row is None:
            s.add(m.Signature(id=sig.id, kind=sig.cls, source=f.path, spec=_dump(sig)))
        else:
            row.kind, row.source, row.spec, row.retired_at = sig.cls, f.path, _dump(sig), None
    q = select(m.Signature).where(m.Signature.source == f.path, m.Signature.retired_at.is_(None))
    for row in s.execute(q).scalars():
        if row.id not in declared:
            row.retired_at = now()
    inv = spec.investigation
    if inv is None:
        _meta_put(s, f"extractors:{f.path}", spec.extractors)
        return
    clash = s.execute(select(m.Investigation).where(m.Investigation.repo == inv.repo, m.Investigation.pr == inv.pr)).scalars().first()
    if clash is not None and clash.id != inv.id:
        raise InputError(
            f"{f.path}: {inv.repo}#{inv.pr} already belongs to investigation {clash.id!r} in the knowledge base"
        )
    row = s.get(m.Investigation, inv.id)
    inv_spec = _dump(inv) | {"extractors": [_dump(x) for x in spec.extractors], "exclusive": spec.exclusive}
    fields = dict(repo=inv.repo, pr=inv.pr, title=inv.title, metric=inv.metric, direction=inv.direction,
                  gate=inv.gate, source=f.path, spec=inv_spec)
    if row is None:
        s.add(m.Investigation(id=inv.id, **fields))
    else:
        for k, v in fields.items():
            setattr(row, k, v)
    s.flush()
    iid = inv.id
    old_status = {h.id: h.status for h in s.execute(select(m.Hypothesis).where(m.Hypothesis.investigation_id == iid)).scalars()}
    for table in (m.Hypothesis, m.Recipe, m.Rule, m.Bisect):
        for r in s.execute(select(table).where(table.investigation_id == iid)).scalars().all():
            s.delete(r)
    for r in s.execute(select(m.ManualEvidence).where(m.ManualEvidence.investigation_id == iid, m.ManualEvidence.source == "rules")).scalars().all():
        s.delete(r)
    s.flush()
    for i, h in enumerate(spec.hypotheses):
        s.add(m.Hypothesis(investigation_id=iid, id=h.id, title=h.title, parent=h.parent, position=i,
                           status=old_status.get(h.id, "open"), spec=_dump(h)))
    for i, r in enumerate(spec.recipes):
        s.add(m.Recipe(investigation_id=iid, id=r.id, position=i, spec=_dump(r)))
    for i, r in enumerate(spec.rules):
        s.add(m.Rule(investigation_id=iid, id=r.id, hypothesis_id=r.hypothesis, position=i, spec=_dump(r)))
    for i, b in enumerate(spec.bisects):
        s.add(m.Bisect(investigation_id=iid, id=b.id, position=i, spec=_dump(b)))
    for ev in spec.evidence:
        s.add(m.ManualEvidence(investigation_id=iid, hypothesis_id=ev.hypothesis, verdict=ev.verdict, reason=ev.because,
                               author=ev.author, runs=list(ev.runs), source="rules", created_at=now()))


def _meta_put(s: Session, key: str, items: Sequence[Any]) -> None:
    import json

    value = json.dumps([_dump(x) for x in items], sort_keys=True)
    row = s.get(m.Meta, key)
    if not items:
        if row is not None:
            s.delete(row)
    elif row is None:
        s.add(m.Meta(key=key, value=value))
    else:
        row.value = value


# --------------------------------------------------------------------------
# Investigations


def find_investigation(s: Session, pr: Optional[int] = None, repo: Optional[str] = None,
                       ident: Optional[str] = None) -> m.Investigation:
    """The investigation a command names by ``--pr`` (and ``--repo``) or id."""
    if ident is not None:
        row = s.get(m.Investigation, ident)
        if row is None:
            raise InputError(f"no investigation {ident!r} in the knowledge base")
        return row
    q = select(m.Investigation)
    if pr is not None:
        q = q.where(m.Investigation.pr == pr)
    if repo is not None:
        q = q.where(m.Investigation.repo == repo)
    rows = s.execute(q.order_by(m.Investigation.id)).scalars().all()
    if not rows:
        what = " ".join(x for x in (repo and f"repo {repo}", pr is not None and f"PR {pr}") if x)
        known = s.execute(select(m.Investigation).order_by(m.Investigation.id)).scalars().all()
        hint = (" Known: " + ", ".join(f"{r.repo}#{r.pr}" for r in known) + ".") if known else \
            " Load a rule file that defines it (rules/*.yaml, or --rules PATH)."
        raise NoInvestigation(f"no investigation for {what or 'that selection'}.{hint}")
    if len(rows) > 1:
        raise InputError(f"PR {pr} names several investigations ({', '.join(r.repo for r in rows)}): add --repo")
    return rows[0]


def list_investigations(s: Session) -> list[m.Investigation]:
    return list(s.execute(select(m.Investigation).order_by(m.Investigation.repo, m.Investigation.pr)).scalars())


def load_bundle(s: Session, inv: m.Investigation) -> Any:
    """Rebuild the engine's input for one investigation from the database."""
    from triage.rules import schema
    from triage.rules.engine import Investigation as Bundle
    from triage.rules.engine import SignatureInfo

    iid = inv.id

    def rows(table: Any) -> list[Any]:
        return list(s.execute(select(table).where(table.investigation_id == iid).order_by(table.position)).scalars())

    spec_data = {k: v for k, v in inv.spec.items() if k not in ("extractors", "exclusive")}
    sigs = {}
    for row in s.execute(select(m.Signature)).scalars():
        sp = row.spec
        sigs[row.id] = SignatureInfo(row.id, row.kind, sp.get("meaning", ""), sp.get("remedy", ""))
    marks = list(s.execute(select(m.BisectMark).where(m.BisectMark.investigation_id == iid).order_by(m.BisectMark.pk)).scalars())
    manual = s.execute(select(m.ManualEvidence).where(m.ManualEvidence.investigation_id == iid).order_by(m.ManualEvidence.pk)).scalars()
    return Bundle(
        spec=schema.InvestigationSpec.model_validate(spec_data),
        hypotheses=[schema.HypothesisSpec.model_validate(r.spec) for r in rows(m.Hypothesis)],
        recipes=[schema.RecipeSpec.model_validate(r.spec) for r in rows(m.Recipe)],
        rules=[schema.RuleSpec.model_validate(r.spec) for r in rows(m.Rule)],
        evidence=[schema.ManualEvidenceSpec(hypothesis=e.hypothesis_id, verdict=e.verdict, because=e.reason,
                                            author=e.author, runs=e.runs) for e in manual],
        bisects=[_with_marks(schema, r, marks) for r in rows(m.Bisect)],
        runs=run_records(s, iid),
        signatures=sigs,
        exclusive=inv.spec.get("exclusive", []),
    )


def known_names(s: Session, inv: m.Investigation) -> tuple[set[str], set[str]]:
    """(metrics, configs) the investigation's definitions name (no runs read)."""
    from triage.rules.names import known_names as walk

    defs = [r.spec for t in (m.Recipe, m.Rule, m.Bisect)
            for r in s.execute(select(t).where(t.investigation_id == inv.id)).scalars()]
    spec = {k: v for k, v in inv.spec.items() if k != "extractors"}
    return walk(spec, defs, extractors_for(s, inv))


def has_config(s: Session, iid: str, config: str) -> bool:
    q = select(m.Run.pk).where(m.Run.investigation_id == iid, m.Run.config == config).limit(1)
    return s.execute(q).first() is not None


def _with_marks(schema: Any, row: m.Bisect, marks: Sequence[m.BisectMark]) -> Any:
    """A bisect's definition with the marks set from the command line after its own."""
    extra = [{"point": x.point, "verdict": x.verdict, "because": x.reason} | ({"author": x.author} if x.author else {})
             for x in marks if x.bisect_id == row.id]
    return schema.BisectSpec.model_validate(row.spec | {"marks": list(row.spec.get("marks", [])) + extra})


def add_bisect_mark(s: Session, iid: str, bisect: str, point: str, verdict: str, reason: str,
                    author: Optional[str]) -> m.BisectMark:
    """A point judged by hand (kept when rule files reload; a disagreeing run makes the point flaky)."""
    import difflib

    from triage.rules import schema

    rows = {r.id: r for r in s.execute(select(m.Bisect).where(m.Bisect.investigation_id == iid)).scalars()}
    if bisect not in rows:
        close = difflib.get_close_matches(bisect, sorted(rows), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(sorted(rows)) or 'none'}"
        raise InputError(f"bisect {bisect!r}: no such bisect{hint}")
    labels = schema.BisectSpec.model_validate(rows[bisect].spec).point_labels()
    if point not in labels:
        close = difflib.get_close_matches(point, labels, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(f"point {point!r}: not a point of bisect {bisect!r}{hint}")
    row = m.BisectMark(investigation_id=iid, bisect_id=bisect, point=point, verdict=verdict, reason=reason,
                       author=author, created_at=now())
    s.add(row)
    s.flush()
    return row


def run_records(s: Session, iid: str) -> list[Any]:
    """The engine's view of an investigation's runs, read with Core: no ORM
    objects for what may be a hundred thousand rows."""
    from triage.rules.engine import RunRec

    from sqlalchemy import Text, cast

    t = m.Run.__table__
    # The JSON columns as their text, decoded here in C: no per-value processor.
    cols = (t.c.run_id, t.c.config, t.c.status, cast(t.c.metrics, Text), cast(t.c.provenance, Text),
            t.c.url, t.c.time, t.c.note, t.c.excluded, t.c.excluded_reason, t.c.signature_id)
    q = select(*cols).where(t.c.investigation_id == iid).order_by(t.c.pk)
    decode = _json_decode()
    return [
        RunRec(run_id=run_id, config=config, status=status,
               metrics={k: (float(v["value"]), v.get("n")) for k, v in decode(metrics).items()},
               provenance={k: str(v) for k, v in decode(provenance).items()}, url=url,
               time=when.isoformat() if when else None, note=note, excluded=bool(excluded),
               excluded_reason=excluded_reason, signature=signature)
        for run_id, config, status, metrics, provenance, url, when, note, excluded, excluded_reason, signature
        in s.execute(q)
    ]


def _json_decode() -> Any:
    """A JSON text decoder: msgspec's, else the standard library's."""
    try:
        from msgspec.json import decode
    except ImportError:  # pragma: no cover - a dependency
        return json.loads
    return decode


def extractors_for(s: Session, inv: m.Investigation) -> list[dict]:
    """Extractor definitions: the investigation's own, then shared ones."""
    import json

    out = list(inv.spec.get("extractors", []))
    for row in s.execute(select(m.Meta).where(m.Meta.key.startswith("extractors:")).order_by(m.Meta.key)).scalars():
        out += json.loads(row.value)
    return out


def signature_specs(s: Session) -> list[dict]:
    """The signatures logs are matched against: those no rule file retired."""
    q = select(m.Signature).where(m.Signature.retired_at.is_(None)).order_by(m.Signature.id)
    return [row.spec for row in s.execute(q).scalars()]


# --------------------------------------------------------------------------
# Runs


def runs_of(s: Session, iid: str) -> list[m.Run]:
    q = select(m.Run).where(m.Run.investigation_id == iid).order_by(m.Run.pk)
    return list(s.execute(q).scalars())


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

    The investigation is held first (:func:`lock_investigation`), so that a
    merge reads what the last writer wrote; the write itself is one
    ``INSERT ... ON CONFLICT DO UPDATE`` statement, so that two writers of a
    new run never both try to create it.
    """
    lock_investigation(s, iid)
    t = m.Run.__table__
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
        obj = s.execute(select(m.Run).where(t.c.investigation_id == iid, t.c.run_id == data.run_id,
                                            t.c.config == data.config)).scalars().first()
        if obj is None:
            obj = m.Run(**values)
            s.add(obj)
        else:
            for k, v in values.items():
                if k != "created_at":
                    setattr(obj, k, v)
        s.flush()
        return obj, created
    s.execute(stmt, values)
    obj = s.execute(select(m.Run).where(t.c.investigation_id == iid, t.c.run_id == data.run_id,
                                        t.c.config == data.config).execution_options(populate_existing=True)).scalars().one()
    return obj, created


def _upsert_statement(dialect: Any, *, overwrite: bool) -> Any:
    """``INSERT ... ON CONFLICT (identity) DO UPDATE`` of a whole run (SQLite
    and PostgreSQL; None for another database).  An update keeps the run's
    ``created_at``; unless ``overwrite``, it only replaces a run whose
    ``updated_at`` is not newer than the record's."""
    if dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    elif dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        return None
    from sqlalchemy import bindparam

    table = m.Run.__table__
    names = RUN_COLUMNS + ("created_at", "updated_at")
    ins = insert(table).values({c: bindparam(c) for c in names})
    return ins.on_conflict_do_update(
        index_elements=[table.c[c] for c in _IDENTITY],
        set_={c: ins.excluded[c] for c in names if c not in _IDENTITY and c != "created_at"},
        where=None if overwrite else table.c.updated_at <= ins.excluded.updated_at,
    )


#: The columns of a whole run record, in the order :class:`RunWriter` takes them.
RUN_COLUMNS = ("investigation_id", "run_id", "config", "status", "metrics", "provenance", "url", "time", "note",
               "log_excerpt", "signature_id", "signature_line", "excluded", "excluded_reason")
_IDENTITY = ("investigation_id", "run_id", "config")


try:  # several times faster than json.dumps, which matters to bulk imports
    from msgspec.json import encode as _msgspec_encode
except ImportError:  # pragma: no cover - a dependency
    _msgspec_encode = None


def json_text(value: Any) -> str:
    """The JSON text the knowledge base stores for a JSON column (compact,
    UTF-8); the engine's serializer, so that the ORM and :class:`RunWriter`
    write the same text."""
    if _msgspec_encode is not None:
        return _msgspec_encode(value).decode("utf-8")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))  # pragma: no cover


_PROBE = datetime(2026, 6, 26, 3, 14, 15, 926535, tzinfo=timezone.utc)


def _same(value: Any) -> Any:
    return value


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
        stamp = now()
        self._stamp = stamp
        if not self.bulk:
            return
        table = m.Run.__table__
        names = RUN_COLUMNS + ("created_at", "updated_at")
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

    def _load_known(self, iid: str) -> None:
        lock_investigation(self.s, iid)  # PostgreSQL: what is read now stays true until the commit
        q = select(m.Run.run_id, m.Run.config, m.Run.updated_at).where(m.Run.investigation_id == iid)
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
            t = m.Run.__table__
            for r in latest.values():
                upsert_run(self.s, r[0], RunInput(*r[1:12], excluded=r[12], excluded_reason=r[13]), replace=True)
                if r[14] is not None:
                    self.s.execute(t.update().where(t.c.investigation_id == r[0], t.c.run_id == r[1],
                                                    t.c.config == r[2]).values(updated_at=r[14]))
            return new, older
        stamp = self._stamp_value
        time_ = self._time or _same
        bool_ = self._bool or _same
        enc = _msgspec_encode
        if enc is None:  # pragma: no cover - msgspec is a dependency
            values = [(r[0], r[1], r[2], r[3], json_text(r[4]), json_text(r[5]), r[6], r[7] and time_(r[7]), r[8],
                       r[9], r[10], r[11], bool_(r[12]), r[13], stamp, r[14] and time_(r[14]) or stamp)
                      for r in latest.values()]
        else:  # the same, with the encoder called directly: this is the import's inner loop
            values = [(r[0], r[1], r[2], r[3], enc(r[4]).decode(), enc(r[5]).decode(), r[6], r[7] and time_(r[7]),
                       r[8], r[9], r[10], r[11], bool_(r[12]), r[13], stamp, r[14] and time_(r[14]) or stamp)
                      for r in latest.values()]
        if self._pick is not None:
            values = [tuple(v[i] for i in self._pick) for v in values]
        elif self._order is None:
            names = RUN_COLUMNS + ("created_at", "updated_at")
            values = [dict(zip(names, v)) for v in values]  # type: ignore[misc]
        if values:
            self.conn.exec_driver_sql(self._sql, values)
        return new, older

    def done(self) -> None:
        """After the last batch: objects the session holds are stale now."""
        self.s.expire_all()


def find_runs(s: Session, iid: str, run_id: str, config: Optional[str] = None) -> list[m.Run]:
    q = select(m.Run).where(m.Run.investigation_id == iid, m.Run.run_id == run_id)
    if config is not None:
        q = q.where(m.Run.config == config)
    return list(s.execute(q.order_by(m.Run.config)).scalars())


def delete_runs(s: Session, runs: Sequence[m.Run], because: str) -> None:
    """Remove runs, keeping each whole record and the reason in ``run_deletion``."""
    from triage.ingest.records import run_to_record

    at = now()
    for r in runs:
        s.add(m.RunDeletion(investigation_id=r.investigation_id, run_id=r.run_id, config=r.config,
                            because=because, record=run_to_record(r), at=at))
        s.delete(r)
    s.flush()


def run_deletions(s: Session, iid: str) -> list[m.RunDeletion]:
    q = select(m.RunDeletion).where(m.RunDeletion.investigation_id == iid).order_by(m.RunDeletion.pk)
    return list(s.execute(q).scalars())


# --------------------------------------------------------------------------
# Evaluations


#: The runs a stored summary of invalid runs keeps.
STORED_RUNS = 20


def store_evaluation(s: Session, iid: str, ev: Any) -> dict[str, tuple[Optional[str], str]]:
    """Store derived evidence and statuses; return the statuses that changed.

    Evidence no longer derived is retired (kept, with ``retired_at``); new
    evidence is added; unchanged evidence keeps its creation time.
    """
    from sqlalchemy import insert, update

    stamp = now()
    t = m.Evidence.__table__
    # Core statements throughout: an evaluation of a large investigation
    # derives tens of thousands of items, and most are unchanged.
    active = {key: (pk, flags) for pk, key, flags in s.execute(
        select(t.c.pk, t.c.key, t.c.flags).where(t.c.investigation_id == iid, t.c.retired_at.is_(None)))}
    new_keys = set()
    fresh = []
    touched = False
    for item in ev.evidence:
        new_keys.add(item.key)
        if item.key in active:
            pk, flags = active[item.key]
            if list(flags) != list(item.flags):
                s.execute(update(t).where(t.c.pk == pk).values(flags=list(item.flags)))
                touched = True
            continue
        # A summary of invalid runs keeps the runs it names: the count is in its reason.
        runs = list(item.runs[:STORED_RUNS]) if "invalid-run" in item.flags else list(item.runs)
        fresh.append(dict(investigation_id=iid, hypothesis_id=item.hypothesis, rule_id=item.rule, verdict=item.verdict,
                          reason=item.reason, runs=runs, flags=list(item.flags), key=item.key,
                          created_at=stamp, retired_at=None))
    if fresh:
        s.execute(insert(t), fresh)
    gone = [pk for key, (pk, _) in active.items() if key not in new_keys]
    for i in range(0, len(gone), 500):
        s.execute(update(t).where(t.c.pk.in_(gone[i:i + 500])).values(retired_at=stamp))
    changed: dict[str, tuple[Optional[str], str]] = {}
    hyps = {h.id: h for h in s.execute(select(m.Hypothesis).where(m.Hypothesis.investigation_id == iid)).scalars()}
    last = {}
    for c in s.execute(select(m.StatusChange).where(m.StatusChange.investigation_id == iid).order_by(m.StatusChange.pk)).scalars():
        last[c.hypothesis_id] = c.status
    for hid, status in ev.statuses.items():
        previous = last.get(hid)
        if previous != status:
            s.add(m.StatusChange(investigation_id=iid, hypothesis_id=hid, previous=previous, status=status, at=stamp))
            changed[hid] = (previous, status)
        if hid in hyps and hyps[hid].status != status:
            hyps[hid].status = status
            touched = True
    if touched or fresh or gone or changed:
        # What other investigations' reports read of this one ("Seen elsewhere") changed.
        import uuid

        row = s.get(m.Meta, EVIDENCE_VERSION)
        if row is None:
            s.add(m.Meta(key=EVIDENCE_VERSION, value=uuid.uuid4().hex))
        else:
            row.value = uuid.uuid4().hex
    s.flush()
    return changed


#: A Meta key that changes with every evaluation that changed stored evidence or statuses.
EVIDENCE_VERSION = "evidence-version"


def status_history(s: Session, iid: str) -> list[m.StatusChange]:
    q = select(m.StatusChange).where(m.StatusChange.investigation_id == iid).order_by(m.StatusChange.pk)
    return list(s.execute(q).scalars())


def evidence_history(s: Session, iid: str) -> list[m.Evidence]:
    q = select(m.Evidence).where(m.Evidence.investigation_id == iid).order_by(m.Evidence.pk)
    return list(s.execute(q).scalars())


def record_post(s: Session, iid: str, url: Optional[str], action: str, since: Optional[datetime] = None) -> m.Post:
    """Note that the report was written to GitHub (``created`` or ``updated``)."""
    row = m.Post(investigation_id=iid, url=url, action=action, at=now(), since=since)
    s.add(row)
    s.flush()
    return row


def iter_all_runs(s: Session, iid: str) -> Iterable[m.Run]:
    return runs_of(s, iid)


def add_manual_evidence(s: Session, iid: str, hypothesis: str, verdict: str, reason: str,
                        author: Optional[str], runs: Sequence[str]) -> m.ManualEvidence:
    """Manual evidence from the command line (kept when rule files reload)."""
    known = {h.id for h in s.execute(select(m.Hypothesis).where(m.Hypothesis.investigation_id == iid)).scalars()}
    if hypothesis not in known:
        import difflib

        close = difflib.get_close_matches(hypothesis, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(f"--hypothesis {hypothesis!r}: no such hypothesis{hint}")
    row = m.ManualEvidence(investigation_id=iid, hypothesis_id=hypothesis, verdict=verdict, reason=reason,
                           author=author, runs=list(runs), source="cli", created_at=now())
    s.add(row)
    s.flush()
    return row


# --------------------------------------------------------------------------
# What changed since a time; what other investigations decided


def _utc(t: datetime) -> datetime:
    """Stored times come back naive from SQLite: they are UTC."""
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def last_post(s: Session, iid: str) -> Optional[m.Post]:
    """The investigation's newest ``Post``, or None."""
    q = select(m.Post).where(m.Post.investigation_id == iid).order_by(m.Post.at.desc(), m.Post.pk.desc())
    return s.execute(q).scalars().first()


def last_post_time(s: Session, iid: str) -> Optional[datetime]:
    """When the investigation's report was last posted (the newest ``Post``), or None."""
    row = last_post(s, iid)
    return _utc(row.at) if row is not None else None


def post_since_view(s: Session, inv: m.Investigation) -> Optional[dict]:
    """The comment's "new since" line: what changed since the comment was last
    written; when nothing has, the same line the comment already carries, so
    that posting again changes nothing (and edits nothing)."""
    last = last_post(s, inv.id)
    if last is None:
        return None
    label = "the last update of this comment"
    view = since_view(s, inv, last.at, label)
    if view["runs"] or view["updated"] or view["changes"]:
        return view
    return since_view(s, inv, last.since, label) if last.since is not None else None


def since_view(s: Session, inv: m.Investigation, at: datetime, label: str) -> dict:
    """Runs recorded or updated after ``at``, and the statuses that changed since.

    A hypothesis that changed several times shows its status before ``at``
    and its status now; one that changed and changed back is left out.
    """
    at = _utc(at)
    prefix = inv.spec.get("config_prefix") or ""

    def name(r: m.Run) -> str:
        short = r.config[len(prefix):] if prefix and r.config.startswith(prefix) and r.config != prefix else r.config
        return f"{r.run_id} ({short})"

    runs = runs_of(s, inv.id)
    new = [name(r) for r in runs if _utc(r.created_at) > at]
    updated = [name(r) for r in runs if _utc(r.created_at) <= at < _utc(r.updated_at)]
    first: dict[str, Optional[str]] = {}
    last: dict[str, str] = {}
    for c in status_history(s, inv.id):
        if _utc(c.at) > at:
            first.setdefault(c.hypothesis_id, c.previous)
            last[c.hypothesis_id] = c.status
    changes = [{"hypothesis": h, "previous": first[h], "status": last[h]} for h in last if first[h] != last[h]]
    return {"label": label, "at": at.isoformat(), "runs": new, "updated": updated,
            "changes": changes}


# --------------------------------------------------------------------------
# Autopilot dispatches


def dispatches(s: Session, iid: str) -> list[m.Dispatch]:
    q = select(m.Dispatch).where(m.Dispatch.investigation_id == iid).order_by(m.Dispatch.pk)
    return list(s.execute(q).scalars())


def record_dispatch(s: Session, row: m.Dispatch) -> m.Dispatch:
    s.add(row)
    s.flush()
    return row


def close_dispatches(s: Session, iid: str, configs_of: Any) -> list[m.Dispatch]:
    """Mark done the dispatches whose run is recorded: its run id, or (when
    GitHub did not say it) a run of one of ``configs_of(dispatch)`` recorded
    after it was sent.  Returns the ones still in flight."""
    t = m.Run.__table__
    rows = list(s.execute(select(t.c.run_id, t.c.config, t.c.created_at).where(t.c.investigation_id == iid)))
    open_ = []
    for d in dispatches(s, iid):
        if d.done_at is not None:
            continue
        configs = configs_of(d)
        hit = next((r for r in rows if (d.run_id is not None and r.run_id == d.run_id) or (
            d.run_id is None and r.config in configs and _utc(r.created_at) > _utc(d.at))), None)
        if hit is None:
            open_.append(d)
        else:
            d.done_at, d.run_id = now(), hit.run_id
    s.flush()
    return open_
