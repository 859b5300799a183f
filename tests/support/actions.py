"""A workflow run as the fake GitHub serves it to `add-run --from-github`, and the runs it leaves."""

from __future__ import annotations

import sqlite3
from pathlib import Path


REPO, PR, RUN = "sgl-project/sglang", 30433, 29600000000


SHA = "0aac97600000000000000000000000000000beef"


def stamped(*lines: str) -> str:
    """A job log as GitHub serves it: a timestamp before every line."""
    return "".join(f"2026-07-10T08:{i // 60:02d}:{i % 60:02d}.1234567Z {line}\n" for i, line in enumerate(lines))


def rows(tmp_path: Path, run_id: str = str(RUN)) -> dict[str, dict]:
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    con.row_factory = sqlite3.Row
    got = con.execute("select * from run where run_id = ? order by config", (run_id,)).fetchall()
    return {r["config"]: dict(r) for r in got}
