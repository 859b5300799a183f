"""Investigations: finding one, and reading it back as the rule engine's input."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from operator import attrgetter
from typing import Annotated, Any, Optional, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from triage.errors import InputError, NoInvestigation
from triage.kb import tables
from triage.kb.tables import models as m
from triage.kb.db import now
from triage.numbers import MAGNITUDE, SMALLEST


def find_investigation(s: Session, pr: Optional[int] = None, repo: Optional[str] = None,
                       ident: Optional[str] = None) -> Any:
    """The investigation a command names by ``--pr`` (and ``--repo``) or id: its row,
    each column an attribute as on :class:`~triage.kb.models.Investigation` (read
    as columns: a command that evaluates needs no mapped object, so the tables'
    mappings are never set up)."""
    t = tables.Investigation
    if ident is not None:
        row = s.execute(select(t).where(t.c.id == ident)).first()
        if row is None:
            raise InputError(f"no investigation {ident!r} in the knowledge base")
        return row
    q = select(t)
    if pr is not None:
        q = q.where(t.c.pr == pr)
    if repo is not None:
        q = q.where(t.c.repo == repo)
    rows = s.execute(q.order_by(t.c.id)).all()
    if not rows:
        what = " ".join(x for x in (repo and f"repo {repo}", pr is not None and f"PR {pr}") if x)
        known = s.execute(select(t.c.repo, t.c.pr).order_by(t.c.id)).all()
        hint = (" Known: " + ", ".join(f"{r.repo}#{r.pr}" for r in known) + ".") if known else \
            " Load a rule file that defines it (rules/*.yaml, or --rules PATH)."
        raise NoInvestigation(f"no investigation for {what or 'that selection'}.{hint}")
    if len(rows) > 1:
        raise InputError(f"PR {pr} names several investigations ({', '.join(r.repo for r in rows)}): add --repo")
    return rows[0]


def list_investigations(s: Session) -> list[m.Investigation]:
    return list(s.execute(select(m.Investigation).order_by(m.Investigation.repo, m.Investigation.pr)).scalars())


def load_bundle(s: Session, inv: m.Investigation, *, runs: bool = True) -> Any:
    """Rebuild the engine's input for one investigation from the database.

    ``runs`` False: no runs; the engine reads them a config at a time from the
    bundle's ``source`` (``triage.kb.runsource``).  The definitions are
    validated once for each stored text (:mod:`triage.rules.language.kept`)."""
    from triage.rules.engine.evaluate import Investigation as Bundle
    from triage.rules.engine.evaluate import SignatureInfo
    from triage.rules.language import kept, schema

    iid = inv.id
    sigs = {}
    for row in s.execute(select(tables.Signature)):
        sp = row.spec
        sigs[row.id] = SignatureInfo(row.id, row.kind, sp.get("meaning", ""), sp.get("remedy", ""),
                                     schema.outcome(sp["outcome"]) if sp.get("outcome") else None)
    stored = _stored_definitions(s, inv)
    spec, hypotheses, recipes, rules, evidence, bisects, plain = kept.validated(
        repr(stored), lambda: _validated(*stored))
    return Bundle(spec=spec, hypotheses=hypotheses, recipes=recipes, rules=rules, evidence=evidence,
                  bisects=bisects, runs=run_records(s, iid) if runs else [], signatures=sigs,
                  exclusive=inv.spec.get("exclusive", []), plain=plain)


def _stored_definitions(s: Session, inv: m.Investigation) -> tuple:
    """An investigation's definitions as stored: its spec (less what the engine does not
    read), the JSON texts of its hypotheses, recipes, rules and bisects in their order,
    the bisect marks and the manual evidence.  Rows of columns: no objects made, and no
    statement that needs the tables' mappings."""
    from sqlalchemy import Text, cast

    iid = inv.id

    def texts(t: Any) -> list[tuple[str, str]]:
        q = select(t.c.id, cast(t.c.spec, Text)).where(t.c.investigation_id == iid).order_by(t.c.position)
        return [tuple(row) for row in s.execute(q)]

    bm, me = tables.BisectMark, tables.ManualEvidence
    marks = [tuple(row) for row in s.execute(select(bm.c.bisect_id, bm.c.point, bm.c.verdict, bm.c.reason,
                                                     bm.c.author).where(bm.c.investigation_id == iid)
                                              .order_by(bm.c.pk))]
    manual = [tuple(row) for row in s.execute(select(me.c.hypothesis_id, me.c.verdict, me.c.reason, me.c.author,
                                                      cast(me.c.runs, Text)).where(me.c.investigation_id == iid)
                                               .order_by(me.c.pk))]
    spec = json.dumps({k: v for k, v in inv.spec.items() if k not in ("extractors", "exclusive")})
    return (spec, texts(tables.Hypothesis), texts(tables.Recipe), texts(tables.Rule), texts(tables.Bisect),
            marks, manual)


