"""Stored evaluation pieces: read before an evaluation, written after it (see ``triage.rules.engine.memo``).

What each piece read is JSON text; its data, msgpack (plain lists, texts and
numbers, as JSON holds them, decoded the same)."""

from __future__ import annotations

from msgspec.msgpack import decode as unpack
from msgspec.msgpack import encode as pack
from sqlalchemy import delete, insert, select
from sqlmodel import Session

from triage.kb import tables
from triage.kb.db import json_text
from triage.kb.investigations import _json_decode
from triage.rules.engine.memo import Memo

#: The piece that holds what every piece rests on.
KEY = ""
#: Bytes of pieces' data written by one statement, at most (and one piece).
BATCH = 4_000_000


def load(s: Session, iid: str, code: str, *, full: bool = False) -> Memo:
    """The stored pieces of ``iid``'s last evaluation, as a memo for the next (``full``:
    none of them, for an evaluation that works every piece out again: not read at all)."""
    if full:
        memo = Memo()
        memo.code = code
        return memo
    t = tables.EvaluationPiece
    decode = _json_decode()
    stored, key = {}, ""
    for name, reads, data in s.execute(select(t.c.name, t.c.reads, t.c.data).where(t.c.investigation_id == iid)):
        if name == KEY:
            key = unpack(data)
        else:
            stored[name] = (decode(reads), unpack(data))
    memo = Memo(stored, key)
    memo.code = code
    return memo


def save(s: Session, iid: str, memo: Memo) -> None:
    """Keep this evaluation's pieces: those worked out anew replace their old
    selves, those no longer part of it go."""
    if not memo.stored:  # everything was worked out (a first evaluation, a new key, or --full)
        stored, same = _as_stored(s, iid, memo)
        names = [n for n in (KEY, *memo.pieces) if n not in same]
        stale = [n for n in stored if n not in same]  # of no use, or stored otherwise
    else:
        names = [KEY, *(n for n in memo.worked if n in memo.pieces)]
        stale = names + [n for n in memo.stored if n not in memo.pieces]
    # A few megabytes at a time: the pieces of a large investigation name many runs,
    # and all of their data at once would be the evaluation's peak of memory.
    rows, size = [], 0
    for n in names:
        reads, data = _encoded(memo, n)
        rows.append(dict(investigation_id=iid, name=n, reads=reads, data=data))
        size += len(data)
        if size > BATCH:
            _write(s, iid, stale, rows)
            stale, rows, size = [], [], 0
    _write(s, iid, stale, rows)


def _encoded(memo: Memo, name: str) -> tuple[str, bytes]:
    """A piece as it is stored: what it read as JSON text, its data as msgpack."""
    reads, data = ([], memo.key) if name == KEY else memo.pieces[name]
    return json_text(reads), pack(data)


def _as_stored(s: Session, iid: str, memo: Memo) -> tuple[list[str], set[str]]:
    """The pieces stored for ``iid``, and those of them that ``memo`` holds the same: a whole
    evaluation of what was evaluated leaves them as they are, not deleted and written again.
    Read one at a time (a wide investigation's are tens of megabytes)."""
    t = tables.EvaluationPiece
    stored, same = [], set()
    q = select(t.c.name, t.c.reads, t.c.data).where(t.c.investigation_id == iid)
    for name, reads, data in s.execute(q, execution_options={"yield_per": 8}):  # eight rows held at a time
        stored.append(name)
        if (name == KEY or name in memo.pieces) and _encoded(memo, name) == (reads, bytes(data)):
            same.add(name)
    return stored, same


def _write(s: Session, iid: str, stale: list[str], rows: list[dict]) -> None:
    """Delete the pieces ``stale``, then insert ``rows``."""
    t = tables.EvaluationPiece
    for i in range(0, len(stale), 500):
        s.execute(delete(t).where(t.c.investigation_id == iid, t.c.name.in_(stale[i:i + 500])))
    if rows:
        s.execute(insert(t), rows)
