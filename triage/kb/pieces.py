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
#: What the name of the row starts with that holds what was appended to those long texts since
#: they were written whole (``~~f:CONFIG``): an add-run of a new build appends its provenance and
#: its group of repeats to a wide base's 9 MB of them, and writes what it appended alone.
TAIL_ROW = APART_ROW * 2
#: Long texts shorter than this (in characters, together) are written whole whenever they change.
TAIL_FROM = 1 << 16
#: What was appended is written alone while it is at most this share of the texts it ends.
TAIL_SHARE = 1 / 8


class _Later:
    """The long texts of one stored piece, read from their own rows when first asked for: the
    texts as written whole, each cut at a place (``keeps``) and followed by what was appended
    since (:data:`TAIL_ROW`)."""

    def __init__(self, s: Session, iid: str, name: str) -> None:
        self._s, self._iid, self._name = s, iid, name
        self.texts: Optional[list] = None
        self.keeps: list[int] = []  # where each text written whole is cut, before what was appended

    def part(self, i: int) -> _Text:
        return _Text(self, i)

    def read(self) -> list:
        if self.texts is None:
            t = tables.EvaluationPiece
            rows = dict(self._s.execute(select(t.c.name, t.c.data).where(
                t.c.investigation_id == self._iid, t.c.name.in_([APART_ROW + self._name, TAIL_ROW + self._name]))).all())
            whole = unpack(rows[APART_ROW + self._name])
            tail = rows.get(TAIL_ROW + self._name)
            if tail is None:
                self.keeps, self.texts = [len(text) for text in whole], whole
            else:
                tails = unpack(tail)
                self.keeps = [keep for keep, _ in tails]
                self.texts = [text[:keep] + more for text, (keep, more) in zip(whole, tails)]
        return self.texts


class _Text:
    """One of a stored piece's long texts, read when called (:class:`_Later`)."""

    __slots__ = ("later", "i")

    def __init__(self, later: _Later, i: int) -> None:
        self.later, self.i = later, i

    def __call__(self) -> str:
        return self.later.read()[self.i]


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
        same, tails = _kept_apart(memo, names)
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
        if n in tails:  # what was appended to its long texts, alone
            data = pack(tails[n])
            rows.append(dict(investigation_id=iid, name=TAIL_ROW + n, reads="[]", data=data))
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


def _kept_apart(memo: Memo, names: list[str]) -> tuple[set[str], dict[str, list]]:
    """Of the pieces ``names`` worked out again, the rows of long texts that stand as they are
    stored; and for each piece whose texts only grew at their ends, what to write as its
    :data:`TAIL_ROW` (:func:`_tail`), its texts' row written whole standing."""
    same: set[str] = set()
    tails: dict[str, list] = {}
    for n in names:
        if _apart_kept(memo, n):
            same.update((APART_ROW + n, TAIL_ROW + n))
        elif (tail := _tail(memo, n)) is not None:
            same.add(APART_ROW + n)
            tails[n] = tail
    return same, tails


def _tail(memo: Memo, name: str) -> Optional[list]:
    """What the long texts of the piece ``name`` add to those of the stored one, which were
    read: for each, ``[cut, text]``, the place where the text written whole is cut (its end,
    or before its last character: the "]" of a JSON list) and what follows.  None, and the
    texts are written whole: when one changed elsewhere, when they are short
    (:data:`TAIL_FROM`), or when what follows would pass :data:`TAIL_SHARE` of them."""
    places = APART.get(name[:2], ())
    kept = memo.stored.get(name)
    if not places or kept is None or not all(isinstance(kept[1][p], _Text) for p in places):
        return None
    later = kept[1][places[0]].later
    if later.texts is None:  # not read: they were worked out whole
        return None
    data = memo.pieces[name][1]
    texts = [data[p] if isinstance(data[p], str) else data[p]() for p in places]
    whole = sum(map(len, texts))
    if whole < TAIL_FROM:
        return None
    out = []
    for text, was, keep in zip(texts, later.texts, later.keeps):
        cut = next((c for c in ((keep, keep - 1) if keep == len(was) else (keep,))
                    if c >= 0 and text.startswith(was[:c])), None)
        if cut is None:
            return None
        out.append([cut, text[cut:]])
    return out if sum(len(more) for _, more in out) <= whole * TAIL_SHARE else None


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
    return [name, APART_ROW + name, TAIL_ROW + name] if APART.get(name[:2]) else [name]


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
            piece = name.lstrip(APART_ROW)  # a piece's name never starts with it
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
