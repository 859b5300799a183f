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
