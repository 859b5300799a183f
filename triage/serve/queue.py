"""The durable delivery queue: one ``Delivery`` row per ``X-GitHub-Delivery``.

A delivery is stored before the webhook is answered, so nothing acknowledged
is lost.  Storing is insert-if-absent on the delivery id, so a redelivery
(same id) changes nothing -- unless the delivery had failed for good: then it
is queued again.  A settled delivery keeps its outcome, not its payload.

Any number of server replicas may share the queue (on PostgreSQL; a SQLite
file has one server).  A worker :meth:`claims <Queue.claim>` the oldest due
delivery with a conditional update, so two workers never take the same one,
and the claim is a lease: the delivery names its replica (``holder``) and
``lease_until``, which the replica renews while it works (:meth:`Queue.renew`,
a heartbeat) and which is cleared when the delivery is settled.  A delivery
whose lease ran out -- its replica was killed, or lost the database -- is due
again, and any replica takes it; one that a live replica holds is never taken.
Settling is conditional on the lease too: a replica that lost its lease does
not overwrite what the new holder does.  At start, :meth:`Queue.recover` puts
back at once what a process of this host that is no longer running held
(without waiting for the lease to run out).

A failed attempt is retried after 2, 4, 8, … seconds (at most
``backoff_cap``); after ``max_attempts`` -- failures, and leases that ran out
-- the delivery stays ``failed``.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import datetime, timedelta
from typing import Any, Optional

from sqlalchemy import and_, func, or_, select, update

from triage.kb import models as m
from triage.kb import store
from triage.kb.postlock import process_running

__all__ = ["LEASE_SECONDS", "Queue", "replica_id", "utcnow"]

#: How long a claim holds without a heartbeat (``triage serve --lease``).
LEASE_SECONDS = 60.0


def utcnow() -> datetime:
    return store.now()


def replica_id() -> str:
    """This server process among the replicas: host, process id, and a token of its own."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _dead_here(holder: Optional[str]) -> bool:
    """Whether ``holder`` names a process of this host that is no longer running."""
    parts = (holder or "").split(":")
    if len(parts) < 3 or not parts[-2].isdigit():
        return False
    host = ":".join(parts[:-2])
    return host == socket.gethostname() and not process_running(int(parts[-2]))


def _insert_ignore(s: Any, values: dict) -> bool:
    """Insert the row unless its id is there already; whether it was inserted."""
    from triage.kb.db import conflict_insert

    insert = conflict_insert(s.get_bind().dialect.name)
    if insert is None:  # pragma: no cover - other databases: look first (a race may raise, and is retried by GitHub)
        if s.get(m.Delivery, values["id"]) is not None:
            return False
        s.add(m.Delivery(**values))
        return True
    stmt = insert(m.Delivery).values(**values).on_conflict_do_nothing(index_elements=["id"])
    return s.execute(stmt.returning(m.Delivery.id)).scalar() is not None


