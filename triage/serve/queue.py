"""The durable delivery queue: one ``Delivery`` row per ``X-GitHub-Delivery``.

A delivery is stored before the webhook is answered, so nothing acknowledged
is lost: a server killed mid-queue finds its work at the next start
(:meth:`Queue.recover` puts deliveries left ``running`` back in the queue).
Storing is insert-if-absent on the delivery id, so a redelivery (same id)
changes nothing -- unless the delivery had failed for good: then it is queued
again.  A settled delivery keeps its outcome, not its payload.  A worker :meth:`claims <Queue.claim>` the oldest due
delivery with a conditional update, so two workers never take the same one;
a failed attempt is retried after 2, 4, 8, … seconds (at most
``backoff_cap``), and after ``max_attempts`` the delivery stays ``failed``.

One server per knowledge base: ``recover`` assumes no other server is
working on the same queue.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Optional

from sqlalchemy import func, select, update

from triage.kb import models as m
from triage.kb import store

__all__ = ["Queue", "utcnow"]


def utcnow() -> datetime:
    return store.now()


def _insert_ignore(s: Any, values: dict) -> bool:
    """Insert the row unless its id is there already; whether it was inserted."""
    dialect = s.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:  # pragma: no cover - other databases: look first (a race may raise, and is retried by GitHub)
        if s.get(m.Delivery, values["id"]) is not None:
            return False
        s.add(m.Delivery(**values))
        return True
    stmt = insert(m.Delivery).values(**values).on_conflict_do_nothing(index_elements=["id"])
    return s.execute(stmt.returning(m.Delivery.id)).scalar() is not None


class Queue:
    def __init__(self, url: str, *, max_attempts: int = 5, backoff: float = 2.0, backoff_cap: float = 300.0) -> None:
        self.url = url
        self.max_attempts = max(1, max_attempts)
        self.backoff = backoff
        self.backoff_cap = backoff_cap

    def put(self, delivery_id: str, event: str, action: Optional[str], payload: Any,
            installation_id: Optional[int]) -> str:
        """Store a delivery: ``queued``; ``duplicate`` when this id was stored
        before (a redelivery changes nothing), except that redelivering a
        ``failed`` one queues it again with fresh attempts: ``requeued``."""
        now = utcnow()
        values = dict(id=delivery_id, event=event, action=action, payload=payload, installation_id=installation_id,
                      state="queued", attempts=0, next_at=now, received_at=now, finished_at=None, outcome=None)
        with store.session(self.url) as s:
            if _insert_ignore(s, values):
                return "queued"
            again = s.execute(update(m.Delivery).where(m.Delivery.id == delivery_id, m.Delivery.state == "failed")
                              .values(state="queued", attempts=0, next_at=now, payload=payload,
                                      installation_id=installation_id, finished_at=None)).rowcount
            return "requeued" if again == 1 else "duplicate"

    def recover(self) -> int:
        """Put deliveries left ``running`` (by a server that died) back in the queue."""
        with store.session(self.url) as s:
            result = s.execute(update(m.Delivery).where(m.Delivery.state == "running")
                               .values(state="queued", next_at=utcnow()))
            return result.rowcount

    def claim(self) -> Optional[m.Delivery]:
        """Take the oldest due delivery (state ``running``, one more attempt), or None."""
        for _ in range(5):
            with store.session(self.url) as s:
                now = utcnow()
                did = s.execute(select(m.Delivery.id)
                                .where(m.Delivery.state == "queued", m.Delivery.next_at <= now)
                                .order_by(m.Delivery.next_at, m.Delivery.received_at).limit(1)).scalar()
                if did is None:
                    return None
                taken = s.execute(update(m.Delivery)
                                  .where(m.Delivery.id == did, m.Delivery.state == "queued")
                                  .values(state="running", attempts=m.Delivery.attempts + 1)).rowcount
                if taken == 1:
                    s.flush()
                    return s.get(m.Delivery, did, populate_existing=True)
        return None

    def finish(self, delivery_id: str, state: str, outcome: str) -> None:
        """Mark a delivery ``done`` or ``ignored`` (its payload is dropped), or
        ``failed`` for good (its payload kept, for a redelivery to retry)."""
        values: dict[str, Any] = dict(state=state, outcome=outcome[:2000], finished_at=utcnow())
        if state != "failed":
            values["payload"] = {}
        with store.session(self.url) as s:
            s.execute(update(m.Delivery).where(m.Delivery.id == delivery_id).values(**values))

    def retry(self, delivery_id: str, attempts: int, error: str) -> str:
        """After a failed attempt: queue it again later, or give up; the new state."""
        if attempts >= self.max_attempts:
            self.finish(delivery_id, "failed", error)
            return "failed"
        wait = min(self.backoff_cap, self.backoff * 2 ** (attempts - 1))
        with store.session(self.url) as s:
            s.execute(update(m.Delivery).where(m.Delivery.id == delivery_id)
                      .values(state="queued", outcome=error[:2000], next_at=utcnow() + timedelta(seconds=wait)))
        return "queued"

    def counts(self) -> dict[str, int]:
        with store.read_session(self.url) as s:
            rows = s.execute(select(m.Delivery.state, func.count()).group_by(m.Delivery.state)).all()
        return {state: n for state, n in rows}

    def next_due(self) -> Optional[datetime]:
        with store.session(self.url) as s:
            return s.execute(select(func.min(m.Delivery.next_at)).where(m.Delivery.state == "queued")).scalar()

    def listing(self, state: Optional[str] = None, limit: int = 200) -> list[m.Delivery]:
        """The newest deliveries (of one state), without their payloads."""
        cols = [c for c in m.Delivery.__table__.columns if c.name != "payload"]
        q = select(*cols).order_by(m.Delivery.received_at.desc()).limit(limit)
        if state is not None:
            q = q.where(m.Delivery.state == state)
        with store.read_session(self.url) as s:
            return [m.Delivery(**row._mapping) for row in s.execute(q).all()]
