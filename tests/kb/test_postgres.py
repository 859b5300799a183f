"""The team deployment: the same flow against the real PostgreSQL server.

Uses a fresh database per test module on the server named by TRIAGE_TEST_PG
(default: the local server, user postgres, database test). Outside CI a server
that cannot be reached skips these tests; with TRIAGE_REQUIRE_PG=1 (set by
.ci/run) it fails them instead.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLE_RUNS, without_written
from tests.support.postgres import database

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg_url():
    with database() as url:
        yield url


@pytest.fixture
def fresh_pg_url():
    with database() as url:
        yield url


def test_full_flow_on_postgres(cli, rules_dir, pg_url):
    r = cli("--db", pg_url, "import", str(EXAMPLE_RUNS))
    assert r.code == 0, r.err
    r = cli("--db", pg_url, "report", "--pr", "30433", "--format", "json")
    assert r.code == 0, r.err
    statuses = {h["id"]: h["status"] for h in json.loads(r.out)["hypotheses"]}
    assert statuses["image-regression"] == "confirmed"
    assert statuses["attention-backend"] == "ruled_out"
    # the same answer as SQLite, byte for byte
    cli("import", str(EXAMPLE_RUNS))
    sqlite = cli("report", "--pr", "30433", "--format", "json")
    assert sqlite.out == r.out


def test_add_run_updates_and_history_on_postgres(cli, rules_dir, pg_url):
    cli("--db", pg_url, "import", str(EXAMPLE_RUNS))
    r = cli("--db", pg_url, "add-run", "--pr", "30433", "--run-id", "28907609511",
            "--config", "kimik26-fp8-1k1k-1p1d-nocudagraph", "--metric", "gsm8k=0.944/1319")
    assert r.code == 0, r.err
    assert "hip-graph: ruled_out → confirmed" in r.out
    r = cli("--db", pg_url, "history", "--pr", "30433")
    assert "hip-graph: ruled_out → confirmed" in r.out
    # idempotent: the same call again changes nothing
    r = cli("--db", pg_url, "add-run", "--pr", "30433", "--run-id", "28907609511",
            "--config", "kimik26-fp8-1k1k-1p1d-nocudagraph", "--metric", "gsm8k=0.944/1319")
    assert "→" not in r.out


def test_bad_import_leaves_postgres_untouched(cli, rules_dir, pg_url, tmp_path):
    cli("--db", pg_url, "import", str(EXAMPLE_RUNS))
    before = cli("--db", pg_url, "export", "--pr", "30433").out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"investigation": "kimik26-disagg", "run_id": "new", "config": "c", "status": "failed"}\n'
                   '{"investigation": "kimik26-disagg", "run_id": "x", "config": "c", "status": "failed", "metrics": {"a": "high"}}\n')
    r = cli("--db", pg_url, "import", str(bad))
    assert r.code == 2 and "bad.jsonl:2" in r.err
    assert cli("--db", pg_url, "export", "--pr", "30433").out == before


def test_unreachable_database_is_a_one_line_error(cli, rules_dir):
    r = cli("--db", "postgresql+psycopg://postgres@127.0.0.1:1/none?connect_timeout=2", "report", "--pr", "30433")
    assert r.code == 1
    assert r.err.startswith("Error: cannot open the knowledge base postgresql+psycopg://postgres@127.0.0.1:1/none")
    assert "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_bulk_import_on_postgres(cli, rules_dir, fresh_pg_url, tmp_path, monkeypatch):
    """The bulk upsert (INSERT ... ON CONFLICT DO UPDATE) in several batches,
    a later duplicate in one batch, re-import, CSV: as on SQLite."""
    from triage.ingest import importer

    monkeypatch.setattr(importer, "BATCH", 10)
    lines = EXAMPLE_RUNS.read_text().splitlines()
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines[:3] + [lines[2]] + lines[3:]) + "\n")  # run 3 twice in the first batch
    r = cli("--db", fresh_pg_url, "import", str(path))
    assert r.code == 0, r.err
    assert "imported 34 run(s)" in r.out and "33 new, 1 updated" in r.out
    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    assert without_written(cli("--db", fresh_pg_url, "export", "--pr", "30433").out) == \
        without_written(cli("export", "--pr", "30433").out)
    r = cli("--db", fresh_pg_url, "import", str(EXAMPLE_RUNS))
    assert r.code == 0 and "0 new, 33 updated" in r.out
    csv_path = tmp_path / "runs.csv"
    assert cli("--db", fresh_pg_url, "export", "--pr", "30433", "-o", str(csv_path)).code == 0
    r = cli("--db", fresh_pg_url, "import", str(csv_path))
    assert r.code == 0 and "0 new, 33 updated" in r.out
    assert without_written(cli("--db", fresh_pg_url, "export", "--pr", "30433").out) == \
        without_written(cli("export", "--pr", "30433").out)
    pg = cli("--db", fresh_pg_url, "report", "--pr", "30433", "--format", "json").out
    assert pg == cli("report", "--pr", "30433", "--format", "json").out


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_out_of_domain_values_are_refused_alike_on_both_databases(cli, rules_dir, fresh_pg_url, tmp_path, db):
    url = fresh_pg_url if db == "postgres" else str(tmp_path / "kb.sqlite")
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    export = cli("--db", url, "export", "--pr", "30433").out
    base = ["--db", url, "add-run", "--pr", "30433", "--config", "c", "--status", "passed"]
    cases = [
        (["--run-id", "1", "--note", "a\x00b"], "Error: --note: a NUL character is not allowed"),
        (["--run-id", "1", "--set", "sha=\x00"], "Error: --set sha: a NUL character is not allowed"),
        (["--run-id", ""], "Error: --run-id is empty"),
        (["--run-id", "1", "--time", "0001-01-01T00:00+14:00"],
         "Error: time '0001-01-01T00:00+14:00': out of range; expected a year from 1970 to 9998 (in UTC)"),
    ]
    for args, message in cases:
        r = cli(*base, *args)
        assert (r.code, r.err.strip()) == (2, message)
    records = tmp_path / "nul.jsonl"
    records.write_text(json.dumps({"investigation": "kimik26-disagg", "run_id": "2", "config": "c",
                                   "status": "passed", "note": "a\x00b"}) + "\n")
    r = cli("--db", url, "import", str(records))
    assert (r.code, r.err.strip()) == (2, f"Error: {records}:1: note: a NUL character is not allowed")
    r = cli("--db", url, "report", "--pr", "99999999999999999999")
    assert r.code == 2 and "2147483647" in r.err
    assert cli("--db", url, "export", "--pr", "30433").out == export


def test_incremental_evaluation_equals_a_whole_one_on_postgres(cli, rules_dir, fresh_pg_url, tmp_path):
    """The pieces' fingerprints (grouped counts, provenance keys through ->>) on PostgreSQL:
    after each change the report that reuses pieces is the whole evaluation's."""
    db = ["--db", fresh_pg_url]
    assert cli(*db, "import", str(EXAMPLE_RUNS)).code == 0
    steps = [
        ["add-run", "--pr", "30433", "--run-id", "61", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "failed",
         "--metric", "gsm8k=0.881/1319"],
        ["add-run", "--pr", "30433", "--run-id", "62", "--config", "kimik26-fp8-1k1k-1p1d-imagebisect",
         "--status", "passed", "--metric", "gsm8k=0.94/1319", "--set", "image=v0.5.14-rocm720-mi35x-20260626",
         "--set", "python=67361ff"],
        ["runs", "exclude", "61", "--pr", "30433", "--because", "drained node"],
        ["add-run", "--pr", "30433", "--run-id", "28907609511", "--config", "kimik26-fp8-1k1k-1p1d-nocudagraph",
         "--metric", "gsm8k=0.944/1319"],
    ]
    for step in steps:
        r = cli(*db, *step)
        assert r.code == 0, r.err
        kept = cli(*db, "report", "--pr", "30433", "--format", "json")
        full = cli(*db, "report", "--pr", "30433", "--format", "json", "--full")
        assert kept.code == full.code == 0, kept.err + full.err
        assert kept.out == full.out, step


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_the_engine_reads_runs_as_the_orm_does(cli, rules_dir, fresh_pg_url, tmp_path, db):
    """``run_records`` takes the driver's rows as they are (no per-row processing):
    its times, metrics, provenance and flags are what the ORM reads, on both databases."""
    from datetime import timezone

    from sqlmodel import select

    from triage.kb import models as m
    from triage.kb import store
    from triage.kb.investigations import run_records

    url = fresh_pg_url if db == "postgres" else f"sqlite:///{tmp_path / 'kb.sqlite'}"
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    for run_id, when in (("t1", "2026-07-01T12:30:00.000120+00:00"), ("t2", "2026-07-01T14:30:00+02:00"),
                         ("t3", None)):
        args = ["--time", when] if when else []
        r = cli("--db", url, "add-run", "--pr", "30433", "--run-id", run_id, "--config", "kimik26-fp8-1k1k-1p1d",
                "--status", "failed", "--metric", "gsm8k=0.881/1319", "--set", "image=x", *args)
        assert r.code == 0, r.err
    assert cli("--db", url, "runs", "exclude", "t3", "--pr", "30433", "--because", "drained").code == 0
    with store.session(url) as s:
        rows = s.execute(select(m.Run).order_by(m.Run.pk)).scalars().all()
        fast = run_records(s, rows[0].investigation_id)
    assert len(fast) == len(rows) > 3
    for r, f in zip(rows, fast):
        assert f.time == (r.time.astimezone(timezone.utc).isoformat() if r.time else None)
        assert (f.run_id, f.config, f.status, f.url, f.note, f.excluded, f.excluded_reason, f.signature, f.seq) == (
            r.run_id, r.config, r.status, r.url, r.note, r.excluded, r.excluded_reason, r.signature_id, r.pk)
        assert f.metrics == {k: (float(v["value"]), v.get("n")) for k, v in r.metrics.items()}
        assert f.provenance == {k: str(v) for k, v in r.provenance.items()}
    times = {f.run_id: f.time for f in fast}
    assert times["t1"] == "2026-07-01T12:30:00.000120+00:00" and times["t2"] == "2026-07-01T12:30:00+00:00"
    assert times["t3"] is None and [f.excluded for f in fast if f.run_id == "t3"] == [True]


