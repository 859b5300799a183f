"""Stored evaluation pieces: read before an evaluation, written after it (see ``triage.rules.engine.memo``).

What each piece read is JSON text; its data, msgpack (plain lists, texts and
numbers, as JSON holds them, decoded the same)."""

from __future__ import annotations

from typing import Any, Collection, Optional

from msgspec.msgpack import decode as unpack
from msgspec.msgpack import encode as pack
from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from triage.kb import tables
from triage.kb.apart import (APART_ROW, TAIL_ROW, apart_name, groups, own_row, piece_of, plain, put_off, row_names,
                             standing, tail_name, texts)
from triage.kb.db import conflict_insert, json_text
from triage.kb.investigations import _json_decode
from triage.rules.engine.memo import Memo

__all__ = ["APART_ROW", "TAIL_ROW", "load", "plain", "save"]

#: The piece that holds what every piece rests on.
KEY = ""
#: Bytes of pieces' data written by one statement, at most (and one piece).
BATCH = 4_000_000


def load(s: Session, iid: str, code: str, *, full: bool = False) -> Memo:
    """The stored pieces of ``iid``'s last evaluation, as a memo for the next (``full``:
    none of them, for an evaluation that works every piece out again: not read at all).
    A piece's long texts kept apart (:data:`APART_ROW`) are read when something asks for them."""
    if full:
        memo = Memo()
        memo.code = code
        return memo
    t = tables.EvaluationPiece
    decode = _json_decode()
    stored, key = {}, ""
    q = select(t.c.name, t.c.reads, t.c.data).where(t.c.investigation_id == iid,
                                                    func.substr(t.c.name, 1, 1) != APART_ROW)
    for name, reads, data in s.execute(q):
        if name == KEY:
            key = unpack(data)
            continue
        row = unpack(data)
        put_off(s, iid, name, row)  # its long texts kept apart, read when asked for
        stored[name] = (decode(reads), row)
    memo = Memo(stored, key)
    memo.code = code
    return memo


def save(s: Session, iid: str, memo: Memo) -> bool:
    """Keep this evaluation's pieces: those worked out anew replace their old
    selves, those no longer part of it go.  Whether anything was written: False when
    every piece was found stored as it is, and no other piece was stored."""
    if not memo.stored:  # everything was worked out (a first evaluation, a new key, or --full)
        stored, same = _as_stored(s, iid, memo)
        tails: dict[str, list] = {}
        names = [KEY, *memo.pieces]
        stale = [n for n in stored if n not in same]  # of no use, or stored otherwise
    else:
        names = [KEY, *(n for n in memo.worked if n in memo.pieces)]
        same, tails = standing(memo, names)
        stale = [row for n in names + [n for n in memo.stored if n not in memo.pieces] for row in row_names(n)
                 if row not in same]
    # A few megabytes at a time: the pieces of a large investigation name many runs,
    # and all of their data at once would be the evaluation's peak of memory.
    rows, size, written = [], 0, set()
    for n in names:
        for name, reads, data in _rows(memo, n, same):
            rows.append(dict(investigation_id=iid, name=name, reads=reads, data=data))
            size += len(data)
        for g in range(len(groups(n))):  # where a group of its long texts changed, alone
            added = tails.get(tail_name(n, g))
            if added is not None:
                data = pack(added)
                rows.append(dict(investigation_id=iid, name=tail_name(n, g), reads="[]", data=data))
                size += len(data)
        if size > BATCH:
            written.update(_write(s, rows))
            rows, size = [], 0
    written.update(_write(s, rows))
    _delete(s, iid, [n for n in stale if n not in written])
    return bool(stale) or bool(written)


def _rows(memo: Memo, name: str, same: Collection[str] = (),
          only: Optional[str] = None) -> list[tuple[str, str, bytes]]:
    """A piece as it is stored: its row (what it read as JSON text, its data as msgpack), and a
    row for each group of its long texts kept apart, if it has any; but those among ``same``
    (stored as they are: not encoded again), or all but ``only``."""
    reads, data = ([], memo.key) if name == KEY else memo.pieces[name]
    out = []
    if only in (None, name) and name not in same:
        out.append((name, _reads_text(reads), pack(own_row(name, data))))
    for g, places in enumerate(groups(name)):
        row = apart_name(name, g)
        if only in (None, row) and row not in same:
            out.append((row, "[]", pack(texts(data, places))))
    return out


def _reads_text(reads: Any) -> str:
    """What a piece read, as the JSON text it is stored as: spaces after it up to a whole
    number of :data:`READS_ROOM` characters.  What a piece read changes in a few characters
    (a config's count and newest key, a digit longer once in a while); stored in a row of the
    same size, the piece's data unchanged is not written again (:func:`_write`)."""
    text = json_text(reads)
    return text + " " * (-len(text) % READS_ROOM)


#: What a piece read is stored in a whole number of these characters (:func:`_reads_text`).
READS_ROOM = 64


def _as_stored(s: Session, iid: str, memo: Memo) -> tuple[list[str], set[str]]:
    """The rows stored for ``iid``, and those of them that ``memo`` holds the same: a whole
    evaluation of what was evaluated leaves them as they are, not deleted and written again.
    Read a few at a time (a wide investigation's are tens of megabytes): the pieces' own rows,
    then those of their long texts kept apart, each compared with its piece encoded again."""
    t = tables.EvaluationPiece
    stored, same = [], set()
    first = func.substr(t.c.name, 1, 1)
    for rows in (first != APART_ROW, first == APART_ROW):
        q = select(t.c.name, t.c.reads, t.c.data).where(t.c.investigation_id == iid, rows)
        for name, reads, data in s.execute(q, execution_options={"yield_per": 8}):  # eight rows held at a time
            stored.append(name)
            piece = piece_of(name)
            if piece == KEY or piece in memo.pieces:
                if any((mine, kept) == (reads, bytes(data)) for _, mine, kept in _rows(memo, piece, only=name)):
                    same.add(name)
    return stored, same


def _write(s: Session, rows: list[dict]) -> list[str]:
    """Write ``rows``, each over the stored row of its name if there is one; the names written.
    SQLite writes a row of the same size over the old one in place, and of its pages only
    those whose bytes differ: a piece worked out again to the same data under other reads (a
    config's count and newest key after a run was added to it, :func:`_reads_text`) writes a
    page or two, not the megabytes it holds, as a deletion and an insertion would."""
    t = tables.EvaluationPiece
    if not rows:
        return []
    upsert = conflict_insert(s.get_bind().dialect.name)
    if upsert is None:  # another database: the rows of these names deleted first
        _delete(s, rows[0]["investigation_id"], [row["name"] for row in rows])
        s.execute(insert(t), rows)
    else:
        stmt = upsert(t)
        s.execute(stmt.on_conflict_do_update(index_elements=[t.c.investigation_id, t.c.name],
                                             set_={"reads": stmt.excluded.reads, "data": stmt.excluded.data}), rows)
    return [row["name"] for row in rows]


def _delete(s: Session, iid: str, names: list[str]) -> None:
    """Delete the pieces' rows ``names``."""
    t = tables.EvaluationPiece
    for i in range(0, len(names), 500):
        s.execute(delete(t).where(t.c.investigation_id == iid, t.c.name.in_(names[i:i + 500])))
