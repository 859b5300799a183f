"""What triage wrote to GitHub: posted reports with what changed since the last one,
and the runs the autopilot dispatched."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from sqlalchemy import select
from sqlalchemy.orm import Session

from triage.kb import tables
from triage.kb.tables import models as m
from triage.kb.db import _utc, now
from triage.kb.evaluations import status_history


def record_post(s: Session, iid: str, url: Optional[str], action: str, since: Optional[datetime] = None) -> m.Post:
    """Note that the report was written to GitHub (``created`` or ``updated``)."""
    row = m.Post(investigation_id=iid, url=url, action=action, at=now(), since=since)
    s.add(row)
    s.flush()
    return row


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


def written_since(s: Session, iid: str, at: datetime) -> list[Any]:
    """The runs of ``iid`` created or written after ``at``, in the order recorded: what names
    each and when it was written, not the runs whole (the bot asks this on every post, and a
    large investigation's runs made whole cost seconds and hundreds of megabytes).  A run
    imported from an older record is created now with its record's older ``updated_at``: both
    times are asked."""
    from sqlalchemy import or_

    t = tables.Run
    q = (select(t.c.run_id, t.c.config, t.c.created_at, t.c.updated_at)
         .where(t.c.investigation_id == iid, or_(t.c.created_at > at, t.c.updated_at > at)).order_by(t.c.pk))
    return list(s.execute(q))


def since_view(s: Session, inv: m.Investigation, at: datetime, label: str) -> dict:
    """Runs recorded or updated after ``at``, and the statuses that changed since.

    A hypothesis that changed several times shows its status before ``at``
    and its status now; one that changed and changed back is left out.
    """
    at = _utc(at)
    prefix = inv.spec.get("config_prefix") or ""

    def name(r: Any) -> str:
        short = r.config[len(prefix):] if prefix and r.config.startswith(prefix) and r.config != prefix else r.config
        return f"{r.run_id} ({short})"

    runs = written_since(s, inv.id, at)
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


def dispatch_rows(s: Session, iid: str) -> list[Any]:
    """:func:`dispatches` as rows of columns, to read (each column an attribute): every
    report reads them, and this defines no table class and maps nothing."""
    t = tables.Dispatch
    return list(s.execute(select(t).where(t.c.investigation_id == iid).order_by(t.c.pk)))


def record_dispatch(s: Session, row: m.Dispatch) -> m.Dispatch:
    s.add(row)
    s.flush()
    return row


def close_dispatches(s: Session, iid: str, configs_of: Any) -> list[m.Dispatch]:
    """Mark done the dispatches whose run is recorded: its run id, or (when
    GitHub did not say it) a run of one of ``configs_of(dispatch)`` recorded
    after it was sent.  Returns the ones still in flight."""
    t = tables.Run
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
