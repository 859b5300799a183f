"""``runs list``'s rows (``triage.kb.runs.listed_runs``): the last runs recorded are the tail of
every run in the order recorded, on SQLite and PostgreSQL, with how many there are."""

from __future__ import annotations

import json

from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)


def test_the_last_runs_recorded_are_the_tail_of_every_run(cli, rules_dir, tmp_path, url) -> None:
    from triage.kb import store

    configs = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256"]
    records = [{"investigation": "kimik26-disagg", "run_id": f"r{i % 9}", "config": configs[i % 2],
                "status": "passed", "metrics": {"gsm8k": {"value": 0.9, "n": 1319}}} for i in range(18)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli("--db", url, "import", str(path)).code == 0
    # written again: a run keeps its place in the order recorded
    assert cli("--db", url, "add-run", "--pr", "30433", "--run-id", "r0", "--config", configs[0],
               "--status", "failed").code == 0
    with store.session(url) as s:
        inv = store.find_investigation(s, 30433, None)
        every = [(r.run_id, r.config, r.status) for r in store.listed_runs(s, inv.id)]
        assert len(every) == store.count_runs(s, inv.id) == 18 and every[0] == ("r0", configs[0], "failed")
        for last in (0, 1, 5, 18, 40):
            got = [(r.run_id, r.config, r.status) for r in store.listed_runs(s, inv.id, last)]
            assert got == every[len(every) - min(last, len(every)):]


def test_runs_list_as_json_is_every_listed_run_as_the_orm_reads_it(cli, rules_dir, url) -> None:
    """``runs list --format json`` (read as the driver's rows, written a batch at a time) says what
    the rows ``listed_runs`` reads through SQLAlchemy say, byte for byte, whole and the last few."""
    from datetime import datetime, timedelta, timezone

    from tests.conftest import EXAMPLE_RUNS
    from triage.kb import runs as stored
    from triage.kb import store
    from triage.render.jsonout import dumps

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    at = datetime(2026, 7, 1, 12, 0, 0, 250, tzinfo=timezone(timedelta(hours=-7)))
    with store.session(url) as s:  # a run of every field, its metrics not in order
        s.execute(stored.tables.Run.insert(), [{
            "investigation_id": "kimik26-disagg", "run_id": "odd", "config": "c", "status": "oom",
            "metrics": {"b": {"value": 2}, "a": {"value": 0.5, "n": 10}}, "provenance": {"z": "é", "a": ""},
            "url": "u", "time": at, "note": "", "signature_id": "init-abort", "excluded": True,
            "excluded_reason": "bad node", "created_at": at, "updated_at": at}])
    for last in (None, 0, 1, 5, 34, 100):
        args = () if last is None else ("--last", str(last))
        r = cli("--db", url, "runs", "list", "--pr", "30433", "--format", "json", *args)
        assert r.code == 0, r.err
        with store.session(url) as s:
            inv = store.find_investigation(s, 30433, None)
            rows = store.listed_runs(s, inv.id, last)
        expected = [{"run_id": x.run_id, "config": x.config, "status": x.status, "metrics": x.metrics,
                     "provenance": x.provenance, "time": x.time.isoformat() if x.time else None, "url": x.url,
                     "note": x.note, "signature": x.signature_id, "excluded": x.excluded,
                     "excluded_reason": x.excluded_reason} for x in rows]
        assert r.out == dumps(expected) + "\n"
        assert len(expected) == (34 if last is None else min(last, 34))
