"""Rule files -> definitions: what each rule file declares, loaded into the knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.orm import Session

from triage.errors import InputError
from triage.kb import tables
from triage.kb.db import now
from triage.rules.language.cache import path_keys


def sync_rules(s: Session, ruleset: Any, *, force: bool = False) -> list[str]:
    """Upsert the definitions of every rule file whose content changed.

    Definitions of an investigation are replaced wholesale by its file (the
    file is the source of truth); runs and evidence history are never touched.
    Returns the paths that were (re)loaded.  Written as columns: loading a rule
    file (a first import into a new knowledge base) maps no table class.
    """
    loaded: list[str] = []
    locked = False
    keys = dict(zip(path_keys([Path(f.path) for f in ruleset.files]), ruleset.files))
    # One query for every file's last load: a file's check costs no statement of its own.
    t = tables.RuleSource
    known = {r.path: r for r in s.execute(select(t.c.path, t.c.sha256).where(t.c.path.in_(list(keys))))} if keys else {}
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
            src = s.execute(select(t.c.path, t.c.sha256).where(t.c.path == key)).first()
            if src is not None and src.sha256 == f.sha256 and not force:
                continue
        _upsert_file(s, f)
        values = dict(sha256=f.sha256, loaded_at=now())
        if src is None:
            s.execute(insert(t).values(path=key, **values))
        else:
            s.execute(update(t).where(t.c.path == key).values(**values))
        loaded.append(f.path)
    if loaded:
        s.expire_all()  # a row this session read as an object before is read again
    return loaded


def _dump(model: Any) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)


def _upsert_file(s: Session, f: Any) -> None:
    """Load one rule file: what it declares is upserted, and what it declared
    before and no longer does is retired (signatures keep their row, with
    ``retired_at``; the investigation's definitions are replaced)."""
    spec = f.spec
    _upsert_signatures(s, f.path, {sig.id: sig for sig in spec.signatures})
    inv = spec.investigation
    if inv is None:
        _meta_put(s, f"extractors:{f.path}", spec.extractors)
        return
    t = tables.Investigation
    clash = s.execute(select(t.c.id).where(t.c.repo == inv.repo, t.c.pr == inv.pr)).first()
    if clash is not None and clash.id != inv.id:
        raise InputError(
            f"{f.path}: {inv.repo}#{inv.pr} already belongs to investigation {clash.id!r} in the knowledge base"
        )
    inv_spec = _dump(inv) | {"extractors": [_dump(x) for x in spec.extractors], "exclusive": spec.exclusive}
    fields = dict(repo=inv.repo, pr=inv.pr, title=inv.title, metric=inv.metric, direction=inv.direction,
                  gate=inv.gate, source=f.path, spec=inv_spec)
    if s.execute(select(t.c.id).where(t.c.id == inv.id)).first() is None:
        s.execute(insert(t).values(id=inv.id, **fields))
    else:
        s.execute(update(t).where(t.c.id == inv.id).values(**fields))
    _replace_definitions(s, inv.id, spec)


def _upsert_signatures(s: Session, path: str, declared: dict[str, Any]) -> None:
    """The file's signatures upserted (the last of an id given twice), and those it declared
    before and no longer does retired."""
    t = tables.Signature
    rows = [dict(id=sig.id, kind=sig.cls, source=path, spec=_dump(sig), retired_at=None) for sig in declared.values()]
    have = set(s.execute(select(t.c.id).where(t.c.id.in_(list(declared)))).scalars()) if declared else set()
    if any(r["id"] not in have for r in rows):
        s.execute(insert(t), [r for r in rows if r["id"] not in have])
    changed = [dict(key=r["id"], kind=r["kind"], source=path, spec=r["spec"]) for r in rows if r["id"] in have]
    if changed:
        s.execute(update(t).where(t.c.id == bindparam("key")).values(
            kind=bindparam("kind"), source=bindparam("source"), spec=bindparam("spec"), retired_at=None), changed)
    s.execute(update(t).where(t.c.source == path, t.c.retired_at.is_(None), t.c.id.not_in(list(declared)))
              .values(retired_at=now()))


def _replace_definitions(s: Session, iid: str, spec: Any) -> None:
    """The investigation's hypotheses (each keeps its stored status), recipes, rules, bisects and
    the evidence its file declares, replaced by the file's."""
    hyp = tables.Hypothesis
    old_status = dict(s.execute(select(hyp.c.id, hyp.c.status).where(hyp.c.investigation_id == iid)).all())
    for t in (hyp, tables.Recipe, tables.Rule, tables.Bisect):
        s.execute(delete(t).where(t.c.investigation_id == iid))
    ev = tables.ManualEvidence
    s.execute(delete(ev).where(ev.c.investigation_id == iid, ev.c.source == "rules"))
    rows = {
        hyp: [dict(investigation_id=iid, id=h.id, title=h.title, parent=h.parent, position=i,
                   status=old_status.get(h.id, "open"), spec=_dump(h)) for i, h in enumerate(spec.hypotheses)],
        tables.Recipe: [dict(investigation_id=iid, id=r.id, position=i, spec=_dump(r))
                        for i, r in enumerate(spec.recipes)],
        tables.Rule: [dict(investigation_id=iid, id=r.id, hypothesis_id=r.hypothesis, position=i, spec=_dump(r))
                      for i, r in enumerate(spec.rules)],
        tables.Bisect: [dict(investigation_id=iid, id=b.id, position=i, spec=_dump(b))
                        for i, b in enumerate(spec.bisects)],
        ev: [dict(investigation_id=iid, hypothesis_id=e.hypothesis, verdict=e.verdict, reason=e.because,
                  author=e.author, runs=list(e.runs), source="rules", created_at=now()) for e in spec.evidence],
    }
    for t, values in rows.items():
        if values:
            s.execute(insert(t), values)


def _meta_put(s: Session, key: str, items: Sequence[Any]) -> None:
    import json

    t = tables.Meta
    s.execute(delete(t).where(t.c.key == key))
    if items:
        s.execute(insert(t).values(key=key, value=json.dumps([_dump(x) for x in items], sort_keys=True)))
