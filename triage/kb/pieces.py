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
    t = tables.EvaluationPiece
    dump = json_text
    if not memo.stored:  # everything was worked out (a first evaluation, or a new key)
        s.execute(delete(t).where(t.c.investigation_id == iid))
        names = list(memo.pieces)
    else:
        names = [n for n in memo.worked if n in memo.pieces]
        gone = [n for n in memo.stored if n not in memo.pieces]
        stale = names + gone + [KEY]
        for i in range(0, len(stale), 500):
            s.execute(delete(t).where(t.c.investigation_id == iid, t.c.name.in_(stale[i:i + 500])))
    # A few megabytes at a time: the pieces of a large investigation name many runs,
    # and all of their data at once would be the evaluation's peak of memory.
    rows, size = [dict(investigation_id=iid, name=KEY, reads="[]", data=pack(memo.key))], 0
    for n in names:
        reads, data = memo.pieces[n]
        rows.append(dict(investigation_id=iid, name=n, reads=dump(reads), data=pack(data)))
        size += len(rows[-1]["data"])
        if size > BATCH:
            s.execute(insert(t), rows)
            rows, size = [], 0
    if rows:
        s.execute(insert(t), rows)
