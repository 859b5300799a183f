"""The "new since" line (``triage.kb.posts.since_view``): the runs recorded after a moment, and
those recorded before it and written again after, exactly as a pass over every run would tell
them, on SQLite and PostgreSQL; read without making every run of a large investigation."""

from __future__ import annotations

import json
from datetime import timedelta

from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)
from tests.support.statements import recorded


def _lines(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _record(run_id: str, config: str, value: float, **more: str) -> dict:
    return {"investigation": "kimik26-disagg", "run_id": run_id, "config": config, "status": "passed",
            "metrics": {"gsm8k": {"value": value, "n": 1319}}, **more}


def test_new_and_written_again_since_a_moment_are_what_every_run_says(cli, rules_dir, tmp_path, url) -> None:
    from triage.kb import posts, store
    from triage.kb.db import _utc

    configs = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256"]
    first = tmp_path / "first.jsonl"
    first.write_text(_lines([_record(f"a{i}", configs[i % 2], 0.9) for i in range(30)]))
    assert cli("--db", url, "import", str(first)).code == 0
    with store.session(url) as s:
        between = store.now()
    # written after the moment: new runs; runs written again; new runs whose own updated_at is
    # older than the moment (an import of older records keeps theirs)
    later = tmp_path / "later.jsonl"
    old = (between - timedelta(days=3)).isoformat()
    later.write_text(_lines([_record(f"b{i}", configs[i % 2], 0.8) for i in range(5)]
                            + [_record(f"a{i}", configs[i % 2], 0.7) for i in range(0, 30, 7)]
                            + [_record(f"c{i}", configs[0], 0.6, updated_at=old) for i in range(3)]))
    assert cli("--db", url, "import", str(later), "--overwrite").code == 0
    with store.session(url) as s:
        inv = store.find_investigation(s, 30433, None)
        prefix = inv.spec.get("config_prefix") or ""
        short = lambda c: c[len(prefix):] if prefix and c.startswith(prefix) and c != prefix else c  # noqa: E731
        for at in (between - timedelta(days=5), between, store.now()):
            every = store.runs_of(s, inv.id)  # a pass over every run, as the line was first told
            want_new = [f"{r.run_id} ({short(r.config)})" for r in every if _utc(r.created_at) > at]
            want_updated = [f"{r.run_id} ({short(r.config)})" for r in every
                            if _utc(r.created_at) <= at < _utc(r.updated_at)]
            with recorded() as sent:
                got = posts.since_view(s, inv, at, "then")
            assert (got["runs"], got["updated"]) == (want_new, want_updated)
            # the runs' numbers are not read for it: only what names them and when they were written
            assert not any("metrics" in sql for sql, _ in sent if "FROM run" in sql)
        assert any(r.startswith("c0 ") for r in posts.since_view(s, inv, between, "then")["runs"])
