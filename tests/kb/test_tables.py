"""The knowledge base's tables without the table classes (``triage.kb.tables``): a
command that only reads and writes columns defines no table class, takes its tables
from a kept copy of the classes' ``MetaData``, and writes and reports what it would
with the classes, on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLE_RUNS
from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)

# A command in a process of its own, then whether it defined the table classes.
_RUN = """
import sys
from triage.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
print("defined" if "triage.kb.models" in sys.modules else "not defined")
"""


def _command(tmp_path: Path, cache: str, *args: str) -> tuple[str, str]:
    """(what the command printed, whether it defined the classes)."""
    done = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "TRIAGE_CACHE": cache})
    assert done.returncode == 0, done.stderr
    *out, defined = done.stdout.splitlines()
    return "\n".join(out), defined


def _said(constraint) -> tuple:
    """A constraint as what it says: its kind, name, columns, and the columns a foreign key names."""
    targets = tuple(sorted(e.target_fullname for e in getattr(constraint, "elements", ())))
    return (type(constraint).__name__, str(constraint.name), tuple(c.name for c in constraint.columns), targets)


def _typed(column, dialect) -> tuple:
    """A column as a dialect writes it: its name, its SQL type, its key, whether it may be null, its default."""
    return (column.name, column.type.compile(dialect), column.primary_key, column.nullable,
            repr(column.server_default))


def test_the_kept_tables_are_the_classes_tables() -> None:
    """Made and read back, the copy has every class's table, column for column (names,
    SQL types on SQLite and PostgreSQL, keys, defaults), with its indexes and constraints;
    its types are none of SQLModel's (reading it back imports neither SQLModel nor pydantic)."""
    import pickle

    from sqlalchemy.dialects import postgresql, sqlite

    from triage.kb import models, tables

    made = tables._classes_tables()
    copy = pickle.loads(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL))
    assert set(copy) == {n for n, c in vars(models).items() if getattr(c, "__table__", None) is not None
                         and getattr(c, "__module__", "") == models.__name__} and len(copy) >= 20
    classes = {name: getattr(models, name).__table__ for name in made}
    for name, table in classes.items():
        other = copy[name]
        assert other is not table and other.name == table.name
        for dialect in (sqlite.dialect(), postgresql.dialect()):
            assert [_typed(c, dialect) for c in other.columns] == [_typed(c, dialect) for c in table.columns]
        assert not [c.name for c in other.columns if type(c.type).__module__.startswith("sqlmodel")]
        assert sorted((i.name, tuple(c.name for c in i.columns), i.unique) for i in other.indexes) \
            == sorted((i.name, tuple(c.name for c in i.columns), i.unique) for i in table.indexes)
        assert sorted(map(_said, other.constraints)) == sorted(map(_said, table.constraints))
    # once the classes are defined, a table is the class's own
    assert tables.Run is models.Run.__table__


def test_an_add_run_and_a_report_define_no_table_class_and_say_what_they_would(tmp_path, rules_dir, url) -> None:
    """With the copy kept, an add-run and a report define no class;
    the report they lead to is that of commands that define the classes (no cache: the
    tables are the classes')."""
    from contextlib import nullcontext

    from tests.support.postgres import database

    cache = str(tmp_path / "cache")
    reports = []
    second = nullcontext(f"sqlite:///{tmp_path / 'second.sqlite'}") if url.startswith("sqlite") else database()
    with second as other:
        for db, kept in ((url, cache), (other, "off")):
            base = ("--db", db, "--rules", str(rules_dir))
            # the first command keeps the copy (made from the classes); then loading rule files into a new
            # knowledge base and importing runs into it define none either
            assert _command(tmp_path, kept, *base, "import", str(EXAMPLE_RUNS))[0]
            fresh_db = tmp_path / f"fresh-{Path(kept).name}.sqlite"
            fresh = ("--db", f"sqlite:///{fresh_db}", "--rules", str(rules_dir))
            out, defined = _command(tmp_path, kept, *fresh, "import", str(EXAMPLE_RUNS))
            assert "imported" in out and defined == ("not defined" if kept != "off" else "defined")
            # the first command that asks for a table with no class defined keeps the copy
            assert "recorded run 777" in _command(tmp_path, kept, *base, "add-run", "--pr", "30433", "--run-id",
                                                  "777", "--config", "kimik26-fp8-1k1k-1p1d",
                                                  "--metric", "gsm8k=0.9/1319", "--status", "passed")[0]
            out, defined = _command(tmp_path, kept, *base, "add-run", "--pr", "30433", "--run-id", "778",
                                    "--config", "kimik26-fp8-1k1k-1p1d", "--metric", "gsm8k=0.87/1319",
                                    "--status", "failed")
            assert "recorded run 778" in out
            assert defined == ("not defined" if kept != "off" else "defined")
            report, defined = _command(tmp_path, kept, *base, "report", "--pr", "30433", "--format", "json",
                                       "--full")
            assert defined == ("not defined" if kept != "off" else "defined")
            reports.append(report)
    assert reports[0] == reports[1] and '"investigation"' in reports[0]