def _validated(spec: str, hypotheses: list, recipes: list, rules: list, bisects: list, marks: list,
               manual: list) -> tuple:
    """The schema's objects of :func:`_stored_definitions`: the spec, hypotheses, recipes,
    rules, manual evidence, and bisects with the marks set from the command line after
    their own; then the engine's plain data of them (:class:`~triage.rules.engine.records.Plain`)."""
    from triage.rules.engine.records import plain
    from triage.rules.language import schema

    def extra(bisect: str) -> list[dict]:
        return [{"point": point, "verdict": verdict, "because": reason} | ({"author": author} if author else {})
                for of, point, verdict, reason, author in marks if of == bisect]

    def bisect(ident: str, text: str) -> Any:
        data = json.loads(text)
        return schema.BisectSpec.model_validate(data | {"marks": list(data.get("marks", [])) + extra(ident)})

    made = (
        schema.InvestigationSpec.model_validate(json.loads(spec)),
        [schema.HypothesisSpec.model_validate(json.loads(text)) for _, text in hypotheses],
        [schema.RecipeSpec.model_validate(json.loads(text)) for _, text in recipes],
        [schema.RuleSpec.model_validate(json.loads(text)) for _, text in rules],
        [schema.ManualEvidenceSpec(hypothesis=h, verdict=v, because=r, author=a, runs=json.loads(runs))
         for h, v, r, a, runs in manual],
        [bisect(ident, text) for ident, text in bisects],
    )
    return (*made, plain(*made[:4], made[5]))  # what the engine dumps of them, once: kept with them


def known_names(s: Session, inv: m.Investigation) -> tuple[set[str], set[str]]:
    """(metrics, configs) the investigation's definitions name (no runs read)."""
    from triage.rules.language.names import known_names as walk

    parts = [select(t.c.spec).where(t.c.investigation_id == inv.id)
             for t in (tables.Recipe, tables.Rule, tables.Bisect)]
    defs = list(s.execute(parts[0].union_all(*parts[1:])).scalars())  # one statement, no objects
    spec = {k: v for k, v in inv.spec.items() if k != "extractors"}
    return walk(spec, defs, extractors_for(s, inv))


def has_config(s: Session, iid: str, config: str) -> bool:
    t = tables.Run
    q = select(t.c.pk).where(t.c.investigation_id == iid, t.c.config == config).limit(1)
    return s.execute(q).first() is not None


def add_bisect_mark(s: Session, iid: str, bisect: str, point: str, verdict: str, reason: str,
                    author: Optional[str]) -> m.BisectMark:
    """A point judged by hand (kept when rule files reload; a disagreeing run makes the point flaky)."""
    import difflib

    from triage.rules.language import schema

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


def run_records(s: Session, iid: str, *, config: Optional[str] = None, run_id: Optional[str] = None,
                pks: Optional[Sequence[int]] = None, where: Any = None,
                shared: Optional[ReadShared] = None, owned: bool = False) -> list[Any]:
    """The engine's view of an investigation's runs (those of one config, of one run id,
    or of these keys), in the order recorded, read with Core: no ORM objects for what
    may be a hundred thousand rows.  ``shared``: what reads before this one decoded
    (:class:`ReadShared`).  ``owned``: ``where`` names the investigation itself (a condition
    that keeps an index off, say)."""
    plain = _plain_statement(s, iid, config, run_id, pks) if where is None else None
    if plain is not None:
        result = s.connection().exec_driver_sql(*plain)
    else:
        t = tables.Run
        q = select(*read_columns(t))
        if not owned:
            q = q.where(t.c.investigation_id == iid)
        if config is not None:
            q = q.where(t.c.config == config)
        if run_id is not None:
            q = q.where(t.c.run_id == run_id)
        if pks is not None:
            q = q.where(t.c.pk.in_(pks))
        if where is not None:  # a further condition on the run table's columns
            q = q.where(where(t))
        result = s.execute(q)
    # In the order recorded, sorted here: SQLite walks a config's index in the order of
    # each run's last write, nearly the order recorded, and would sort them all first.
    try:
        cursor = result.cursor  # the driver's rows as they are: no result processing per row and column
        out = runs_of_rows(iter(lambda: cursor.fetchmany(10_000), []), shared)
    finally:
        result.close()
    out.sort(key=_seq)
    return out