@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_a_configs_runs_come_in_the_order_recorded_after_a_later_write(cli, rules_dir, fresh_pg_url, tmp_path, db):
    """A run written again (excluded, say) moves to the end of its config's index; the
    engine still reads the config's runs in the order they were recorded."""
    from sqlmodel import select

    from triage.kb import models as m
    from triage.kb import store
    from triage.kb.investigations import run_records

    url = fresh_pg_url if db == "postgres" else f"sqlite:///{tmp_path / 'kb.sqlite'}"
    config = "kimik26-fp8-1k1k-1p1d"
    for i in range(4):
        r = cli("--db", url, "add-run", "--pr", "30433", "--run-id", f"o{i}", "--config", config,
                "--status", "failed", "--metric", "gsm8k=0.88/1319")
        assert r.code == 0, r.err
    assert cli("--db", url, "runs", "exclude", "o0", "--pr", "30433", "--because", "drained").code == 0
    assert cli("--db", url, "add-run", "--pr", "30433", "--run-id", "o1", "--config", config,
               "--note", "written again").code == 0
    with store.session(url) as s:
        orm = s.execute(select(m.Run).where(m.Run.config == config).order_by(m.Run.pk)).scalars().all()
        fast = run_records(s, orm[0].investigation_id, config=config)
    assert [r.run_id for r in fast] == [r.run_id for r in orm] == ["o0", "o1", "o2", "o3"]
    assert [r.seq for r in fast] == sorted(r.seq for r in fast)
