"""Stale data and stale rules (issue #14), on SQLite and PostgreSQL: an import
never puts back an older version of a run; a rule file's removed entries are
retired in the same sync; a command that fails writes nothing."""

from __future__ import annotations

import os
import json

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import EXAMPLE_RUNS
from tests.support.postgres import database

NOCUDAGRAPH = ("--run-id", "28907609511", "--config", "kimik26-fp8-1k1k-1p1d-nocudagraph")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "kb.sqlite")
        return
    with database() as url:
        yield url


def _sql(db: str, query: str) -> list[tuple]:
    from triage.kb.store import resolve_url

    engine = create_engine(resolve_url(db))
    try:
        with engine.connect() as c:
            return [tuple(r) for r in c.execute(text(query))]
    finally:
        engine.dispose()


def _run(cli, db: str) -> dict:
    out = cli("--db", db, "export", "--pr", "30433").out
    return next(r for r in map(json.loads, out.splitlines())
                if (r["run_id"], r["config"]) == (NOCUDAGRAPH[1], NOCUDAGRAPH[3]))


def _status(cli, db: str, hypothesis: str) -> str:
    model = json.loads(cli("--db", db, "report", "--pr", "30433", "--format", "json").out)
    return next(h["status"] for h in model["hypotheses"] if h["id"] == hypothesis)


def test_an_old_export_does_not_overwrite_a_newer_run(cli, rules_dir, db, tmp_path):
    """Reproduction: export, a newer add-run, import of the old export -> the
    run went back and a hypothesis flipped confirmed -> ruled out, exit 0."""
    assert cli("--db", db, "import", str(EXAMPLE_RUNS)).code == 0
    old = tmp_path / "old.jsonl"
    assert cli("--db", db, "export", "--pr", "30433", "-o", str(old)).code == 0
    r = cli("--db", db, "add-run", "--pr", "30433", *NOCUDAGRAPH, "--metric", "gsm8k=0.944/1319",
            "--status", "passed", "--note", "rerun on a quiet node")
    assert r.code == 0 and "hip-graph: ruled_out → confirmed" in r.out
    newer = _run(cli, db)

    r = cli("--db", db, "import", str(old))
    assert r.code == 0, r.err
    assert r.out.strip().endswith(": 0 new, 32 updated, 1 older (kept the newer)")
    assert _run(cli, db) == newer
    assert _status(cli, db, "hip-graph") == "confirmed"

    r = cli("--db", db, "import", str(old), "--overwrite")
    assert r.code == 0 and r.out.strip().endswith(": 0 new, 33 updated")
    back = _run(cli, db)
    assert (back["status"], back["metrics"]["gsm8k"]["value"], back.get("note")) == ("failed", 0.883, None)
    assert _status(cli, db, "hip-graph") == "ruled_out"


def test_a_record_with_a_newer_time_replaces_the_run(cli, rules_dir, db, tmp_path):
    assert cli("--db", db, "import", str(EXAMPLE_RUNS)).code == 0
    rec = _run(cli, db) | {"status": "passed", "updated_at": "2999-01-01T00:00:00+00:00"}
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps(rec) + "\n")
    assert cli("--db", db, "import", str(path)).out.strip().endswith(": 0 new, 1 updated")
    assert _run(cli, db)["updated_at"] == "2999-01-01T00:00:00.000000+00:00"
    stale = dict(rec, status="failed", updated_at="2998-01-01T00:00:00Z")
    path.write_text(json.dumps(stale) + "\n")
    assert cli("--db", db, "import", str(path)).out.strip().endswith(": 0 new, 0 updated, 1 older (kept the newer)")
    assert _run(cli, db)["status"] == "passed"


UNREGISTERED_LOG = "step 1\nValueError: 'KimiK25ForConditionalGeneration' is not a registered model\n"