#: The run table's columns read as their JSON text, decoded by the reader.
JSON_COLUMNS = ("metrics", "provenance")
#: The run table's columns a run is read from (then its key, ``pk``).
READ_COLUMNS = ("run_id", "config", "status", "metrics", "provenance", "url", "time", "note", "excluded",
                "excluded_reason", "signature_id")
#: :data:`READ_COLUMNS` and ``pk`` as a statement written by hand names them.
READ_SQL_COLUMNS = ", ".join(f"CAST({c} AS TEXT)" if c in JSON_COLUMNS else c for c in READ_COLUMNS) + ", pk"
#: A parameter in a statement written by hand, by the driver's style (others: SQLAlchemy writes it).
MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def plain_reads(s: Session) -> bool:
    """Whether :func:`run_records` writes its statements itself for ``s``'s driver (SQLite's and
    PostgreSQL's): reading a config's runs then costs no more than the runs themselves."""
    return s.get_bind().dialect.paramstyle in MARKS


def read_columns(t: Any) -> list:
    """:data:`READ_SQL_COLUMNS` as SQLAlchemy writes them: the JSON columns as their text,
    decoded by the reader in C, with no processor per value."""
    from sqlalchemy import Text, cast

    return [cast(t.c[c], Text) if c in JSON_COLUMNS else t.c[c] for c in READ_COLUMNS] + [t.c.pk]


def _plain_statement(s: Session, iid: str, config: Optional[str], run_id: Optional[str],
                     pks: Optional[Sequence[int]] = None) -> Optional[tuple]:
    """The statement (and its parameters) of :func:`run_records` of an investigation, a config,
    a run id or some keys, written here (None: a driver of another parameter style).  An
    evaluation reads each of hundreds of configs so: SQLAlchemy would build and look up the same
    statement each time (a seventh of a millisecond, more than reading a small config's runs takes)."""
    if not plain_reads(s):
        return None
    dialect = s.get_bind().dialect
    mark = MARKS[dialect.paramstyle]
    # Runs asked for by their keys are each read by the primary key.  Given the keys as
    # parameters, SQLite's planner walks the investigation's index instead, every run's
    # entry (13 ms for fifty runs of a hundred thousand): a unary plus keeps it off it.
    owner = "+investigation_id" if pks is not None and dialect.name == "sqlite" else "investigation_id"
    sql, params = f"SELECT {READ_SQL_COLUMNS} FROM run WHERE {owner} = {mark}", [iid]
    for column, value in (("config", config), ("run_id", run_id)):
        if value is not None:
            sql += f" AND {column} = {mark}"
            params.append(value)
    if pks is not None:
        sql += f" AND pk IN ({', '.join([mark] * len(pks))})" if pks else " AND 0 = 1"
        params += pks
    return sql, tuple(params)


class ReadShared:
    """What the reads of one source share (:class:`triage.kb.runsource.DbSource`, a config at
    a time): the provenance mappings decoded, the times turned into the engine's form and
    the texts (run ids, URLs, configs, statuses).  The runs of a nightly's matrix are of many
    configs and share their workflow run's id, URL, time and often provenance: a hundred
    thousand runs of six hundred configs hold a quarter as many provenances and a sixth as
    many times.  Past :data:`SHARED_MOST` entries a table starts again, so that a reader that
    lets each config's runs go (an import's evaluation) holds a bounded number: the mappings it
    holds outlive the runs that were let go."""

    __slots__ = ("provenance", "texts", "times")

    def __init__(self) -> None:
        self.provenance: dict[str, dict] = {}
        self.texts: dict[str, str] = {}
        self.times: dict[Any, str] = {}

    def bound(self) -> None:
        """Start again each table that grew past :data:`SHARED_MOST` (between two reads)."""
        for table in (self.provenance, self.texts, self.times):
            if len(table) > SHARED_MOST:
                table.clear()


#: Entries a table of :class:`ReadShared` holds at most between two reads.
SHARED_MOST = 20_000


