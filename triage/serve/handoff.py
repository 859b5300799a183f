"""One comment edit for a burst of deliveries, across replicas, and none lost.

A delivery that records runs marks its investigation's post *due*
(:func:`mark_due`, in the transaction that records them): a ``meta`` row
``post-due:<investigation>`` holding a count that each such delivery raises,
and since when the post is due.

When a delivery is through with its work it *hands off* (:func:`hand_off`):
in one transaction that no other hand-off runs beside (a PostgreSQL advisory
lock; SQLite's write lock), it says its runs are recorded (``posting``), and,
for each due post it may be waited on for, looks for another delivery that
will hand off later -- queued and due, or running and not yet ``posting`` --
about the same PR (its ``subject``), or about the whole repository (a job, a
run of no one PR).  When there is one, the post is left to it: its post will
show these runs too.  When there is none, this delivery posts.

Nothing is lost: of two deliveries that hand off in turn, the later one sees
the earlier one ``posting``, so the last delivery of a burst always posts,
and it posts what every earlier one recorded.  A post's due mark is cleared
only if no delivery raised its count while the post was made
(:func:`posted`); a post that failed leaves it due, for its delivery's retry
or the next delivery of the PR.  A post left waiting longer than
:data:`WAIT_SECONDS` (a repository whose jobs never stop coming) is made
anyway.  Which delivery a hand-off may be waited on for: the due posts of its
subject's PR (or of every PR of its repository), and those it recorded runs
for itself.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterable, Optional

from sqlalchemy import and_, func, or_, select, text, update

from triage.kb import models as m
from triage.kb import store
from triage.kb.postlock import pg_key

__all__ = ["WAIT_SECONDS", "due", "hand_off", "mark_due", "posted"]

#: The longest a due post waits for deliveries of its PR still to come.
WAIT_SECONDS = 60.0
PREFIX = "post-due:"
#: The first key of the advisory lock that hand-offs take in turn.
PG_HANDOFF_CLASS = 0x74726968


def _read(row: Optional[m.Meta]) -> dict:
    try:
        data = json.loads(row.value) if row is not None else {}
    except ValueError:
        data = {}
    return data if isinstance(data, dict) else {}


def mark_due(s: Any, iid: str) -> None:
    """In the caller's transaction (which holds the investigation): runs of ``iid`` were
    recorded that its comment does not show yet."""
    store.lock_investigation(s, iid)
    row = s.get(m.Meta, PREFIX + iid)
    data = _read(row)
    value = json.dumps({"count": int(data.get("count", 0)) + 1, "since": data.get("since") or time.time()})
    if row is None:
        s.add(m.Meta(key=PREFIX + iid, value=value))
    else:
        row.value = value


def due(url: str, iid: str) -> Optional[int]:
    """The count of ``iid``'s due post, or None when its comment shows every run."""
    with store.session(url) as s:
        row = s.get(m.Meta, PREFIX + iid)
        return int(_read(row).get("count", 0)) if row is not None else None


def posted(url: str, iid: str, count: int) -> None:
    """The post made after reading ``count`` succeeded: no longer due, unless runs were
    recorded meanwhile."""
    with store.session(url) as s:
        store.lock_investigation(s, iid)
        row = s.get(m.Meta, PREFIX + iid)
        if row is not None and _read(row).get("count") == count:
            s.delete(row)


def _subjects(repo: str, pr: int) -> Any:
    d = m.Delivery.subject
    return or_(d == f"{repo.lower()}#{pr}", d == repo.lower(), d.is_(None))


def _waited_on(s: Any, delivery_id: str, repo: str, pr: int) -> bool:
    """Whether another delivery about ``repo#pr`` will hand off after this one."""
    d = m.Delivery
    coming = or_(and_(d.state == "queued", d.next_at <= store.now()),
                 and_(d.state == "running", d.posting.is_(False)))
    return s.execute(select(d.id).where(d.id != delivery_id, _subjects(repo, pr), coming).limit(1)).first() is not None


def _candidates(s: Any, subject: Optional[str], own: Iterable[str]) -> list[tuple[str, str, int, dict]]:
    """The due posts this hand-off answers for: (investigation, repo, pr, due mark)."""
    rows = {r.key[len(PREFIX):]: _read(r) for r in s.execute(select(m.Meta).where(m.Meta.key.like(PREFIX + "%")))
            .scalars()}
    if not rows:
        return []
    inv = m.Investigation
    found = s.execute(select(inv.id, inv.repo, inv.pr).where(inv.id.in_(list(rows)))).all()
    repo, _, number = (subject or "").partition("#")
    own = set(own)
    out = []
    for iid, inv_repo, pr in found:
        mine = (subject is None or inv_repo.lower() == repo and (not number or str(pr) == number))
        if mine or iid in own:
            out.append((iid, inv_repo, pr, rows[iid]))
    return out


def hand_off(url: str, delivery_id: str, subject: Optional[str], own: Iterable[str] = (), *,
             settled: bool = False) -> list[str]:
    """The investigations whose due post this delivery makes now (no other delivery of
    their PR will hand off after it); ``settled``: the delivery is no longer running
    (a failure), so it need not say it is ``posting``."""
    with store.session(url) as s:
        if s.get_bind().dialect.name == "postgresql":
            s.execute(text("SELECT pg_advisory_xact_lock(:c, :k)"), {"c": PG_HANDOFF_CLASS, "k": pg_key("hand-off")})
        if not settled:
            s.execute(update(m.Delivery).where(m.Delivery.id == delivery_id).values(posting=True))
        now = time.time()
        return [iid for iid, repo, pr, mark in _candidates(s, subject, own)
                if not _waited_on(s, delivery_id, repo, pr) or now - float(mark.get("since") or now) > WAIT_SECONDS]


def pending(url: str) -> int:
    """How many investigations have a post due."""
    with store.read_session(url) as s:
        return s.execute(select(func.count()).select_from(m.Meta).where(m.Meta.key.like(PREFIX + "%"))).scalar()
