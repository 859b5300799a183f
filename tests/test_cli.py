"""The command line, end to end on the bundled investigation."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_RUNS

STATUSES = {
    "runtime-args": "ruled_out",
    "page-size": "ruled_out",
    "attention-backend": "ruled_out",
    "hip-graph": "ruled_out",
    "decode-forward-mode": "inconclusive",
    "kv-transfer": "ruled_out",
    "decode-metadata": "ruled_out",
    "kv-values": "ruled_out",
    "decode-rope": "ruled_out",
    "split-kv": "ruled_out",
    "weight-loading": "ruled_out",
    "python-regression": "ruled_out",
    "environment": "ruled_out",
    "image-regression": "confirmed",
    "image-aiter": "open",
    "image-rocm": "open",
    "image-sgl-kernel": "open",
    "kv-latent-dtype": "open",
    "absorbed-decode-kernel": "open",
}


def report_json(cli) -> dict:
    r = cli("report", "--pr", "30433", "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_bundled_investigation_states_what_the_seed_states(cli, seeded):
    data = report_json(cli)
    assert {h["id"]: h["status"] for h in data["hypotheses"]} == STATUSES
    inv = data["investigation"]
    assert (inv["repo"], inv["pr"], inv["metric"], inv["gate"]) == ("sgl-project/sglang", 30433, "gsm8k", 0.92)
    kv = next(h for h in data["hypotheses"] if h["id"] == "kv-transfer")
    flags = {e["rule"]: e["flags"] for e in kv["evidence"]}
    assert "superseded" in flags["kv-zero-warmup"]  # the early "prefix KV all zero" reading
    dfm = next(h for h in data["hypotheses"] if h["id"] == "decode-forward-mode")
    crash = [e for e in dfm["evidence"] if e["run_id"] == "28907609511" and e["config"].endswith("mtp-specdecode")]
    assert crash and crash[0]["verdict"] == "inconclusive" and "init-abort" in crash[0]["reason"]


def test_json_has_the_contract_keys_in_stable_order(cli, seeded):
    first = cli("report", "--pr", "30433", "--format", "json").out
    data = json.loads(first)
    assert list(data)[:1] == ["investigation"]
    for key in ("investigation", "hypotheses", "runs", "bisects", "suggestions", "warnings"):
        assert key in data
    assert set(data["hypotheses"][0]) >= {"id", "title", "status", "evidence"}
    ev = next(e for h in data["hypotheses"] for e in h["evidence"])
    assert set(ev) >= {"run_id", "config", "rule", "verdict", "reason"}
    assert set(data["runs"][0]) >= {"run_id", "config", "status", "metrics", "provenance", "excluded"}
    assert set(data["bisects"][0]) >= {"id", "axis", "last_good", "first_bad", "next", "remaining"}
    assert set(data["suggestions"][0]) >= {"recipe", "tests", "why", "command"}
    assert set(data["warnings"][0]) == {"kind", "message"}
    assert cli("report", "--pr", "30433", "--format", "json").out == first


def test_changing_one_run_changes_the_statuses_that_depend_on_it(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "28907609511", "--config", "kimik26-fp8-1k1k-1p1d-aiterdecode",
            "--metric", "gsm8k=0.943/1319")
    assert r.code == 0, r.err
    assert "updated run 28907609511" in r.out
    assert "attention-backend: ruled_out → confirmed" in r.out
    statuses = {h["id"]: h["status"] for h in report_json(cli)["hypotheses"]}
    assert statuses["attention-backend"] == "confirmed"
    # decode-forward-mode predicted "stays bad" for this recipe: now contradicted
    assert statuses["decode-forward-mode"] == "ruled_out"
    assert statuses["hip-graph"] == "ruled_out"  # untouched
    r = cli("history", "--pr", "30433")
    assert "attention-backend: ruled_out → confirmed" in r.out


def test_add_run_is_idempotent_and_merges(cli, seeded, tmp_path: Path):
    args = ["add-run", "--pr", "30433", "--run-id", "29400000000", "--config", "kimik26-fp8-1k1k-1p1d",
            "--metric", "gsm8k=0.881/1319", "--status", "failed", "--set", "image=latest"]
    r1 = cli(*args)
    assert r1.code == 0 and "recorded run 29400000000" in r1.out
    r2 = cli(*args)
    assert r2.code == 0 and "updated run 29400000000" in r2.out
    cli("add-run", "--pr", "30433", "--run-id", "29400000000", "--config", "kimik26-fp8-1k1k-1p1d", "--set", "sha=abc")
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    rows = con.execute("select provenance, metrics from run where run_id='29400000000'").fetchall()
    assert len(rows) == 1
    prov, metrics = (json.loads(x) for x in rows[0])
    assert prov == {"image": "latest", "sha": "abc"}
    assert metrics == {"gsm8k": {"value": 0.881, "n": 1319}}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "gsm8k=high"], "--metric 'gsm8k=high': expected NAME=VALUE or NAME=VALUE/N"),
        (["--metric", "gsm8k=0.9/0"], "the sample count after '/' must be a whole number ≥ 1"),
        (["--metric", "gsm8k=nan"], "the value must be a finite number"),
        (["--status", "green"], "--status 'green': expected one of passed, failed, crashed, cancelled, error"),
        (["--set", "image"], "--set 'image': expected KEY=VALUE"),
        (["--time", "yesterday"], "time 'yesterday': expected an ISO 8601 date"),
    ],
)
def test_bad_values_one_line_exit_2_nothing_written(cli, seeded, tmp_path: Path, args, message):
    before = sqlite3.connect(tmp_path / "kb.sqlite").execute("select count(*) from run").fetchone()[0]
    base = ["add-run", "--pr", "30433", "--run-id", "1", "--config", "c", "--status", "failed"]
    if "--status" in args:
        base = base[:-2]
    r = cli(*base, *args)
    assert r.code == 2
    assert message in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert "Traceback" not in r.err
    after = sqlite3.connect(tmp_path / "kb.sqlite").execute("select count(*) from run").fetchone()[0]
    assert after == before


def test_unknown_flag_and_missing_option_are_usage_errors(cli, seeded):
    r = cli("report", "--pr", "30433", "--colour")
    assert r.code == 2 and r.err.startswith("Error: No such option: --colour")
    assert len(r.err.strip().splitlines()) == 1
    r = cli("report")
    assert r.code == 2 and "--pr" in r.err
    r = cli("report", "--pr", "30433", "--format", "pdf")
    assert r.code == 2 and "expected markdown, json or text" in r.err


def test_unknown_pr_says_which_exist(cli, seeded):
    r = cli("report", "--pr", "1")
    assert r.code == 2
    assert "no investigation for PR 1. Known: sgl-project/sglang#30433." in r.err


def test_new_run_needs_a_status(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "5", "--config", "c", "--metric", "gsm8k=0.9")
    assert r.code == 2 and "is new: give its --status" in r.err


def test_exclude_and_include(cli, seeded):
    r = cli("runs", "exclude", "29042111257", "--because", "wrong branch")
    assert r.code == 0 and "excluded: 29042111257" in r.out
    statuses = {h["id"]: h["status"] for h in report_json(cli)["hypotheses"]}
    assert statuses["split-kv"] == "inconclusive"
    cli("runs", "include", "29042111257")
    statuses = {h["id"]: h["status"] for h in report_json(cli)["hypotheses"]}
    assert statuses["split-kv"] == "ruled_out"
    r = cli("runs", "exclude", "999", "--because", "x")
    assert r.code == 2 and "no run 999" in r.err


def test_manual_evidence_from_the_command_line(cli, seeded):
    r = cli("evidence", "add", "--pr", "30433", "--hypothesis", "image-aiter", "--verdict", "confirms",
            "--because", "reverting aiter alone in the v0.5.14 image restores 0.94", "--author", "alice")
    assert r.code == 0, r.err
    assert "image-aiter: open → confirmed" in r.out
    data = report_json(cli)
    aiter = next(h for h in data["hypotheses"] if h["id"] == "image-aiter")
    assert aiter["evidence"][0]["flags"] == ["manual"]
    r = cli("evidence", "add", "--pr", "30433", "--hypothesis", "image-aiterr", "--verdict", "confirms", "--because", "x")
    assert r.code == 2 and "did you mean 'image-aiter'" in r.err


def test_import_is_all_or_nothing_and_names_the_bad_line(cli, rules_dir, tmp_path: Path):
    lines = EXAMPLE_RUNS.read_text().splitlines()
    bad = lines[:5] + ['{"investigation": "kimik26-disagg", "run_id": "x", "config": "c", "status": "fine"}'] + lines[5:]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(bad) + "\n")
    r = cli("import", str(path))
    assert r.code == 2
    assert "bad.jsonl:6: --status 'fine'" in r.err
    count = sqlite3.connect(tmp_path / "kb.sqlite").execute("select count(*) from run").fetchone()[0]
    assert count == 0


def test_export_import_round_trip(cli, seeded, tmp_path: Path):
    out = tmp_path / "out.jsonl"
    assert cli("export", "--pr", "30433", "-o", str(out)).code == 0
    original = [json.loads(x) for x in EXAMPLE_RUNS.read_text().splitlines()]
    exported = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(exported) == len(original)
    for a, b in zip(original, exported):
        for key, value in a.items():
            assert b[key] == value, (key, a["run_id"])
    # re-import into a fresh knowledge base gives the same export
    r = cli("--db", str(tmp_path / "other.sqlite"), "import", str(out))
    assert r.code == 0, r.err
    again = cli("--db", str(tmp_path / "other.sqlite"), "export", "--pr", "30433").out
    assert again == out.read_text()


def test_help_has_an_example_for_every_command(cli):
    from triage.cli import app, evidence_app, runs_app, signatures_app

    r = cli("--help")
    assert r.code == 0 and "Example" in r.out
    names = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]
    groups = {"runs": runs_app, "evidence": evidence_app, "signatures": signatures_app}
    for name in names:
        r = cli(name, "--help")
        assert r.code == 0 and "Example" in r.out, name
    for group, sub in groups.items():
        for c in sub.registered_commands:
            r = cli(group, c.name, "--help")
            assert r.code == 0 and "Example" in r.out, (group, c.name)


def test_check_valid_rules(cli, rules_dir):
    r = cli("check")
    assert r.code == 0
    assert "rules/kimik26-disagg.yaml: ok (investigation kimik26-disagg, 19 hypotheses" in r.out


def test_version(cli):
    from triage import __version__

    assert cli("--version").out.strip() == f"triage {__version__}"
