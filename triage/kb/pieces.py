"""Stored evaluation pieces: read before an evaluation, written after it (see ``triage.rules.engine.memo``).

What each piece read is JSON text; its data, msgpack (plain lists, texts and
numbers, as JSON holds them, decoded the same)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from msgspec.msgpack import decode as unpack
from msgspec.msgpack import encode as pack
from sqlalchemy import delete, func, insert, select
from sqlmodel import Session

from triage.kb import tables
from triage.kb.db import json_text
from triage.kb.investigations import _json_decode
from triage.rules.engine.facts import APART
from triage.rules.engine.memo import Memo, Reads

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
        places = APART.get(name[:2], ())
        if places and row[places[0]] is None:  # its long texts kept apart
            later = _Later(s, iid, name)
            for i, place in enumerate(places):
                row[place] = later.part(i)
        stored[name] = (decode(reads), row)
    memo = Memo(stored, key)
    memo.code = code
    return memo


#: What a stored row's name starts with when it holds the long texts of the piece it
#: names (``~f:CONFIG``: a config's distinct provenances and groups of repeats, in a wide
#: investigation at a million runs 113 of the 170 MB of its pieces); :func:`load` reads them
#: only when something looks into them (an add-run, into the config it adds to).
APART_ROW = "~"


class _Later:
    """The long texts of one stored piece, read from their own row when first asked for."""

    def __init__(self, s: Session, iid: str, name: str) -> None:
        self._s, self._iid, self._name = s, iid, name
        self._texts: Optional[list] = None

    def part(self, i: int) -> Callable[[], str]:
        return lambda: self._read()[i]

    def _read(self) -> list:
        if self._texts is None:
            t = tables.EvaluationPiece
            data = self._s.execute(select(t.c.data).where(t.c.investigation_id == self._iid,
                                                          t.c.name == APART_ROW + self._name)).scalar_one()
            self._texts = unpack(data)
        return self._texts


def save(s: Session, iid: str, memo: Memo) -> bool:
    """Keep this evaluation's pieces: those worked out anew replace their old
    selves, those no longer part of it go.  Whether anything was written: False when
    every piece was found stored as it is, and no other piece was stored."""
    if not memo.stored:  # everything was worked out (a first evaluation, a new key, or --full)
        stored, same = _as_stored(s, iid, memo)
        names = [KEY, *memo.pieces]
        stale = [n for n in stored if n not in same]  # of no use, or stored otherwise
    else:
        names = [KEY, *(n for n in memo.worked if n in memo.pieces)]
        same = {APART_ROW + n for n in names if _apart_kept(memo, n)}
        stale = [row for n in names + [n for n in memo.stored if n not in memo.pieces] for row in _row_names(n)
                 if row not in same]
    # A few megabytes at a time: the pieces of a large investigation name many runs,
    # and all of their data at once would be the evaluation's peak of memory.
    rows, size, wrote = [], 0, bool(stale)
    for n in names:
        if same and all(row in same for row in _row_names(n)):
            continue  # stored as it is: not encoded again
        for name, reads, data in _rows(memo, n, only=n if APART_ROW + n in same else None):
            if name in same:
                continue
            rows.append(dict(investigation_id=iid, name=name, reads=reads, data=data))
            size += len(data)
        if size > BATCH:
            _write(s, iid, stale, rows)
            stale, rows, size, wrote = [], [], 0, True
    _write(s, iid, stale, rows)
    return wrote or bool(rows)


def _rows(memo: Memo, name: str, only: Optional[str] = None) -> list[tuple[str, str, bytes]]:
    """A piece as it is stored: its row (what it read as JSON text, its data as msgpack),
    and the row of its long texts kept apart, if it has any (``only``: that one of them)."""
    reads, data = ([], memo.key) if name == KEY else memo.pieces[name]
    places = APART.get(name[:2], ()) if name != KEY else ()
    if not places:
        return [(name, json_text(reads), pack(data))] if only in (None, name) else []
    out = []
    if only in (None, name):
        row = list(data)
        for p in places:
            row[p] = None
        out.append((name, json_text(reads), pack(row)))
    if only in (None, APART_ROW + name):
        texts = [data[p] if isinstance(data[p], str) else data[p]() for p in places]  # a stored one's: read now
        out.append((APART_ROW + name, "[]", pack(texts)))
    return out


def _apart_kept(memo: Memo, name: str) -> bool:
    """Whether a piece worked out again keeps the long texts of the stored one (the same
    functions that read them, whether something did or not): its row of them stands as it is."""
    places = APART.get(name[:2], ())
    kept = memo.stored.get(name)
    if not places or kept is None:
        return False
    data, was = memo.pieces[name][1], kept[1]
    return all(data[p] is was[p] and callable(was[p]) for p in places)


def plain(name: str, piece: tuple[Reads, Any]) -> tuple[Reads, Any]:
    """A piece with its long texts kept apart read (:func:`load` leaves them unread): as it is
    sent to another process."""
    reads, data = piece
    places = APART.get(name[:2], ())
    if not any(callable(data[p]) for p in places):
        return piece
    row = list(data)
    for p in places:
        if callable(row[p]):
            row[p] = row[p]()
    return reads, row


def _row_names(name: str) -> list[str]:
    return [name, APART_ROW + name] if APART.get(name[:2]) else [name]


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
            piece = name[len(APART_ROW):] if name.startswith(APART_ROW) else name
            if piece == KEY or piece in memo.pieces:
                if any((mine, kept) == (reads, bytes(data)) for _, mine, kept in _rows(memo, piece, only=name)):
                    same.add(name)
    return stored, same


def _write(s: Session, iid: str, stale: list[str], rows: list[dict]) -> None:
    """Delete the pieces ``stale``, then insert ``rows``."""
    t = tables.EvaluationPiece
    for i in range(0, len(stale), 500):
        s.execute(delete(t).where(t.c.investigation_id == iid, t.c.name.in_(stale[i:i + 500])))
    if rows:
        s.execute(insert(t), rows)