class Queue:
    def __init__(self, url: str, *, max_attempts: int = 5, backoff: float = 2.0, backoff_cap: float = 300.0,
                 lease: float = LEASE_SECONDS, replica: Optional[str] = None) -> None:
        self.url = url
        self.max_attempts = max(1, max_attempts)
        self.backoff = backoff
        self.backoff_cap = backoff_cap
        self.lease = lease
        self.replica = replica or replica_id()
        self._beat: Any = None  # the heartbeat's engine (PostgreSQL)

    def put(self, delivery_id: str, event: str, action: Optional[str], payload: Any,
            installation_id: Optional[int], subject: Optional[str] = None) -> str:
        """Store a delivery: ``queued``; ``duplicate`` when this id was stored
        before (a redelivery changes nothing), except that redelivering a
        ``failed`` one queues it again with fresh attempts: ``requeued``."""
        now = utcnow()
        values = dict(id=delivery_id, event=event, action=action, payload=payload, installation_id=installation_id,
                      state="queued", attempts=0, next_at=now, received_at=now, finished_at=None, outcome=None,
                      subject=subject, posting=False)
        with store.session(self.url) as s:
            if _insert_ignore(s, values):
                return "queued"
            again = s.execute(update(m.Delivery).where(m.Delivery.id == delivery_id, m.Delivery.state == "failed")
                              .values(state="queued", attempts=0, next_at=now, payload=payload,
                                      installation_id=installation_id, finished_at=None)).rowcount
            return "requeued" if again == 1 else "duplicate"

    def recover(self) -> int:
        """Put back in the queue, at once, the deliveries that processes of this host
        no longer running held (killed); the others' wait for their lease to run out."""
        with store.session(self.url) as s:
            rows = s.execute(select(m.Delivery.id, m.Delivery.holder).where(m.Delivery.state == "running")).all()
            dead = [did for did, holder in rows if _dead_here(holder)]
            if not dead:
                return 0
            return s.execute(update(m.Delivery).where(m.Delivery.id.in_(dead), m.Delivery.state == "running")
                             .values(state="queued", next_at=utcnow(), holder=None, lease_until=None)).rowcount

    @staticmethod
    def _due(now: datetime) -> Any:
        """Queued and due, or running on a lease that ran out (or that an older server left without one)."""
        d = m.Delivery
        return or_(and_(d.state == "queued", d.next_at <= now),
                   and_(d.state == "running", or_(d.lease_until.is_(None), d.lease_until <= now)))

    def claim(self) -> Optional[m.Delivery]:
        """Take the oldest due delivery (state ``running``, leased to this replica, one
        more attempt), or None.  One taken again after ``max_attempts`` leases ran out
        (it stops each replica that takes it) is kept as ``failed`` instead."""
        for _ in range(5):
            with store.session(self.url) as s:
                now = utcnow()
                did = s.execute(select(m.Delivery.id).where(self._due(now))
                                .order_by(m.Delivery.next_at, m.Delivery.received_at).limit(1)).scalar()
                if did is None:
                    return None
                taken = s.execute(update(m.Delivery).where(m.Delivery.id == did, self._due(now))
                                  .values(state="running", attempts=m.Delivery.attempts + 1, holder=self.replica,
                                          lease_until=now + timedelta(seconds=self.lease), posting=False)).rowcount
                if taken != 1:
                    continue
                s.flush()
                delivery = s.get(m.Delivery, did, populate_existing=True)
            if delivery.attempts <= self.max_attempts:
                return delivery
            self.finish(did, "failed", f"given up after {self.max_attempts} attempts: the last ones' leases ran "
                                       "out (the server working on it stopped)")
        return None

    def _mine(self, delivery_id: str) -> Any:
        d = m.Delivery
        return and_(d.id == delivery_id, d.state == "running", d.holder == self.replica)

    def renew(self) -> int:
        """The heartbeat: extend the lease of every delivery this replica holds; how many.
        On PostgreSQL through a connection of its own, so that a beat never waits
        behind the workers and the webhook for one of the pool's."""
        stmt = (update(m.Delivery).where(m.Delivery.state == "running", m.Delivery.holder == self.replica)
                .values(lease_until=utcnow() + timedelta(seconds=self.lease)))
        if not self.url.startswith("postgresql"):  # SQLite: one server, nothing to take its work
            with store.session(self.url) as s:
                return s.execute(stmt).rowcount
        if self._beat is None:
            from sqlalchemy import create_engine

            self._beat = create_engine(self.url, pool_size=1, max_overflow=0, pool_pre_ping=True)
        with self._beat.begin() as conn:
            return conn.execute(stmt).rowcount

    def finish(self, delivery_id: str, state: str, outcome: str) -> bool:
        """Mark a delivery ``done`` or ``ignored`` (its payload is dropped), or
        ``failed`` for good (its payload kept, for a redelivery to retry); False
        when this replica no longer holds it (its lease ran out and another took it)."""
        values: dict[str, Any] = dict(state=state, outcome=outcome[:2000], finished_at=utcnow(), holder=None,
                                      lease_until=None, posting=False)
        if state != "failed":
            values["payload"] = {}
        with store.session(self.url) as s:
            return s.execute(update(m.Delivery).where(self._mine(delivery_id)).values(**values)).rowcount == 1

    def note(self, delivery_id: str, outcome: str) -> None:
        """Say more of what a settled delivery did (a post made after it was settled)."""
        with store.session(self.url) as s:
            s.execute(update(m.Delivery).where(m.Delivery.id == delivery_id).values(outcome=outcome[:2000]))

    def retry(self, delivery_id: str, attempts: int, error: str) -> str:
        """After a failed attempt: queue it again later, or give up; the new state
        (``lost`` when this replica no longer holds it)."""
        if attempts >= self.max_attempts:
            return "failed" if self.finish(delivery_id, "failed", error) else "lost"
        wait = min(self.backoff_cap, self.backoff * 2 ** (attempts - 1))
        with store.session(self.url) as s:
            done = s.execute(update(m.Delivery).where(self._mine(delivery_id))
                             .values(state="queued", outcome=error[:2000], holder=None, lease_until=None,
                                     posting=False, next_at=utcnow() + timedelta(seconds=wait))).rowcount
        return "queued" if done == 1 else "lost"

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
