"""The calibration harness (bench/calibration.py) at a small size: its table, and the
bounds on kinds where a small number of simulations already says something.

Fixed seed, so deterministic; no timing. The full run is `bench/calibration.py`
(bench/README.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cal():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import calibration
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return calibration


def test_wilson_interval(cal):
    lo, hi = cal.wilson(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)
    lo, hi = cal.wilson(5, 100)
    assert (lo, hi) == (pytest.approx(0.02154, abs=1e-4), pytest.approx(0.11175, abs=1e-4))
    assert cal.wilson(0, 0) == (0.0, 1.0)


def test_a_row_fails_only_when_clearly_over_the_bound(cal):
    assert cal.judge_rates([cal.rate(0, 500)]) == "ok"
    assert cal.judge_rates([cal.rate(30, 500)]) == "warn"  # 6 %: over, but within the noise of 500
    assert cal.judge_rates([cal.rate(60, 500), cal.rate(0, 500)]) == "fail"  # 12 % [9.4, 15.1]
    row = {"verdict": "fail", "limitation": ""}
    assert cal.exit_status([row]) == 3
    assert cal.exit_status([dict(row, limitation="documented in the README")]) == 0


@pytest.fixture(scope="module")
def rows(cal):
    kinds = [cal.ALL["noise-pooled"], cal.ALL["gate-at_least"], cal.ALL["bisect8-gate"]]
    return cal.run(kinds, sims=150, bisect_sims=6, seed=1, procs=1)


def test_sound_kinds_meet_the_bound(rows):
    hyp = [r for r in rows if r["type"] == "hypothesis"]
    assert [(r["kind"], r["effect"]) for r in hyp] == [(k, e) for k in ("noise-pooled", "gate-at_least")
                                                       for e in (0.0, 0.5, 1.0, 2.0)]
    for r in hyp:
        assert r["true_ruled_out"]["n"] == r["false_confirmed"]["n"] == 150
        assert r["verdict"] != "fail", r
        assert r["true_ruled_out"]["lo"] <= r["true_ruled_out"]["rate"] <= r["true_ruled_out"]["hi"]
    # power grows with the gap: a false hypothesis is ruled out more often at 2× than at 0×
    by = {(r["kind"], r["effect"]): r for r in hyp}
    assert by[("noise-pooled", 2.0)]["decided_false"] > by[("noise-pooled", 0.0)]["decided_false"]


def test_bisect_rows_follow_the_engine_to_an_end(rows):
    bis = [r for r in rows if r["type"] == "bisect"]
    assert [r["effect"] for r in bis] == [1.0, 2.0, 4.0]
    for r in bis:
        assert r["wrong"]["n"] == 6
        assert r["right"] + r["undecided"] + r["wrong"]["rate"] == pytest.approx(1.0)
        assert 0 < r["runs"] <= r["cap"]


def test_the_table_and_the_json(cal, rows, capsys):
    text = cal.markdown(rows, 150, 6, 1)
    assert "| kind | gap | true ruled out | false confirmed | decided (true / false) | verdict |" in text
    assert "| kind | gap | first bad wrong | undecided (cap) | runs (mean) | verdict |" in text
    assert "- `gate-at_least`: " in text
    code = cal.main(["--quick", "--kinds", "gate-passes", "--procs", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["sims"] == 20 and out["bound"] == 0.05 and len(out["rows"]) == 4
    assert code == cal.exit_status(out["rows"])
    with pytest.raises(SystemExit):
        cal.main(["--kinds", "no-such-kind"])
