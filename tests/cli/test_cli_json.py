"""--format json wherever a script would want it; tables that fit; typos said; runs deleted with a trace."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLE_RUNS

BASE = "kimik26-fp8-1k1k-1p1d"


def _json(cli, *args):
    r = cli(*args, "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_hypotheses_json(cli, seeded):
    data = _json(cli, "hypotheses", "--pr", "30433")
    by_id = {h["id"]: h for h in data}
    assert by_id["image-regression"]["status"] == "confirmed"
    assert by_id["image-aiter"]["parent"] == "image-regression"
    assert by_id["attention-backend"]["reasons"]


def test_history_json(cli, seeded):
    data = _json(cli, "history", "--pr", "30433")
    assert {"changes", "retired", "deleted_runs"} <= set(data)
    assert any(c["hypothesis"] == "image-regression" and c["status"] == "confirmed" for c in data["changes"])


def test_runs_list_json(cli, seeded):
    data = _json(cli, "runs", "list", "--pr", "30433")
    assert len(data) == sum(1 for line in open(EXAMPLE_RUNS) if line.strip())
    nightly = next(r for r in data if r["run_id"] == "28873810961" and r["config"] == BASE)
    assert nightly["metrics"]["gsm8k"]["value"] == pytest.approx(0.879, abs=0.01)


def test_check_json_ok_and_problems(cli, rules_dir, tmp_path):
    data = _json(cli, "check")
    assert data["ok"] is True and not data["problems"]
    assert any(f["investigation"] == "kimik26-disagg" and f["counts"]["hypotheses"] == 19 for f in data["files"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nsignatures:\n  - id: x\n    text: ab\n    class: infra\n")
    r = cli("check", str(bad), "--format", "json")
    assert r.code == 2
    problems = json.loads(r.out)["problems"]
    assert problems and problems[0]["path"] == str(bad) and problems[0]["line"] == 4


def test_test_json(cli, rules_dir):
    data = _json(cli, "test")
    assert data["failed"] == 0 and data["passed"] == len(data["cases"]) > 0
    assert all(c["ok"] and not c["failures"] for c in data["cases"])


def test_add_run_json_says_what_changed(cli, seeded):
    data = _json(cli, "add-run", "--pr", "30433", "--run-id", "28907609511",
                 "--config", f"{BASE}-aiterdecode", "--metric", "gsm8k=0.943/1319", "--status", "passed")
    assert data["runs"] == [{"run_id": "28907609511", "config": f"{BASE}-aiterdecode", "action": "updated",
                             "status": "passed", "metrics": {"gsm8k": {"value": 0.943, "n": 1319}}}]
    assert {"hypothesis": "attention-backend", "from": "ruled_out", "to": "confirmed"} in data["changes"]


def test_post_json_dry_run(cli, seeded, fake_github):
    r = cli("post", "--pr", "30433", "--dry-run", "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["action"] == "would create" and data["pr"] == 30433 and data["url"] is None
    assert data["body"] and data["request"]


def test_unknown_format_is_bad_input(cli, seeded):
    for args in (("hypotheses", "--pr", "30433"), ("history", "--pr", "30433"), ("check",), ("test",)):
        r = cli(*args, "--format", "yaml")
        assert r.code == 2 and "--format 'yaml'" in r.err


@pytest.mark.parametrize("width", [80, 120])
def test_tables_fit_the_terminal(cli, seeded, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    for args in (("hypotheses", "--pr", "30433"), ("runs", "list", "--pr", "30433")):
        r = cli(*args)
        assert r.code == 0, r.err
        lines = r.out.splitlines()
        assert max(len(line) for line in lines) <= width, (args, max(len(line) for line in lines))
        text = r.out
        # every hypothesis and run id is there, whole, whatever the width
        ids = ["image-regression", "attention-backend"] if args[0] == "hypotheses" else ["28873810961"]
        for i in ids:
            assert i in text, (width, i)


def test_hypotheses_wide_shows_titles(cli, seeded, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    narrow = cli("hypotheses", "--pr", "30433").out
    wide = cli("hypotheses", "--pr", "30433", "--wide").out
    assert "The docker image" not in narrow and "The docker image" in wide


def test_stored_text_is_not_markup(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "1", "--config", "[/bold]x", "--status", "failed")
    assert r.code == 0, r.err
    r = cli("runs", "list", "--pr", "30433")
    assert r.code == 0 and "[/bold]x" in r.out, r.err


def test_typos_are_warned_with_the_closest_name(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "9", "--config", f"{BASE}-aiterdecod",
            "--metric", "gsm8kk=0.9/1319", "--status", "failed")
    assert r.code == 0, r.err
    assert "warning: --metric gsm8kk: no rule, reference or extractor of kimik26-disagg uses it; did you mean gsm8k?" in r.err
    assert f"did you mean {BASE}-aiterdecode?" in r.err
    before = _json(cli, "runs", "list", "--pr", "30433")
    r = cli("add-run", "--pr", "30433", "--run-id", "10", "--config", BASE, "--metric", "gsm8kk=0.9/1319",
            "--status", "failed", "--strict")
    assert r.code == 2 and "did you mean gsm8k?" in r.err and "(--strict)" in r.err
    assert _json(cli, "runs", "list", "--pr", "30433") == before
    # known names say nothing
    r = cli("add-run", "--pr", "30433", "--run-id", "11", "--config", BASE, "--metric", "gsm8k=0.9/1319",
            "--status", "failed", "--strict")
    assert r.code == 0 and "warning" not in r.err, r.err


def test_runs_delete_keeps_the_record_in_history(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "29300000000", "--config", BASE,
            "--metric", "gsm8k=0.95/1319", "--status", "passed")
    assert r.code == 0
    r = cli("runs", "delete", "29300000000", "--because", "recorded on the wrong PR")
    assert r.code == 0 and "deleted: 29300000000 (kimik26-fp8-1k1k-1p1d)" in r.out, r.err
    runs = _json(cli, "runs", "list", "--pr", "30433")
    assert not any(x["run_id"] == "29300000000" for x in runs)
    hist = _json(cli, "history", "--pr", "30433")
    d = hist["deleted_runs"][0]
    assert (d["run_id"], d["because"]) == ("29300000000", "recorded on the wrong PR")
    assert d["record"]["metrics"]["gsm8k"]["value"] == 0.95
    assert "recorded on the wrong PR" in cli("history", "--pr", "30433").out
    for args, msg in ((("29300000000", "--because", "x"), "no run 29300000000"),
                      (("28873810961", "--because", " "), "--because must say why")):
        r = cli("runs", "delete", *args)
        assert r.code == 2 and msg in r.err


def test_repeats_in_one_call_are_runs_of_the_config(cli, seeded):
    data = _json(cli, "add-run", "--pr", "30433", "--run-id", "29400000000", "--config", BASE,
                 "--metric", "gsm8k=0.881,0.879,0.884/1319", "--metric", "neg_slots=0", "--status", "failed")
    assert [(r["run_id"], r["metrics"]["gsm8k"]["value"], r["metrics"]["gsm8k"]["n"], r["metrics"]["neg_slots"]["value"])
            for r in data["runs"]] == [("29400000000-r1", 0.881, 1319, 0.0), ("29400000000-r2", 0.879, 1319, 0.0),
                                       ("29400000000-r3", 0.884, 1319, 0.0)]
    runs = {r["run_id"] for r in _json(cli, "runs", "list", "--pr", "30433")}
    assert {"29400000000-r1", "29400000000-r2", "29400000000-r3"} <= runs


@pytest.mark.parametrize("metrics, message", [
    (["gsm8k=0.88,0.87", "neg_slots=0,1,2"], "repeat lists of different lengths (2, 3)"),
    (["gsm8k=0.88,,0.87"], "an empty repeat"),
    (["gsm8k=high"], "NAME=V1,V2,V3 (repeats)"),
])
def test_bad_repeats_are_refused(cli, seeded, metrics, message):
    before = _json(cli, "runs", "list", "--pr", "30433")
    args = [x for m in metrics for x in ("--metric", m)]
    r = cli("add-run", "--pr", "30433", "--run-id", "5", "--config", BASE, "--status", "failed", *args)
    assert r.code == 2 and message in r.err, r.err
    assert _json(cli, "runs", "list", "--pr", "30433") == before


def test_repeats_and_a_log_do_not_mix(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "5", "--config", BASE, "--metric", "gsm8k=0.88,0.87",
            "--log", "examples/logs/nightly-base.log.gz")
    assert r.code == 2 and "--log reads one run" in r.err


def _records():
    return [json.loads(line) for line in open(EXAMPLE_RUNS) if line.strip()]


def test_runs_list_shows_the_last_runs_recorded_and_says_how_many_it_left_out(cli, seeded):
    """#31: a wide investigation's 100,000 runs took Rich 43 s to lay out; the text lists the
    last ones recorded (100 unless --last says otherwise) and says what it left out."""
    records = _records()
    shown = {r["run_id"] for r in records[-5:]}
    left = {r["run_id"] for r in records[:-5]} - shown
    r = cli("runs", "list", "--pr", "30433", "--last", "5", "--wide")
    assert r.code == 0, r.err
    assert all(i in r.out for i in shown) and not any(i in r.out for i in left)
    assert f"the last 5 of {len(records)} runs recorded (--last all lists every one)" in r.out
    for every in (("--last", "all"), ()):  # 33 runs: fewer than the default's 100
        r = cli("runs", "list", "--pr", "30433", "--wide", *every)
        assert r.code == 0, r.err
        assert all(i in r.out for i in shown | left) and "runs recorded" not in r.out
    r = cli("runs", "list", "--pr", "30433", "--last", "0")
    assert r.code == 0 and f"the last 0 of {len(records)} runs recorded" in r.out
    r = cli("runs", "list", "--pr", "30433", "--last", "some")
    assert r.code == 2 and "--last some: give a number of runs (0 or more) or all" in r.err


def test_runs_list_json_is_every_run_unless_last_says(cli, seeded):
    records = _records()
    assert len(_json(cli, "runs", "list", "--pr", "30433")) == len(records)
    last = _json(cli, "runs", "list", "--pr", "30433", "--last", "3")
    assert [(r["run_id"], r["config"]) for r in last] == [(r["run_id"], r["config"]) for r in records[-3:]]
