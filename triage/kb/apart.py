"""The long texts of stored evaluation pieces, kept in rows of their own (see :mod:`triage.kb.pieces`).

A config's facts hold long texts (:data:`triage.rules.engine.facts.APART`), in groups: its
distinct provenances and groups of repeats, read when a valid run is added to the config;
and every run's key and every valid run's, read by an add-run into the config and by what
pools its runs.  In a wide investigation at a million runs they are nine tenths of its
stored pieces, and an add-run looks into a few configs' of them.  Each group is kept in a
row of its own (``~f:CONFIG`` for the first, ``~1f:CONFIG`` for the second), read when
something first looks into one of its texts; where they changed since they were written whole
is kept in another (``~~f:CONFIG``, ``~~1f:CONFIG``): for each text, one stretch of it
replaced.  An add-run of a new build then writes the provenance it appends, not the 9 MB it
appends it to; and the key of a run without a time, which goes among the oldest keys near
the start of the config's, not the 2 MB of keys after it.

They are read in the session that read the pieces, as the evaluation that uses them is.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from msgspec.msgpack import decode as unpack
from sqlalchemy import select
from sqlalchemy.orm import Session

from triage.errors import RuntimeFailure
from triage.kb import tables
from triage.rules.engine.facts import APART
from triage.rules.engine.memo import Memo, Reads

#: What a stored row's name starts with when it holds long texts of the piece it names;
#: :func:`triage.kb.pieces.load` leaves such rows out.
APART_ROW = "~"
#: What the name of the row starts with that holds where a group of long texts changed since
#: they were written whole (one stretch of each replaced).
TAIL_ROW = APART_ROW * 2
#: Long texts shorter than this (in characters, a group together) are written whole whenever they change.
TAIL_FROM = 1 << 16
#: What changed is written alone while the stretches replaced, and what replaces them, are each
#: at most this share of the texts.
TAIL_SHARE = 1 / 8


def groups(name: str) -> tuple[tuple[int, ...], ...]:
    """The places of a piece's long texts, by the row each group is kept in."""
    return APART.get(name[:2], ()) if name else ()


def apart_name(name: str, group: int) -> str:
    return f"{APART_ROW}{group or ''}{name}"


def tail_name(name: str, group: int) -> str:
    return f"{TAIL_ROW}{group or ''}{name}"


def row_names(name: str) -> list[str]:
    """Every row a piece may be stored in: its own, and two for each group of its long texts."""
    return [name, *(row for g in range(len(groups(name))) for row in (apart_name(name, g), tail_name(name, g)))]


def piece_of(row: str) -> str:
    """The piece a stored row is of (a piece's name starts with neither a "~" nor a digit)."""
    bare = row.lstrip(APART_ROW)
    return bare.lstrip("0123456789") if bare != row else row


def put_off(s: Session, iid: str, name: str, row: list) -> None:
    """In a stored piece's row, each group of long texts kept apart as functions that read them."""
    for g, places in enumerate(groups(name)):
        if row[places[0]] is None:
            later = _Later(s, iid, name, g)
            for i, place in enumerate(places):
                row[place] = Text(later, i)


def own_row(name: str, data: Any) -> Any:
    """A piece's data as its own row holds it: its long texts left out."""
    places = [p for group in groups(name) for p in group]
    if not places:
        return data
    row = list(data)
    for p in places:
        row[p] = None
    return row


def texts(data: Any, places: tuple[int, ...]) -> list[str]:
    """A group of a piece's long texts (a stored piece's read now)."""
    return [data[p] if isinstance(data[p], str) else data[p]() for p in places]


class _Later:
    """A group of one stored piece's long texts, read from their rows when first asked for:
    the texts as written whole (``written``), each with one stretch replaced since."""

    def __init__(self, s: Session, iid: str, name: str, group: int) -> None:
        self._s, self._iid, self._name, self._group = s, iid, name, group
        self._transaction = s.get_transaction()  # the one the piece was read in
        self.texts: Optional[list] = None
        self.written: list[str] = []  # the texts as written whole

    def read(self) -> list:
        if self.texts is None:
            if self._s.get_transaction() is not self._transaction or self._transaction is None:
                # the rows may hold another evaluation's texts now, and on SQLite a new
                # transaction would wait for the write lock first
                raise RuntimeFailure(f"a stored piece's long texts ({self._name}) looked into after the session "
                                     "that read the piece ended: this is a bug in triage")
            t = tables.EvaluationPiece
            whole, more = apart_name(self._name, self._group), tail_name(self._name, self._group)
            rows = dict(self._s.execute(select(t.c.name, t.c.data).where(
                t.c.investigation_id == self._iid, t.c.name.in_([whole, more]))).all())
            self.written = unpack(rows[whole])
            tail = rows.get(more)
            self.texts = self.written if tail is None else [spliced(text, *change)
                                                            for text, change in zip(self.written, unpack(tail))]
        return self.texts


