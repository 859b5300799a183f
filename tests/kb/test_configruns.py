"""Each config's runs in numbers (``configruns``), kept by every writer of runs,
always equal what the runs themselves say, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random

import pytest

from tests.conftest import EXAMPLE_RUNS
from tests.support.downgrade import downgrade
from tests.support.postgres import database, url  # noqa: F401  (a fixture)

CONFIGS = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256", "kimik26-fp8-1k1k-1p1d-new"]


def _both(url: str) -> tuple[list, list]:
    from triage.kb import configruns, store
    from triage.kb import models as m

    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        c = m.ConfigRuns.__table__
        assert s.execute(c.select().where(c.c.investigation_id == iid)).first() is not None, "nothing kept"
        kept = configruns.stored(s, iid)
        fresh = [(config, first, n, top, newest, int(times or 0))
                 for config, first, n, top, newest, times in s.execute(configruns._grouped(s, iid)).all()]
    return kept, sorted(fresh, key=lambda row: row[1])


@pytest.mark.parametrize("seed", [1, 2])
def test_kept_numbers_equal_the_runs_after_every_kind_of_write(cli, rules_dir, tmp_path, url, seed):
    rnd = random.Random(seed)
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    ids: list[tuple[str, str]] = []
    for step in range(14):
        op = rnd.choice(["add", "add", "update", "repeats", "exclude", "include", "delete", "import", "older"])
        config = rnd.choice(CONFIGS)
        if op == "add" or not ids:
            ids.append((f"n{seed}{step}", config))
            args = ["add-run", "--pr", "30433", "--run-id", ids[-1][0], "--config", config, "--status", "failed",
                    "--metric", f"gsm8k=0.8{step % 10}/1319"]
        elif op == "update":
            run, config = rnd.choice(ids)
            args = ["add-run", "--pr", "30433", "--run-id", run, "--config", config, "--note", f"again {step}"]
        elif op == "repeats":
            args = ["add-run", "--pr", "30433", "--run-id", f"r{seed}{step}", "--config", config, "--status", "failed",
                    "--metric", "gsm8k=0.87,0.88,0.89"]
        elif op in ("exclude", "include"):
            run, config = rnd.choice(ids)
            args = ["runs", op, run, "--config", config, "--pr", "30433"] + (["--because", "drained"] if op == "exclude" else [])
        elif op == "delete":
            run, config = ids.pop(rnd.randrange(len(ids)))
            args = ["runs", "delete", run, "--config", config, "--pr", "30433", "--because", "a mistake"]
        else:  # records: new ones, one replacing a run, and (older) one written before the run it names
            run, old_config = rnd.choice(ids)
            stamp = "2020-01-01T00:00:00Z" if op == "older" else None
            records = [{"investigation": "kimik26-disagg", "run_id": run, "config": old_config, "status": "passed",
                        "metrics": {"gsm8k": {"value": 0.93, "n": 1319}}, **({"updated_at": stamp} if stamp else {})},
                       {"investigation": "kimik26-disagg", "run_id": f"i{seed}{step}", "config": config,
                        "status": "failed", "metrics": {"gsm8k": {"value": 0.88, "n": 1319}}}]
            ids.append((f"i{seed}{step}", config))
            path = tmp_path / f"records-{step}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
            args = ["import", str(path)] + (["--overwrite"] if op == "older" else [])
        r = cli("--db", url, *args)
        assert r.code == 0, (op, args, r.err)
        kept, fresh = _both(url)
        assert kept == fresh, (step, op)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_upgrade_works_out_the_numbers_of_investigations_written_before_the_table(cli, rules_dir, tmp_path,
                                                                                      backend):
    """A knowledge base left at schema 0007 before its investigation's next write
    (the table empty, the old index there) holds every config's numbers once upgraded."""
    import contextlib

    from sqlalchemy import create_engine, text

    with database() if backend == "postgres" else contextlib.nullcontext(f"sqlite:///{tmp_path / 'kb.sqlite'}") as url:
        assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
        downgrade(url, 7)  # back to 0007, as a knowledge base written before the table left it
        engine = create_engine(url)
        with engine.begin() as c:
            c.execute(text("DELETE FROM configruns"))
        engine.dispose()
        from triage.kb.db import _engines

        for u in [u for u in _engines if u == url]:
            _engines.pop(u).dispose()
        r = cli("--db", url, "db", "upgrade")
        assert r.code == 0 and "from schema version 7" in r.out, r.err
        kept, fresh = _both(url)
        assert kept == fresh and len(kept) > 5
