"""Stale rules (issue #14), on SQLite and PostgreSQL: a rule file's removed
entries are retired in the same sync; a command that fails writes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from tests.conftest import EXAMPLE_RUNS
from tests.test_postgres import _database


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "kb.sqlite")
        return
    with _database() as url:
        yield url


def _sql(db: str, query: str) -> list[tuple]:
    from triage.kb.store import resolve_url

    engine = create_engine(resolve_url(db))
    try:
        with engine.connect() as c:
            return [tuple(r) for r in c.execute(text(query))]
    finally:
        engine.dispose()


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
    r = cli("--db", db, "report", "--pr", "999")
    assert r.code == 2
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
    assert cli("--db", db, "bisect", "--pr", "30433").code == 0
    path = rules_dir / "kimik26-disagg.yaml"
    text_ = path.read_text()
    path.write_text(text_[:text_.index("bisects:")] + text_[text_.index("extractors:"):])
    r = cli("--db", db, "bisect", "--pr", "30433")
    assert r.code == 2 and "has no bisects" in r.err
    assert _sql(db, "SELECT count(*) FROM bisect") == [(0,)]
