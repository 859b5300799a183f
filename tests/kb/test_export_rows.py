"""An export's records read as the driver's rows (``triage.kb.runs.records_of``) are the records
of the runs as the ORM reads them (``run_to_record``): the same fields, values and order, for
every form a knowledge base may hold, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_RUNS
from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)

IID = "kimik26-disagg"


def _both(url: str) -> tuple[list[dict], list[dict]]:
    """Every run of the investigation as records: read as rows, and made from ORM objects."""
    from triage.kb import store
    from triage.kb.runs import EXPORT_BATCH, records_of, run_to_record, runs_of

    with store.session(url) as s:
        batches = list(records_of(s, IID))
        assert all(len(b) <= EXPORT_BATCH for b in batches)
        return [rec for batch in batches for rec in batch], [run_to_record(r) for r in runs_of(s, IID)]


def _write(url: str, rows: list[dict]) -> None:
    from triage.kb import store, tables

    with store.session(url) as s:
        s.execute(tables.Run.insert(), rows)


def _run(i: int, **fields) -> dict:
    at = datetime(2026, 6, 26, 3, 14, 15, tzinfo=timezone.utc)
    absent = dict.fromkeys(("url", "time", "note", "log_excerpt", "signature_id", "signature_line",
                            "excluded_reason"))
    return {"investigation_id": IID, "run_id": f"r{i}", "config": "c", "status": "passed", "metrics": {},
            "provenance": {}, "excluded": False, "created_at": at, "updated_at": at, **absent, **fields}


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8)
_when = st.datetimes(datetime(1990, 1, 1), datetime(2090, 1, 1), timezones=st.just(timezone.utc))
_metric = st.fixed_dictionaries(
    {"value": st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-10**15, 10**15))},
    optional={"n": st.one_of(st.none(), st.integers(1, 10**6))})
_fields = st.fixed_dictionaries({}, optional={
    "metrics": st.dictionaries(st.text("abz_./", min_size=1, max_size=4), _metric, max_size=3),
    "provenance": st.dictionaries(st.text("abz_", min_size=1, max_size=4), _text, max_size=3),
    "url": _text, "time": _when, "note": _text, "log_excerpt": _text, "signature_id": _text,
    "signature_line": _text, "excluded": st.booleans(), "excluded_reason": _text, "updated_at": _when,
    "status": st.sampled_from(["passed", "failed", "crashed", "oom"]),
})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_fields, min_size=1, max_size=12))
def test_an_exports_records_are_the_orms(cli, rules_dir, tmp_path, runs) -> None:
    from triage.kb import store, tables

    kb = f"sqlite:///{tmp_path / 'kb.sqlite'}"
    assert cli("--db", kb, "signatures", "list").code == 0  # the knowledge base, its rule files loaded
    with store.session(kb) as s:
        s.execute(tables.Run.delete())
    _write(kb, [_run(i, **fields) for i, fields in enumerate(runs)])
    rows, orm = _both(kb)
    assert rows == orm and [list(r) for r in rows] == [list(r) for r in orm]


def test_times_in_every_form_sqlite_may_hold(cli, rules_dir, tmp_path) -> None:
    """A time written by another program (no fraction of a second, a shorter fraction) reads as
    the ORM reads it."""
    from triage.kb import store

    kb = f"sqlite:///{tmp_path / 'kb.sqlite'}"
    assert cli("--db", kb, "import", str(EXAMPLE_RUNS)).code == 0
    with store.session(kb) as s:
        conn = s.connection()
        for i, text in enumerate(["2026-03-01 00:01:04", "2026-03-01 00:01:04.5", "2026-03-01 00:01:04.123456",
                                  "2026-03-01 23:59:59.000000"]):
            conn.exec_driver_sql("UPDATE run SET time = ?, updated_at = ? WHERE pk = ?", (text, text, i + 1))
    rows, orm = _both(kb)
    assert rows == orm and rows[0]["time"] == "2026-03-01T00:01:04+00:00"
    assert rows[3]["time"] == "2026-03-01T23:59:59+00:00" and rows[3]["updated_at"].endswith(".000000+00:00")


def test_the_same_on_either_database(cli, rules_dir, url) -> None:  # noqa: F811
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    later = datetime(2026, 7, 1, 12, 0, 0, 250, tzinfo=timezone(timedelta(hours=-7)))
    _write(url, [_run(1000, metrics={"b": {"value": 2}, "a": {"value": 0.5, "n": 10}}, provenance={"z": "é", "a": ""},
                      time=later, updated_at=later, excluded=True, excluded_reason="bad node", note="",
                      signature_id="init-abort", signature_line="x")])
    rows, orm = _both(url)
    assert rows == orm and len(rows) == 34
    assert rows[-1]["metrics"] == {"a": {"value": 0.5, "n": 10}, "b": {"value": 2}}
    assert rows[-1]["time"] == "2026-07-01T19:00:00.000250+00:00"