def runs_of_rows(batches: Any, shared: Optional[ReadShared] = None) -> list[Any]:
    """The engine's runs from stored rows, given in batches: :data:`READ_COLUMNS`,
    then ``pk``, the JSON columns as their text and times as the database gives them
    back.  The one way a run is read from the knowledge base (:func:`run_records`, and
    the hand-written statement of :meth:`triage.kb.runsource.DbSource.by_keys`).
    ``shared``: what earlier reads decoded, to share (else this read's own)."""
    from triage.rules.engine.evaluate import RunRec

    decode = _json_decode()
    metrics_fast, provenance_fast, astuple = _typed()
    if shared is None:
        shared = ReadShared()
    else:
        shared.bound()
    # Runs that recorded the same metrics or provenance share one (read-only) mapping, and
    # runs of one config or status one text: a hundred thousand runs hold a few hundred of each.
    # A run id, its URL and its time are shared by the runs of one workflow run (a nightly's
    # matrix): one text each, and one time turned into the engine's form.  Metrics are
    # shared within a read only: nearly every run records values of its own.
    metrics_of: dict[str, dict] = {}
    provenance_of, times = shared.provenance, shared.times
    out: list[Any] = []
    append, text = out.append, shared.texts.setdefault
    for rows in batches:
        for (run_id, config, status, metrics, provenance, url, when, note, excluded, excluded_reason, signature,
             pk) in rows:
            mm = metrics_of.get(metrics)
            if mm is None:
                try:  # the usual form, in range, checked while it is decoded (in C)
                    mm = {k: astuple(v) for k, v in metrics_fast(metrics).items()}
                except ValueError:  # msgspec's ValidationError: the rest, one value at a time
                    mm = _computable(decode(metrics))
                metrics_of[metrics] = mm
            pp = provenance_of.get(provenance)
            if pp is None:
                try:
                    pp = provenance_fast(provenance)
                except ValueError:  # a value that is not text (written by an older triage)
                    pp = {k: str(v) for k, v in decode(provenance).items()}
                provenance_of[provenance] = pp
            at = times.get(when) if when is not None else None
            if at is None and when is not None:
                at = times[when] = time_text(when)
            append(RunRec(text(run_id, run_id), text(config, config), text(status, status), mm, pp,
                          text(url, url) if url is not None else None, at, note, bool(excluded), excluded_reason,
                          signature, pk))
    return out


def _typed() -> tuple[Any, Any, Any]:
    """Decoders of a run's stored metrics and provenance in their usual form, which check
    it as they decode (in C): each metric a ``{"value": v, "n": k}`` with ``v`` in
    triage's range (:mod:`triage.numbers`), each provenance value a text.  Anything else
    raises a ``ValueError`` (msgspec's ``ValidationError``), and is read the slow way.
    Then msgspec's ``astuple``, which makes a metric the engine's (value, n)."""
    global _TYPED
    if _TYPED is None:
        import msgspec

        metric = msgspec.defstruct("Metric", [("value", Annotated[float, msgspec.Meta(ge=-MAGNITUDE, le=MAGNITUDE)]),
                                              ("n", Optional[int], None)])
        assert not SMALLEST  # else a value nearer 0 than it is out of range too, which Meta cannot say
        _TYPED = (msgspec.json.Decoder(dict[str, metric]).decode, msgspec.json.Decoder(dict[str, str]).decode,
                  msgspec.structs.astuple)
    return _TYPED


_TYPED: Optional[tuple[Any, Any, Any]] = None


def time_text(when: Any) -> str:
    """A run's time as the engine reads it and an export writes it (:func:`_iso`), from the
    driver's value."""
    # SQLite's text as SQLAlchemy writes it (YYYY-MM-DD HH:MM:SS.ffffff, UTC): turned here
    if type(when) is str and len(when) == 26 and when[10] == " " and when[19] == ".":
        return when[:10] + "T" + (when[11:19] if when.endswith(".000000") else when[11:]) + "+00:00"
    return _iso(when)


def _computable(metrics: dict) -> dict:
    """A run's metrics for the engine: a value out of triage's range
    (:mod:`triage.numbers`), stored by a triage that took any finite number,
    stays in the knowledge base (and its exports) but is not computed with,
    so that the investigation still reports."""
    out = {}
    for k, v in metrics.items():
        value = v["value"]
        if type(value) is not float:
            value = float(value)
        # in_range(value) for a float, said here: asked of every metric of every run read
        if -MAGNITUDE <= value <= MAGNITUDE and (not value or abs(value) >= SMALLEST):
            out[k] = (value, v.get("n"))
    return out


_seq = attrgetter("seq")


def _iso(when: Any) -> str:
    """A run's time as the ORM gives it (UTC, ``datetime.isoformat``), from the
    driver's value: a ``datetime``, or text (SQLite's, in a form other than
    the one :func:`run_records` turns into this itself)."""
    if isinstance(when, str):
        when = datetime.fromisoformat(when)
    return (when.replace(tzinfo=timezone.utc) if when.utcoffset() is None
            else when.astimezone(timezone.utc)).isoformat()


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
    t = tables.Meta
    for value in s.execute(select(t.c.value).where(t.c.key.startswith("extractors:")).order_by(t.c.key)).scalars():
        out += json.loads(value)
    return out


def signature_specs(s: Session) -> list[dict]:
    """The signatures logs are matched against: those no rule file retired."""
    q = select(m.Signature).where(m.Signature.retired_at.is_(None)).order_by(m.Signature.id)
    return [row.spec for row in s.execute(q).scalars()]