def test_a_signature_removed_from_its_file_no_longer_matches(cli, rules_dir, db, tmp_path):
    """Reproduction: a signature deleted from the YAML still matched logs."""
    log = tmp_path / "job.log"
    log.write_text(UNREGISTERED_LOG)
    r = cli("--db", db, "scan", str(log))
    assert r.code == 0 and "unregistered-model" in r.out
    sigs = rules_dir / "signatures.yaml"
    original = sigs.read_text()
    start = original.index("  - id: unregistered-model")
    end = original.index("  - id:", start + 1)
    sigs.write_text(original[:start] + original[end:])
    r = cli("--db", db, "scan", str(log))
    assert r.code == 0, r.err
    assert "unregistered-model" not in r.out
    assert "unregistered-model" not in cli("--db", db, "signatures", "list").out
    retired = _sql(db, "SELECT retired_at FROM signature WHERE id = 'unregistered-model'")
    assert len(retired) == 1 and retired[0][0] is not None
    # declared again: in use again
    sigs.write_text(original)
    assert "unregistered-model" in cli("--db", db, "scan", str(log)).out
    assert _sql(db, "SELECT retired_at FROM signature WHERE id = 'unregistered-model'") == [(None,)]


def test_extractors_removed_from_a_shared_file_are_gone(cli, rules_dir, db):
    shared = rules_dir / "extract.yaml"
    shared.write_text("schema_version: 1\nextractors:\n  - id: acc\n    pattern: 'accuracy (?P<value>[0-9.]+)'\n"
                      "    metric: gsm8k\n")
    assert cli("--db", db, "signatures", "list").code == 0
    assert len(_sql(db, "SELECT value FROM meta WHERE key LIKE 'extractors:%'")) == 1
    shared.write_text("schema_version: 1\n")
    assert cli("--db", db, "signatures", "list").code == 0
    assert _sql(db, "SELECT value FROM meta WHERE key LIKE 'extractors:%'") == []


def test_a_command_that_fails_writes_no_rule_sync(cli, rules_dir, db):
    """Reproduction: a command that exited 2 had already committed the rule-file sync."""
    assert cli("--db", db, "db", "upgrade").code == 0  # an empty knowledge base, no rules loaded
    r = cli("--db", db, "report", "--pr", "999")
    assert r.code == 3  # no investigation names PR 999
    assert _sql(db, "SELECT count(*) FROM rulesource") == [(0,)]
    assert _sql(db, "SELECT count(*) FROM investigation") == [(0,)]
    assert _sql(db, "SELECT count(*) FROM signature") == [(0,)]
    # a changed rule file and a failing command: the old definitions stay
    assert cli("--db", db, "import", str(EXAMPLE_RUNS)).code == 0
    path = rules_dir / "kimik26-disagg.yaml"
    path.write_text(path.read_text().replace("title: KV page size", "title: KV page size (renamed)"))
    assert cli("--db", db, "add-run", "--pr", "30433", "--run-id", "1", "--config", "c").code == 2  # no --status
    assert _sql(db, "SELECT title FROM hypothesis WHERE id = 'page-size'") == [("KV page size",)]
    assert cli("--db", db, "runs", "list", "--pr", "30433").code == 0
    assert _sql(db, "SELECT title FROM hypothesis WHERE id = 'page-size'") == [("KV page size (renamed)",)]


def test_a_bisect_removed_from_its_file_is_gone(cli, rules_dir, db):
    assert cli("--db", db, "import", os.devnull).code == 0
    assert cli("--db", db, "bisect", "--pr", "30433").code == 0
    path = rules_dir / "kimik26-disagg.yaml"
    text_ = path.read_text()
    path.write_text(text_[:text_.index("bisects:")] + text_[text_.index("extractors:"):])
    r = cli("--db", db, "bisect", "--pr", "30433")
    assert r.code == 2 and "has no bisects" in r.err
    assert _sql(db, "SELECT count(*) FROM bisect WHERE investigation_id = 'kimik26-disagg'") == [(0,)]
