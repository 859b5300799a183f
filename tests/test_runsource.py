"""The engine's runs from the knowledge base (``triage.kb.runsource.DbSource``): the
runs of a set of (run id, config) pairs are exactly those runs, on SQLite and
PostgreSQL, however many pairs and however many configs share a run id."""

from __future__ import annotations

import json
import random

from tests.test_configruns import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)


def _records(n_ids: int, configs: list[str]) -> list[dict]:
    """Matrix runs: most run ids have a run of several configs (as a nightly's jobs share one)."""
    rnd = random.Random(7)
    out = []
    for i in range(n_ids):
        run_id = f"m{i}" if i % 50 else f"m{i}/x"  # a few ids that hold a "/" themselves
        for config in rnd.sample(configs, rnd.randint(1, len(configs))):
            out.append({"investigation": "kimik26-disagg", "run_id": run_id, "config": config,
                        "status": rnd.choice(["passed", "failed"]),
                        "metrics": {"gsm8k": {"value": round(rnd.random(), 3), "n": 1319}}})
    return out


def test_the_runs_of_a_set_of_pairs_are_those_runs(cli, rules_dir, tmp_path, url) -> None:
    from triage.kb import store
    from triage.kb.investigations import run_records
    from triage.kb.runsource import DbSource

    configs = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256", "x/y", "c3", "c4"]
    records = _records(1500, configs)
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli("--db", url, "import", str(path)).code == 0
    rnd = random.Random(3)
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        every = run_records(s, iid)
        assert len(every) == len(records)
        source = DbSource(s, iid)
        for size in (0, 1, 40, 2500):  # 2,500: more pairs than one query asks for
            chosen = rnd.sample(every, size)
            pairs = [(r.run_id, r.config) for r in chosen]
            pairs += [("m1", "no-such-config"), ("no-such-run", configs[0])] + pairs[:5]  # none, and twice
            got = source.by_keys(pairs)
            assert [r.key for r in got] == [r.key for r in sorted(chosen, key=lambda r: r.seq)]
            # each run as the config's own read gives it (the same fields, the same order)
            mine = {r.key: r for c in configs for r in source.config(c)}
            assert all(r == mine[r.key] and r.seq == mine[r.key].seq for r in got)
