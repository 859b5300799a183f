"""One post of an investigation at a time, across processes: the lock
``triage post`` (and ``serve``) holds around list -> create/edit of the
sticky comment, and nothing else.

It is not the investigation's write lock (:func:`~triage.kb.store.lock_investigation`):
a post waits for GitHub, and nothing but another post of the same
investigation should wait for that.

- PostgreSQL: a transaction-level advisory lock keyed on the investigation
  (``pg_advisory_xact_lock``), in a transaction of its own that touches no
  row: ``add-run`` and ``import`` go on meanwhile, and a poster that dies
  lets go with its connection.
- SQLite (and any other database): a lease, a ``meta`` row
  ``post-lease:<investigation>`` naming its holder (host, process, a token of
  its own) and when it expires, taken and given back in two short
  ``BEGIN IMMEDIATE`` transactions; the knowledge base is not held while
  GitHub answers.  A lease is taken over when it expired
  (:data:`LEASE_SECONDS`) or when its holder was a process of this host that
  is no longer running (killed mid-post).

:func:`post_turn` is the same lock under another name, for a server that
holds it around the whole of a post, evaluation included: with several
replicas, a post evaluated before another's must not edit the comment after
it.  It is a lock of its own, so ``triage post`` inside it takes
:func:`post_lock` without waiting for itself.

A post that raced past the lock anyway (through another knowledge base, or
after a lease expired under a very slow GitHub) is caught by the comment's own
duplicate check (:mod:`triage.github.comments`).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
import zlib
from contextlib import contextmanager
from typing import Iterator

from triage.kb.tables import models as m
from triage.kb import store

#: How long a lease holds before another poster may take it over.  Longer than
#: a post can take within the GitHub client's timeouts and retry budgets.
LEASE_SECONDS = 600.0

#: The first key of the PostgreSQL advisory lock (the second: the investigation's
#: CRC-32).  Two-key locks never meet the one-key locks of :mod:`triage.kb.migrate`.
PG_POST_CLASS = 0x74726970

#: The first key of :func:`post_turn`'s advisory lock.
PG_TURN_CLASS = 0x74726974

#: Waiting for a lease: the first pause, and the longest.
_FIRST_WAIT, _LONGEST_WAIT = 0.01, 0.2


@contextmanager
def post_lock(url: str, iid: str) -> Iterator[None]:
    """Hold the post lock of investigation ``iid`` in the knowledge base ``url``."""
    with _lock(url, iid, PG_POST_CLASS, "post-lease"):
        yield


@contextmanager
def post_turn(url: str, iid: str) -> Iterator[None]:
    """Hold investigation ``iid``'s turn to post, from its evaluation to its comment."""
    with _lock(url, iid, PG_TURN_CLASS, "post-turn"):
        yield


def pg_key(name: str) -> int:
    """A name as the second key of a PostgreSQL advisory lock (a signed 32-bit CRC)."""
    key = zlib.crc32(name.encode("utf-8"))
    return key - 2**32 if key >= 2**31 else key


@contextmanager
def _lock(url: str, iid: str, pg_class: int, prefix: str) -> Iterator[None]:
    engine = store.get_engine(url)
    if engine.dialect.name == "postgresql":
        from sqlalchemy import text

        with engine.connect() as conn, conn.begin():
            conn.execute(text("SELECT pg_advisory_xact_lock(:c, :k)"), {"c": pg_class, "k": pg_key(iid)})
            yield
        return
    token = _take_lease(url, iid, prefix)
    try:
        yield
    finally:
        _give_back(url, iid, token, prefix)


def lease_key(iid: str, prefix: str = "post-lease") -> str:
    return f"{prefix}:{iid}"


def _take_lease(url: str, iid: str, prefix: str) -> str:
    token = uuid.uuid4().hex
    wait = _FIRST_WAIT
    while True:
        with store.session(url) as s:  # BEGIN IMMEDIATE: one taker at a time
            row = s.get(m.Meta, lease_key(iid, prefix))
            if row is None or not _held(row.value):
                value = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": token,
                                    "until": time.time() + LEASE_SECONDS})
                if row is None:
                    s.add(m.Meta(key=lease_key(iid, prefix), value=value))
                else:
                    row.value = value
                return token
        time.sleep(wait)
        wait = min(wait * 2, _LONGEST_WAIT)


def _give_back(url: str, iid: str, token: str, prefix: str) -> None:
    with store.session(url) as s:
        row = s.get(m.Meta, lease_key(iid, prefix))
        if row is not None and _holder(row.value).get("token") == token:
            s.delete(row)


def _holder(value: str) -> dict:
    try:
        data = json.loads(value)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _held(value: str) -> bool:
    """Whether the lease ``value`` still holds: not expired, and its holder may be running."""
    lease = _holder(value)
    until = lease.get("until")
    if not isinstance(until, (int, float)) or until <= time.time():
        return False
    if lease.get("host") == socket.gethostname() and isinstance(lease.get("pid"), int):
        return process_running(lease["pid"])
    return True


def process_running(pid: int) -> bool:
    """Whether the process ``pid`` of this host may be running."""
    if pid <= 0:
        return False
    if os.name == "nt":  # signal 0 would end the process there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process, or a platform that cannot tell: assume it runs
    return True

