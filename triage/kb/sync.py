"""Rule files -> definitions: what each rule file declares, loaded into the knowledge base."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from sqlalchemy import select
from sqlmodel import Session

from triage.errors import InputError
from triage.kb import tables
from triage.kb.tables import models as m
from triage.kb.db import now
from triage.rules.language.cache import path_keys


def sync_rules(s: Session, ruleset: Any, *, force: bool = False) -> list[str]:
    """Upsert the definitions of every rule file whose content changed.

    Definitions of an investigation are replaced wholesale by its file (the
    file is the source of truth); runs and evidence history are never touched.
    Returns the paths that were (re)loaded.
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
            s.expire_all()
            src = s.get(m.RuleSource, key)
            if src is not None and src.sha256 == f.sha256 and not force:
                continue
        _upsert_file(s, f)
        row = s.get(m.RuleSource, key)  # the record to change (what was read above is columns)
        if row is None:
            s.add(m.RuleSource(path=key, sha256=f.sha256, loaded_at=now()))
        else:
            row.sha256, row.loaded_at = f.sha256, now()
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