def test_a_source_made_before_the_classes_keeps_one_table_after_them(seeded, monkeypatch) -> None:
    """A run source keeps an expression across its statements (the sum of write times):
    made while the tables are the copy, it still reads right once a command has defined
    the classes (posting does, after its report), its statements never joining the
    table with its copy."""
    import pickle

    from triage.kb import store, tables
    from triage.kb.runsource import DbSource

    url = f"sqlite:///{Path('kb.sqlite').resolve()}"
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        config = store.run_records(s, iid)[0].config
        before = DbSource(s, iid)
        expected = (before.fingerprint(("i", "28907609511")), before.appended(config, before._fps[config]))
        copy = pickle.loads(pickle.dumps(tables._classes_tables()))
        defined = sys.modules["triage.kb.models"]
        monkeypatch.setattr(tables, "_copy", copy)
        monkeypatch.delitem(sys.modules, "triage.kb.models")
        source = DbSource(s, iid)  # the copy's table
        assert source._t is copy["Run"]
        monkeypatch.setitem(sys.modules, "triage.kb.models", defined)  # the classes defined since
        assert tables.Run is not copy["Run"]
        assert (source.fingerprint(("i", "28907609511")), source.appended(config, source._fps[config])) == expected


def test_the_copys_column_types_bind_and_read_as_sqlmodels() -> None:
    """The copy's text and time types (``triage.kb.coltypes``) bind and read every value as
    SQLModel's do, on SQLite and PostgreSQL; a time without a zone is refused by both."""
    from datetime import datetime, timedelta, timezone

    import pytest
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from sqlalchemy.dialects import postgresql, sqlite
    from sqlmodel.sql.sqltypes import AutoString, UTCDateTime

    from triage.kb.coltypes import plain

    dialects = (sqlite.dialect(), postgresql.dialect())
    pairs = [(AutoString(), plain(AutoString())), (UTCDateTime(), plain(UTCDateTime()))]

    def processed(kind, value, dialect):
        bind = kind.bind_processor(dialect)
        result = kind.result_processor(dialect, None)
        stored = bind(value) if bind else value
        return stored, (result(stored) if result and stored is not None else stored)

    zones = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))

    @settings(max_examples=200, deadline=None)
    @given(text=st.text(), when=st.datetimes(timezones=zones))
    def same(text, when):
        for dialect in dialects:
            assert processed(pairs[0][1], text, dialect) == processed(pairs[0][0], text, dialect)
            assert processed(pairs[1][1], when, dialect) == processed(pairs[1][0], when, dialect)

    same()
    for dialect in dialects:
        assert processed(pairs[1][1], None, dialect) == processed(pairs[1][0], None, dialect) == (None, None)
        for kind in (pairs[1][0], pairs[1][1]):
            with pytest.raises(Exception):  # StatementError's cause, raised by either
                processed(kind, datetime(2026, 1, 1), dialect)


_MODULES = """
import sys
from triage.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    assert not e.code, e.code
print(sorted(m for m in ("pydantic", "sqlmodel", "typer._adapters", "triage.kb.models") if m in sys.modules))
"""


def test_a_report_of_an_unchanged_knowledge_base_imports_neither_pydantic_nor_sqlmodel(tmp_path, seeded) -> None:
    """The report a bot posts after every run, of a knowledge base evaluated already: its values
    taken without typer's validators (``triage.cli.coerce``), its tables from the kept copy
    (``triage.kb.coltypes``) and pydantic's version read from its file, it imports neither
    pydantic nor SQLModel (a tenth of a second)."""
    cache = str(tmp_path / "cache")
    args = ["--db", f"sqlite:///{tmp_path / 'kb.sqlite'}", "report", "--pr", "30433", "--format", "json"]
    runs = [subprocess.run([sys.executable, "-c", _MODULES, *args], capture_output=True, text=True, cwd=tmp_path,
                           env={**os.environ, "TRIAGE_CACHE": cache}) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    *report, imported = runs[1].stdout.splitlines()
    assert imported == "[]", imported
    assert '"investigation"' in "\n".join(report)


def test_the_kept_definitions_name_pydantics_version_as_pydantic_does() -> None:
    """Read from pydantic's ``version.py``, without importing pydantic."""
    import pydantic

    from triage.rules.language.kept import pydantic_version

    assert pydantic_version() == pydantic.VERSION