def spliced(text: str, cut: int, put: str, resume: Optional[int] = None) -> str:
    """``text`` with what stood from ``cut`` to ``resume`` (its end, if not given) replaced by ``put``."""
    return text[:cut] + put + (text[resume:] if resume is not None else "")


class Text:
    """One of a stored piece's long texts, read when called (with the rest of its group)."""

    __slots__ = ("later", "i")

    def __init__(self, later: _Later, i: int) -> None:
        self.later, self.i = later, i

    def __call__(self) -> str:
        return self.later.read()[self.i]


def standing(memo: Memo, names: list[str]) -> tuple[set[str], dict[str, list]]:
    """Of the pieces ``names`` worked out again, the rows of long texts that stand as they are
    stored; and for each group whose texts changed in one stretch each, what to write as its tail
    row (:func:`_tail`, by that row's name), its row written whole standing."""
    same: set[str] = set()
    tails: dict[str, list] = {}
    for n in names:
        kept = memo.stored.get(n)
        if kept is None:
            continue
        data, was = memo.pieces[n][1], kept[1]
        for g, places in enumerate(groups(n)):
            if all(data[p] is was[p] and isinstance(was[p], Text) for p in places):  # the same, read or not
                same.update((apart_name(n, g), tail_name(n, g)))
            elif (tail := _tail(data, was, places)) is not None:
                same.add(apart_name(n, g))
                tails[tail_name(n, g)] = tail
    return same, tails


def _tail(data: Any, was: Any, places: tuple[int, ...]) -> Optional[list]:
    """Where a group of a piece's long texts differs from the stored piece's as written whole
    (which were read): for each text, ``[cut, put, resume]``, the stretch from ``cut`` to
    ``resume`` of the text written whole replaced by ``put`` (:func:`spliced`).  None, and the
    texts are written whole: when they are short (:data:`TAIL_FROM`), or when what replaces or
    what is replaced would pass :data:`TAIL_SHARE` of them (each text's changes, spread out,
    make one long stretch)."""
    if not all(isinstance(was[p], Text) for p in places):
        return None
    later = was[places[0]].later
    if later.texts is None:  # not read: they were worked out whole
        return None
    now = texts(data, places)
    whole = sum(map(len, now))
    if whole < TAIL_FROM:
        return None
    out = []
    for text, written in zip(now, later.written):
        cut = _same_start(text, written)
        keep = _same_end(text, written, min(len(text), len(written)) - cut)
        out.append([cut, text[cut:len(text) - keep], len(written) - keep])
    # what replaces, and what is replaced (a text that shrank reads its old stretch for nothing)
    changed = max(sum(len(put) for _, put, _ in out), sum(resume - cut for cut, _, resume in out))
    return out if changed <= whole * TAIL_SHARE else None


def _same_start(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` start with alike."""
    return _most(lambda n: a.startswith(b[:n]), min(len(a), len(b)))


def _same_end(a: str, b: str, most: int) -> int:
    """How many characters ``a`` and ``b`` end with alike, at most ``most``."""
    return _most(lambda n: a.endswith(b[len(b) - n:]), most)


def _most(alike: Callable[[int], bool], most: int) -> int:
    """The largest ``n`` up to ``most`` for which ``alike(n)`` holds (it holds for 0, and for
    every number below one it holds for): a binary search, each step a comparison in C (the
    texts are megabytes, a change to them a few characters)."""
    if alike(most):
        return most
    lo, hi = 0, most - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if alike(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def plain(name: str, piece: tuple[Reads, Any]) -> tuple[Reads, Any]:
    """A piece with its long texts kept apart read (:func:`put_off` leaves them unread): as it
    is sent to another process."""
    reads, data = piece
    places = [p for group in groups(name) for p in group]
    if not any(callable(data[p]) for p in places):
        return piece
    row = list(data)
    for p in places:
        if callable(row[p]):
            row[p] = row[p]()
    return reads, row
