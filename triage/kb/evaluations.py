"""Evaluations: the evidence and statuses the engine derived, stored with their history;
manual evidence from the command line."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from triage.errors import InputError
from triage.kb import tables
from triage.kb.tables import models as m
from triage.kb.db import conflict_insert, now
from triage.rules.engine.keys import named


#: The first runs a stored item keeps (then one of each further config it read).
STORED_RUNS = 20


def store_evaluation(s: Session, iid: str, ev: Any) -> dict[str, tuple[Optional[str], str]]:
    """Store derived evidence and statuses; return the statuses that changed.

    Evidence no longer derived is retired (kept, with ``retired_at``); new
    evidence is added; unchanged evidence keeps its creation time.
    """
    from sqlalchemy import insert, update

    stamp = now()
    t = tables.Evidence
    # The evidence stored is what the last store left, which names it by a digest with the
    # evidence version it left (a triage that writes evidence without the digest changes the
    # version): an evaluation that derived the same reads none of the thousands of items kept.
    digest, said = _digest(ev.evidence), _get_meta(s, STORED_EVIDENCE.format(iid))
    if said is not None and said == f"{digest} {_get_meta(s, EVIDENCE_VERSION) or ''}":
        return _kept(s, iid, digest, said, _store_statuses(s, iid, ev, stamp, False))
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
        # An item keeps the first runs it names, and one of each further config it read: its
        # reason says how many it compared (a pooled config's thousands of runs, once per item,
        # would be written again, and kept retired, with every run added to that config).
        runs = list(item.runs[:STORED_RUNS]) if "invalid-run" in item.flags else named(item.runs, STORED_RUNS)
        fresh.append(dict(investigation_id=iid, hypothesis_id=item.hypothesis, rule_id=item.rule, verdict=item.verdict,
                          reason=item.reason, runs=runs, flags=list(item.flags), key=item.key,
                          created_at=stamp, retired_at=None))
    if fresh:
        s.execute(insert(t), fresh)
    gone = [pk for key, (pk, _) in active.items() if key not in new_keys]
    for i in range(0, len(gone), 500):
        s.execute(update(t).where(t.c.pk.in_(gone[i:i + 500])).values(retired_at=stamp))
    return _kept(s, iid, digest, said, _store_statuses(s, iid, ev, stamp, bool(touched or fresh or gone)))


#: The ``meta`` row that names the evidence of an investigation as last stored: its
#: :func:`_digest` and the evidence version after the store.
STORED_EVIDENCE = "evidence:{}"


def _kept(s: Session, iid: str, digest: str, said: Optional[str], changed: dict) -> dict:
    """Name the evidence just stored (unless it is named so already); return ``changed``."""
    now_said = f"{digest} {_get_meta(s, EVIDENCE_VERSION) or ''}"
    if now_said != said:
        _put_meta(s, STORED_EVIDENCE.format(iid), now_said)
    return changed


def _digest(items: Sequence[Any]) -> str:
    """The evidence items as stored (each one's key and flags, in order), as one digest."""
    import hashlib

    from msgspec.msgpack import encode

    return hashlib.blake2b(encode([(e.key, list(e.flags)) for e in items]), digest_size=16).hexdigest()


def _get_meta(s: Session, key: str) -> Optional[str]:
    meta = tables.Meta
    return s.execute(select(meta.c.value).where(meta.c.key == key)).scalar()


def _store_statuses(s: Session, iid: str, ev: Any, stamp: Any, touched: bool) -> dict[str, tuple[Optional[str], str]]:
    """Store the statuses of ``ev`` (``touched``: its evidence changed); return those that changed."""
    from sqlalchemy import insert, update

    changed: dict[str, tuple[Optional[str], str]] = {}
    h, sc = tables.Hypothesis, tables.StatusChange
    stored = dict(s.execute(select(h.c.id, h.c.status).where(h.c.investigation_id == iid)).all())
    last = dict(s.execute(select(sc.c.hypothesis_id, sc.c.status).where(sc.c.investigation_id == iid)
                          .order_by(sc.c.pk)).all())  # each hypothesis's last change
    changes = []
    for hid, status in ev.statuses.items():
        previous = last.get(hid)
        if previous != status:
            changes.append(dict(investigation_id=iid, hypothesis_id=hid, previous=previous, status=status, at=stamp))
            changed[hid] = (previous, status)
        if hid in stored and stored[hid] != status:
            s.execute(update(h).where(h.c.investigation_id == iid, h.c.id == hid).values(status=status))
            touched = True
    if changes:
        s.execute(insert(sc), changes)
    if touched or changed:
        # What other investigations' reports read of this one ("Seen elsewhere") changed.
        import uuid

        _put_meta(s, EVIDENCE_VERSION, uuid.uuid4().hex)
    s.flush()
    return changed


def _put_meta(s: Session, key: str, value: str) -> None:
    """Set a ``meta`` row in one statement where the database has one (``INSERT ... ON
    CONFLICT DO UPDATE``): two evaluations in two processes never both insert it."""
    from sqlalchemy import insert, update

    meta = tables.Meta
    upsert = conflict_insert(s.get_bind().dialect.name)
    if upsert is not None:
        stmt = upsert(meta).values(key=key, value=value)
        s.execute(stmt.on_conflict_do_update(index_elements=[meta.c.key], set_={"value": stmt.excluded.value}))
    elif s.execute(update(meta).where(meta.c.key == key).values(value=value)).rowcount == 0:
        s.execute(insert(meta).values(key=key, value=value))


#: A Meta key that changes with every evaluation that changed stored evidence or statuses.
EVIDENCE_VERSION = "evidence-version"


def status_history(s: Session, iid: str) -> list[m.StatusChange]:
    q = select(m.StatusChange).where(m.StatusChange.investigation_id == iid).order_by(m.StatusChange.pk)
    return list(s.execute(q).scalars())


def evidence_history(s: Session, iid: str) -> list[m.Evidence]:
    q = select(m.Evidence).where(m.Evidence.investigation_id == iid).order_by(m.Evidence.pk)
    return list(s.execute(q).scalars())


def add_manual_evidence(s: Session, iid: str, hypothesis: str, verdict: str, reason: str,
                        author: Optional[str], runs: Sequence[str], source: str = "cli") -> m.ManualEvidence:
    """Manual evidence from the command line, or a PR comment (``source``); kept when rule files reload."""
    known = {h.id for h in s.execute(select(m.Hypothesis).where(m.Hypothesis.investigation_id == iid)).scalars()}
    if hypothesis not in known:
        import difflib

        close = difflib.get_close_matches(hypothesis, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(f"--hypothesis {hypothesis!r}: no such hypothesis{hint}")
    row = m.ManualEvidence(investigation_id=iid, hypothesis_id=hypothesis, verdict=verdict, reason=reason,
                           author=author, runs=list(runs), source=source, created_at=now())
    s.add(row)
    s.flush()
    return row
