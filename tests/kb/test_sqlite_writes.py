"""What a write to a SQLite knowledge base costs in pages: an evaluation replaces megabytes of
stored pieces, and the rows it deletes must not be written over (Debian's SQLite zeroes every
page it frees unless told otherwise)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def _wal_frames(path: Path) -> int:
    """The frames in a knowledge base's write-ahead log (one per page written since the last
    checkpoint)."""
    wal = path.with_name(path.name + "-wal")
    size = wal.stat().st_size if wal.exists() else 0
    return max(0, (size - 32) // (4096 + 24))


def test_deleting_a_large_row_writes_none_of_its_pages(tmp_path) -> None:
    """A stored piece of a megabyte (256 overflow pages) deleted: the transaction writes the few
    pages that point to it, not its freed pages."""
    from sqlalchemy import delete, insert

    from triage.kb import db, models, tables

    path = tmp_path / "kb.sqlite"
    url = f"sqlite:///{path}"
    engine = db.get_engine(url)
    t = tables.EvaluationPiece
    try:
        with db.session(url) as s:
            s.add(models.Investigation(id="i", repo="o/r", pr=1, title="t", metric="m", spec={}))
            s.flush()
            s.execute(insert(t), [dict(investigation_id="i", name="f:big", reads="[]", data=b"\xab" * (1 << 20))])
        raw = sqlite3.connect(path)
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw.close()
        assert _wal_frames(path) == 0
        with engine.begin() as c:
            c.execute(delete(t).where(t.c.name == "f:big"))
        assert 0 < _wal_frames(path) < 16  # the table's page and the free list's, not 256 zeroed pages
    finally:
        db.dispose_engines()


def _stored(url: str, name: str) -> tuple:
    from sqlalchemy import select

    from triage.kb import db, tables

    t = tables.EvaluationPiece
    with db.session(url) as s:
        return tuple(s.execute(select(t.c.reads, t.c.data).where(t.c.name == name)).one())


def test_a_piece_saved_again_writes_only_the_pages_that_changed(tmp_path) -> None:
    """A piece worked out again to the same data, under other reads (a config's fingerprint
    after a run was added to it, a digit longer), is written over its stored row: what it read
    is stored with room to grow by a few characters, so that the row keeps its size, and SQLite
    writes the pages that differ, not the megabyte of its data again.  One whose data grew is
    written whole; a stored piece no longer part of the evaluation goes."""
    from triage.kb import db, models, pieces
    from triage.rules.engine.memo import Memo

    path = tmp_path / "kb.sqlite"
    url = f"sqlite:///{path}"
    big = [list(range(i, i + 1000)) for i in range(0, 200_000, 1000)]  # about a megabyte, packed
    try:
        with db.session(url) as s:
            s.add(models.Investigation(id="i", repo="o/r", pr=1, title="t", metric="m", spec={}))
            s.flush()
            first = Memo()
            first.key = "k"
            first.pieces = {"q:big": ([["c", "base", "99:999"]], big), "r:gone": ([], [1])}
            pieces.save(s, "i", first)
        raw = sqlite3.connect(path)
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw.close()
        with db.session(url) as s:
            again = pieces.load(s, "i", "")
            # a config's count and newest key one digit longer (999,999 runs, then a million)
            again.pieces = {"q:big": ([["c", "base", "100:1000"]], big)}
            again.worked = ["q:big"]
            pieces.save(s, "i", again)
        assert 0 < _wal_frames(path) < 16  # the row's first page, the index, the table: not 250 pages
        assert _stored(url, "q:big")[0].rstrip() == '[["c","base","100:1000"]]'
        with db.session(url) as s:
            assert pieces.load(s, "i", "").stored.keys() == {"q:big"}
            grown = pieces.load(s, "i", "")
            grown.pieces = {"q:big": ([["c", "base", "12:102"]], big + [[1]])}
            grown.worked = ["q:big"]
            pieces.save(s, "i", grown)
        with db.session(url) as s:
            assert pieces.load(s, "i", "").stored["q:big"][1] == big + [[1]]
    finally:
        db.dispose_engines()
