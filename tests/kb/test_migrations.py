"""Schema versions and Alembic migrations (issue #14): a knowledge base made by
the first schema is upgraded; one with no version or an unknown one is refused."""

from __future__ import annotations

import ast
import os
import sqlite3
import subprocess
import sys

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.conftest import ROOT
from tests.support.postgres import database
from tests.support.schema1 import SCHEMA1, SEED, first_schema_sqlite


def _version(url: str) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as c:
            return c.execute(text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
    finally:
        engine.dispose()


def _shape(url: str) -> dict:
    """Tables, their columns (name, nullable) and index names, as the database reports them."""
    engine = create_engine(url)
    try:
        insp = inspect(engine)
        return {t: (sorted((c["name"], c["nullable"]) for c in insp.get_columns(t)),
                    sorted(i["name"] for i in insp.get_indexes(t)))
                for t in insp.get_table_names() if t != "alembic_version"}
    finally:
        engine.dispose()


def test_a_first_schema_file_is_upgraded_with_a_backup(cli, rules_dir, tmp_path):
    from triage.kb.migrate import head

    path = tmp_path / "kb.sqlite"
    first_schema_sqlite(path)
    r = cli("db", "status")
    assert r.code == 0, r.err
    assert r.out.strip() == (f"schema version 1, this triage writes {head()}: `triage db upgrade` upgrades it "
                             "(so does any other command)")
    assert _version(f"sqlite:///{path}") == "1"  # status changes nothing
    r = cli("export", "--pr", "30433")
    assert r.code == 0, r.err
    assert f"from schema version 1 to {head()}" in r.err and "kb.sqlite.v1.bak" in r.err
    assert '"run_id": "1001"' in r.out and '"updated_at": "2026-06-21T10:00:00.000000+00:00"' in r.out
    assert _version(f"sqlite:///{path}") == str(head())
    backup = tmp_path / "kb.sqlite.v1.bak"
    assert _version(f"sqlite:///{backup}") == "1"
    assert sqlite3.connect(backup).execute("SELECT run_id FROM run").fetchall() == [("1001",)]
    assert cli("db", "status").out.strip() == f"schema version {head()}: up to date"
    # the old signature's file is not loaded: it stays, not retired
    con = sqlite3.connect(path)
    assert con.execute("SELECT retired_at FROM signature WHERE id = 'old-sig'").fetchall() == [(None,)]


def test_db_upgrade_says_what_it_did(cli, tmp_path):
    from triage.kb.migrate import head

    first_schema_sqlite(tmp_path / "kb.sqlite")
    r = cli("db", "upgrade")
    assert r.code == 0, r.err
    assert r.out.startswith(f"upgraded the knowledge base sqlite:///{tmp_path / 'kb.sqlite'} from schema version 1 "
                            f"to {head()} (the previous file is saved as {tmp_path / 'kb.sqlite.v1.bak'})")
    assert cli("db", "upgrade").out.strip() == f"schema version {head()}: up to date, nothing to do"


def test_upgraded_schema_is_the_schema_a_new_knowledge_base_gets(cli, tmp_path):
    """A model change without its migration fails here."""
    first_schema_sqlite(tmp_path / "old.sqlite")
    assert cli("--db", str(tmp_path / "old.sqlite"), "db", "upgrade").code == 0
    assert cli("--db", str(tmp_path / "new.sqlite"), "db", "upgrade").code == 0
    assert _shape(f"sqlite:///{tmp_path / 'old.sqlite'}") == _shape(f"sqlite:///{tmp_path / 'new.sqlite'}")


@pytest.mark.postgres
def test_a_first_schema_postgres_database_is_upgraded(cli, rules_dir):
    from triage.kb.migrate import head

    with database() as old, database() as new:
        engine = create_engine(old)
        with engine.begin() as c:
            c.exec_driver_sql((SCHEMA1 / "schema1.postgresql.sql").read_text())
            c.exec_driver_sql(SEED.replace("'{}')", "'{}'::json)").replace(", 0, '2026", ", false, '2026"))
        engine.dispose()
        r = cli("--db", old, "export", "--pr", "30433")
        assert r.code == 0, r.err
        assert f"from schema version 1 to {head()}" in r.err and "saved" not in r.err
        assert '"run_id": "1001"' in r.out
        assert _version(old) == str(head())
        assert cli("--db", new, "db", "upgrade").code == 0
        assert _shape(old) == _shape(new)


def test_no_version_is_refused_with_what_to_do(cli, tmp_path):
    """Reproduction: no meta row and a missing column was stamped 1 and failed later."""
    path = tmp_path / "kb.sqlite"
    first_schema_sqlite(path, meta_row=False)
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE run DROP COLUMN note")
    con.commit()
    con.close()
    for args in (("runs", "list", "--pr", "30433"), ("db", "status"), ("db", "upgrade")):
        r = cli(*args)
        assert r.code == 2  # bad input: the --db given (#30)
        assert r.err.strip().endswith("has tables but no schema version (meta.schema_version): it was not made by "
                                      "triage, or the row was lost; restore it from a backup, or start a new "
                                      "knowledge base (--db) and import the runs into it")
        assert "Traceback" not in r.err
    assert sqlite3.connect(path).execute("SELECT count(*) FROM meta").fetchone() == (0,)


@pytest.mark.parametrize("value, message", [
    ("99", "has schema version 99, newer than this triage's {head}: upgrade triage to open it"),
    ("two", "has an unknown schema version 'two' (this triage knows 1 to {head})"),
    ("0", "has an unknown schema version '0' (this triage knows 1 to {head})"),
])
def test_an_unknown_version_is_refused(cli, tmp_path, value, message):
    from triage.kb.migrate import head

    path = tmp_path / "kb.sqlite"
    first_schema_sqlite(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (value,))
    con.commit()
    con.close()
    r = cli("report", "--pr", "30433")
    assert r.code == 2  # bad input: the --db given (#30)
    assert message.format(head=head()) in r.err
    assert not (tmp_path / f"kb.sqlite.v{value}.bak").exists()


def test_a_failed_upgrade_leaves_the_knowledge_base_as_it_was(cli, tmp_path, monkeypatch):
    from triage.errors import RuntimeFailure
    from triage.kb import migrate

    path = tmp_path / "kb.sqlite"
    first_schema_sqlite(path)
    before = _shape(f"sqlite:///{path}")

    def broken(conn, version):
        conn.execute(text("ALTER TABLE signature ADD COLUMN half_done INTEGER"))
        raise RuntimeFailure("migration 0002 failed")

    monkeypatch.setattr(migrate, "_upgrade", broken)
    r = cli("db", "upgrade")
    assert r.code == 1 and "migration 0002 failed" in r.err
    assert _shape(f"sqlite:///{path}") == before
    assert _version(f"sqlite:///{path}") == "1"


def test_opening_a_current_knowledge_base_does_not_import_alembic(tmp_path):
    code = ("import sys; from triage.kb import store; store.get_engine(store.resolve_url('kb.sqlite')); "
            "print('alembic' in sys.modules)")
    for _ in range(2):  # creating it, then opening it
        r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "False"


def test_migrations_form_one_numbered_chain():
    """Each versions/NNNN_*.py is revision NNNN after NNNN-1: two branches that
    both add a migration with one number fail here (renumber one)."""
    from triage.kb import migrate

    files = sorted(p for p in migrate.VERSIONS.glob("*.py"))
    assert [p.name for p in files if not migrate._FILE.match(p.name)] == []
    numbers = migrate.revisions()
    assert numbers == list(range(1, len(files) + 1))
    for number, path in zip(numbers, files):
        names = {t.id: ast.literal_eval(node.value) for node in ast.parse(path.read_text()).body
                 if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
        assert names["revision"] == f"{number:04d}", path.name
        assert names["down_revision"] == (f"{number - 1:04d}" if number > 1 else None), path.name
    assert migrate.head() == numbers[-1]
    assert (ROOT / "triage" / "kb" / "migrations" / "versions").resolve() == migrate.VERSIONS


def test_a_file_that_is_no_sqlite_database_is_bad_input(cli, tmp_path):
    (tmp_path / "notes.db").write_text("not a database\n" * 100)
    r = cli("--db", "notes.db", "runs", "list", "--pr", "1")
    assert r.code == 2
    assert r.err.strip() == (f"Error: the knowledge base sqlite:///{tmp_path / 'notes.db'} is not a SQLite database: "
                             "point --db at "
                             "a knowledge base, or at a new file to start one")


def test_the_losing_upgrade_of_two_says_so_and_keeps_one_copy(cli, tmp_path, monkeypatch):
    """Another process upgrades between this one's copy and its lock: this one's
    copy goes, and it says what happened (#30)."""
    from triage.kb import migrate

    path = tmp_path / "kb.sqlite"
    first_schema_sqlite(path)
    copy = migrate.backup_sqlite

    def copy_then_lose(engine, version):
        made = copy(engine, version)
        subprocess.run([sys.executable, "-m", "triage", "db", "upgrade"], cwd=tmp_path, check=True,
                       capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        return made

    monkeypatch.setattr(migrate, "backup_sqlite", copy_then_lose)
    r = cli("db", "upgrade")
    assert r.code == 0, r.err
    assert f"was upgraded to schema version {migrate.head()} by another process meanwhile" in r.out + r.err
    assert sorted(p.name for p in tmp_path.glob("kb.sqlite.*bak")) == ["kb.sqlite.v1.2.bak"]
