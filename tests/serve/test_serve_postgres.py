"""`triage serve` on the team set-up's database: the real PostgreSQL server."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import create_engine, text

from tests.support.serving import Server, fixture_bytes, with_run
from tests.support.postgres import database
from tests.support.serve import PR, REPO, RUN, WITH_PR, add_run, write_rules

pytestmark = pytest.mark.postgres


def settled(url: str, count: int, timeout: float = 60) -> list[tuple]:
    engine = create_engine(url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with engine.connect() as con:
                rows = con.execute(text("select id, state, attempts from delivery order by received_at")).all()
            if len(rows) >= count and all(r[1] not in ("queued", "running") for r in rows):
                return [tuple(r) for r in rows]
            time.sleep(0.2)
        raise AssertionError(f"not settled: {rows}")
    finally:
        engine.dispose()


@pytest.mark.slow
def test_the_server_keeps_its_queue_and_runs_in_postgresql(fake_github, tmp_path):
    write_rules(tmp_path)
    add_run(fake_github, RUN)
    add_run(fake_github, RUN + 1)
    with database() as url:
        srv = Server(tmp_path, fake_github, "--workers", "2", env={"TRIAGE_DB": url}).start()
        try:
            body = fixture_bytes(WITH_PR)
            assert srv.send(body, "workflow_run", "pg-1").json()["outcome"] == "queued"
            assert srv.send(body, "workflow_run", "pg-1").json()["outcome"] == "duplicate"
            assert srv.send(with_run(body, RUN + 1), "workflow_run", "pg-2").status_code == 202
            assert settled(url, 2) == [("pg-1", "done", 1), ("pg-2", "done", 1)]
            (comment,) = fake_github.comments(REPO, PR)
            assert str(RUN) in comment["body"] and str(RUN + 1) in comment["body"]
            engine = create_engine(url)
            with engine.connect() as con:
                assert con.execute(text("select count(*) from run")).scalar() == 4
            engine.dispose()
            assert not (tmp_path / "kb.sqlite").exists()
        finally:
            srv.stop()
