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
