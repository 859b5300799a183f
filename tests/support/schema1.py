"""A knowledge base at schema version 1, as the first triage wrote it."""

from __future__ import annotations

import sqlite3
from pathlib import Path


SCHEMA1 = Path(__file__).resolve().parents[1] / "kb"


def first_schema_sqlite(path: Path, *, meta_row: bool = True) -> None:
    """A knowledge base file as the first schema made it, with one investigation and one run."""
    sql = (SCHEMA1 / "schema1.sqlite.sql").read_text()
    if not meta_row:
        sql = sql.replace("INSERT INTO meta", "-- INSERT INTO meta")
    con = sqlite3.connect(path)
    con.executescript(sql)
    con.executescript(SEED)
    con.commit()
    con.close()


SEED = """
INSERT INTO investigation (id, repo, pr, title, metric, direction, gate, source, spec)
VALUES ('kimik26-disagg', 'sgl-project/sglang', 30433, 't', 'gsm8k', 'higher', NULL, '', '{}');
INSERT INTO signature (id, kind, source, spec) VALUES ('old-sig', 'infra', 'gone.yaml', '{"id": "old-sig"}');
INSERT INTO run (investigation_id, run_id, config, status, metrics, provenance, excluded, created_at, updated_at)
VALUES ('kimik26-disagg', '1001', 'kimik26-fp8-1k1k-1p1d', 'failed', '{"gsm8k": {"value": 0.879, "n": 1319}}',
        '{"image": "v1"}', 0, '2026-06-20 10:00:00.000000', '2026-06-21 10:00:00.000000');
"""
