"""On wide investigations (random shapes from ``bench/wide.py``, small sizes), runs added,
written again and excluded one after another: after each, the stored view, whose long
lists are kept while they are made of the same, is to the byte the view a whole
evaluation builds from scratch."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import wide

edit = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 10_000), st.sampled_from(["passed", "failed", "crashed"]),
              st.sampled_from(["0.87", "0.88", "0.92"])),
    st.tuples(st.just("base"), st.just(0), st.sampled_from(["passed", "failed"]), st.sampled_from(["0.88", "0.9"])),
    st.tuples(st.just("again"), st.integers(0, 10_000), st.just("failed"), st.sampled_from(["0.87", "0.93"])),
    st.tuples(st.just("exclude"), st.integers(0, 10_000), st.just(""), st.just("")),
)


def _runs(kb: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(kb) as db:
        return db.execute("SELECT run_id, config FROM run ORDER BY pk").fetchall()


def _apply(cli, kb: Path, rules: Path, seed: int, e: tuple, step: int) -> None:
    what, at, status, value = e
    runs = _runs(kb)
    run_id, config = runs[at % len(runs)]
    common = ("--db", str(kb), "--rules", str(rules))
    pr = str(40_000 + seed)
    if what == "exclude":
        r = cli(*common, "runs", "exclude", run_id, "--pr", pr, "--config", config, "--because", f"step {step}")
    else:
        if what in ("add", "base"):
            run_id, config = f"8{step:05d}{at}", (f"w{seed}-base" if what == "base" else config)
        metric = [] if status == "crashed" else ["--metric", f"acc={value}/1000"]
        r = cli(*common, "add-run", "--pr", pr, "--run-id", run_id, "--config", config, "--status", status, *metric)
    assert r.code == 0, r.err


def _report(cli, kb: Path, rules: Path, seed: int, *full: str) -> str:
    r = cli("--db", str(kb), "--rules", str(rules), "report", "--pr", str(40_000 + seed), "--format", "json", *full)
    assert r.code == 0, r.err
    return r.out


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.integers(1, 6), st.lists(edit, min_size=2, max_size=4))
def test_a_stored_view_equals_a_whole_one_after_edits_on_wide_shapes(cli, seed: int, edits: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rules, records = wide.write(Path(tmp), 300, seed, 0.05)
        kb = Path(tmp) / "kb.sqlite"
        assert cli("--db", str(kb), "--rules", str(rules), "import", str(records)).code == 0
        _report(cli, kb, rules, seed)  # the view stored, with what its lists are made of
        for step, e in enumerate(edits):
            _apply(cli, kb, rules, seed, e, step)
            kept = _report(cli, kb, rules, seed)
            whole = Path(tmp) / f"whole-{step}.sqlite"
            with sqlite3.connect(kb) as source, sqlite3.connect(whole) as db:
                source.backup(db)
                db.execute("DELETE FROM snapshot")
            assert kept == _report(cli, whole, rules, seed, "--full"), f"step {step}: {e}"
