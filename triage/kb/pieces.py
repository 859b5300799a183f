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
    kept: dict[str, tuple[str, bytes]] = {}
    if not memo.stored:  # everything was worked out (a first evaluation, a new key, or --full)
        # what is stored already, each piece as its texts: a piece worked out the same (a
        # whole evaluation of what was evaluated) is left as it is, not deleted and written again
        kept = {name: (reads, bytes(data)) for name, reads, data
                in s.execute(select(t.c.name, t.c.reads, t.c.data).where(t.c.investigation_id == iid))}
        names = [KEY, *memo.pieces]
        stale = [n for n in kept if n != KEY and n not in memo.pieces]
    else:
        names = [KEY, *(n for n in memo.worked if n in memo.pieces)]
        stale = names + [n for n in memo.stored if n not in memo.pieces]
    # A few megabytes at a time: the pieces of a large investigation name many runs,
    # and all of their data at once would be the evaluation's peak of memory.
    rows, size = [], 0
    for n in names:
        reads, data = ([], memo.key) if n == KEY else memo.pieces[n]
        row = (dump(reads), pack(data))
        was = kept.get(n)
        if was == row:
            continue
        if was is not None:
            stale.append(n)
        rows.append(dict(investigation_id=iid, name=n, reads=row[0], data=row[1]))
        size += len(row[1])
        if size > BATCH:
            _write(s, iid, stale, rows)
            stale, rows, size = [], [], 0
    _write(s, iid, stale, rows)


def _write(s: Session, iid: str, stale: list[str], rows: list[dict]) -> None:
    """Delete the pieces ``stale``, then insert ``rows``."""
    t = tables.EvaluationPiece
    for i in range(0, len(stale), 500):
        s.execute(delete(t).where(t.c.investigation_id == iid, t.c.name.in_(stale[i:i + 500])))
    if rows:
        s.execute(insert(t), rows)
