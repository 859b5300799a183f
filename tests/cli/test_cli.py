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
        (["--metric", "gsm8k=high"], "--metric 'gsm8k=high': expected NAME=VALUE, NAME=VALUE/N or NAME=V1,V2,V3 (repeats)"),
        (["--metric", "gsm8k=0.9/0"], "the sample count after '/' must be a whole number from 1 to 2,147,483,647"),
        (["--metric", "gsm8k=nan"], "the value must be a finite number"),
        (["--metric", "gsm8k=1e999"], "the value must be a finite number"),
        (["--metric", "gsm8k=1" + "0" * 400], "the value must be a finite number"),
        (["--metric", "gsm8k=1.5/1319"], "a proportion (given with n) must lie in [0, 1], got 1.5"),
        (["--run-id", ""], "--run-id is empty"),
        (["--config", " "], "--config is empty"),
        (["--note", "a\x00b"], "--note: a NUL character is not allowed"),
        (["--set", "sha=a\x00"], "--set sha: a NUL character is not allowed"),
        (["--time", "0001-01-01T00:00+14:00"], "time '0001-01-01T00:00+14:00': out of range"),
        (["--time", "9999-12-31T23:59-14:00"], "out of range; expected a year from 1970 to 9998"),
        (["--status", "green"], "--status 'green': expected one of passed, failed, timeout, oom, crashed, cancelled, infra"),
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
    assert r.code == 3  # not a mistake in the input: a workflow tells "not ours" by it
    assert "no investigation for PR 1. Known: example/llm-serve#131, example/llm-serve#128, sgl-project/sglang#30433." in r.err


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
    assert not (tmp_path / "kb.sqlite").exists()  # a failed command creates nothing (#29)
    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    r = cli("import", str(path))
    assert r.code == 2
    count = sqlite3.connect(tmp_path / "kb.sqlite").execute("select count(*) from run").fetchone()[0]
    assert count == len(lines)  # and an existing knowledge base is as it was


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

    def examples_kept(text: str) -> bool:
        """The example block keeps one command a line (click would rewrap it)."""
        block = text.split("Example", 1)[1].split("\n\n")[1]
        return all(line.count("triage ") <= 1 for line in block.splitlines())

    for name in names:
        r = cli(name, "--help")
        assert r.code == 0 and "Example" in r.out and examples_kept(r.out), name
        # the example is shown as written, one command a line, not rewrapped
        assert f"\n    triage {name} " in r.out or f"\n      triage {name} " in r.out, name
    for group, sub in groups.items():
        for c in sub.registered_commands:
            r = cli(group, c.name, "--help")
            assert r.code == 0 and "Example" in r.out and examples_kept(r.out), (group, c.name)


def test_check_valid_rules(cli, rules_dir):
    r = cli("check")
    assert r.code == 0
    assert "rules/kimik26-disagg.yaml: ok (investigation kimik26-disagg, 19 hypotheses" in r.out


def test_version(cli):
    from triage import __version__

    assert cli("--version").out.strip() == f"triage {__version__}"


# --------------------------------------------------------------------------
# Bisects, confounds, experiments and suggestions on the bundled investigation

IMAGE = "v0.5.13.post1-rocm720-mi35x-2026062"


def test_bundled_image_bisect_confound_and_experiments(cli, seeded):
    data = report_json(cli)
    bisects = {b["id"]: b for b in data["bisects"]}
    image = bisects["image"]
    assert (image["last_good"], image["first_bad"]) == (f"{IMAGE}5", "v0.5.14-rocm720-mi35x-20260626")
    assert image["done"] and image["ends_ok"] and image["next"] is None
    assert [p["state"] for p in image["points"]] == ["good", "untested", "good", "bad", "bad"]
    pv = bisects["python-vs-image"]  # step 1 of the seed's bisect: python is not the cause
    assert [(p["label"], p["state"]) for p in pv["points"]] == [
        (f"67361ff + {IMAGE}3", "good"), ("67361ff + latest", "bad"), ("main + latest", "bad")]
    confounds = [w["message"] for w in data["warnings"] if w["kind"] == "confound"]
    assert confounds == ["run 29058233535 (1p1d-srt67361ff): image is latest, its base 1p1d-dev29855 "
                         f"(pr29855-dev) ran {IMAGE}3; the recipe does not declare image"]
    srt = next(e for h in data["hypotheses"] if h["id"] == "python-regression" for e in h["evidence"]
               if e["run_id"] == "29058233535")
    assert "confounded" in srt["flags"]
    decided = {x["recipe"].rpartition("1p1d-")[2]: (x["state"], [(d["hypothesis"], d["verdict"]) for d in x["decided"]])
               for x in data["experiments"]}
    assert decided["aiterdecode"] == ("run", [("attention-backend", "rules_out"), ("decode-forward-mode", "supports")])
    assert decided["nocudagraph"] == ("run", [("hip-graph", "rules_out"), ("decode-forward-mode", "supports")])
    assert decided["mtp-specdecode"] == ("no-valid-run", [])
    # what is left to run: no recipe that already decided is suggested again, and the one
    # whose two attempts gave no result (a setup error, then a crash) comes last
    assert [s["recipe"].rpartition("1p1d-")[2] for s in data["suggestions"]] == ["kvlatent", "attndiff",
                                                                                 "mtp-specdecode"]
    assert data["next_level"] == [{"parent": "image-regression", "title": "The docker image (aiter / ROCm / sgl-kernel)",
                                   "children": ["image-aiter", "image-rocm", "image-sgl-kernel"]}]


def test_bisect_command(cli, seeded):
    r = cli("bisect", "--pr", "30433", "--id", "image")
    assert r.code == 0, r.err
    assert "Bisect MI35x image tags (image)" in r.out and "python vs image" not in r.out
    assert f"ends: good end {IMAGE}3 is good; bad end latest is bad" in r.out
    assert f"{IMAGE}4 [untested]" in r.out and "v0.5.14-rocm720-mi35x-20260626 [BAD]" in r.out
    assert f"last good: {IMAGE}5" in r.out
    data = json.loads(cli("bisect", "--pr", "30433", "--format", "json").out)
    assert [b["id"] for b in data] == ["python-vs-image", "image"]
    # a new run at the untested Jun-24 tag that crashed on infra skips the point, never makes it bad
    r = cli("add-run", "--pr", "30433", "--run-id", "29300000001", "--config", "kimik26-fp8-1k1k-1p1d-imagebisect",
            "--status", "error", "--set", f"image={IMAGE}4", "--set", "python=67361ff",
            "--note", "runner lost")
    assert r.code == 0, r.err
    image = json.loads(cli("bisect", "--pr", "30433", "--id", "image", "--format", "json").out)[0]
    assert image["points"][1]["state"] == "skipped" and image["first_bad"] == "v0.5.14-rocm720-mi35x-20260626"
    r = cli("bisect", "--pr", "30433", "--id", "imag")
    assert r.code == 2 and r.err.strip() == "Error: --id 'imag': no such bisect; known: python-vs-image, image"


def test_bisect_next_point_is_a_suggestion_with_its_command(cli, rules_dir, tmp_path: Path):
    # as the seed stood before the Jun-25 and Jun-26 runs: only the ends were known
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text("".join(line + "\n" for line in EXAMPLE_RUNS.read_text().splitlines()
                               if '"29277682836"' not in line and '"29282623403"' not in line))
    assert cli("import", str(earlier)).code == 0
    data = report_json(cli)
    image = next(b for b in data["bisects"] if b["id"] == "image")
    assert (image["last_good"], image["first_bad"]) == (f"{IMAGE}3", "latest")
    assert image["next"] == "v0.5.13.post1-rocm720-mi35x-20260625" and image["steps"] == 2
    assert image["command"].endswith(f"-f image={IMAGE}5 -f configs=kimik26-fp8-1k1k-1p1d")
    s = next(s for s in data["suggestions"] if s["recipe"] == "bisect:image")
    assert s["command"] == image["command"] and image["command"] in data["command"]
    assert "midpoint of 3 untested point(s)" in s["why"]


# --------------------------------------------------------------------------
# What changed since

def _post(tmp_path: Path, at) -> None:
    from sqlmodel import Session

    from triage.kb import models, store

    with Session(store.get_engine(store.resolve_url(str(tmp_path / "kb.sqlite")))) as s:
        s.add(models.Post(investigation_id="kimik26-disagg", url="https://example.invalid/c/1", action="created",
                          at=at))
        s.commit()


def test_report_since_last_post_names_new_runs_and_status_changes(cli, seeded, tmp_path: Path):
    from datetime import datetime, timezone

    r = cli("report", "--pr", "30433", "--since", "last-post")
    assert r.code == 2
    assert r.err.strip().startswith("Error: --since last-post: sgl-project/sglang#30433 has no posted report yet")
    _post(tmp_path, datetime.now(timezone.utc))
    r = cli("add-run", "--pr", "30433", "--run-id", "29400000000", "--config", "kimik26-fp8-1k1k-1p1d",
            "--metric", "gsm8k=0.881/1319", "--status", "failed")
    assert r.code == 0, r.err
    r = cli("add-run", "--pr", "30433", "--run-id", "28907609511", "--config", "kimik26-fp8-1k1k-1p1d-aiterdecode",
            "--metric", "gsm8k=0.943/1319")
    assert r.code == 0, r.err
    md = cli("report", "--pr", "30433", "--since", "last-post").out
    line = next(x for x in md.splitlines() if x.startswith("> **New since"))
    assert line.startswith("> **New since the last report (")
    assert "1 run(s) (`29400000000 (1p1d)`), 1 updated (`28907609511 (1p1d-aiterdecode)`)" in line
    assert "`attention-backend` ruled out → confirmed" in line
    data = json.loads(cli("report", "--pr", "30433", "--since", "last-post", "--format", "json").out)
    assert data["since"]["runs"] == ["29400000000 (1p1d)"]
    text = cli("report", "--pr", "30433", "--since", "last-post", "--format", "text").out
    assert "New since the last report" in text and "attention-backend ruled out → confirmed" in text
    # an age or a time instead of the last post
    assert "34 run(s)" in cli("report", "--pr", "30433", "--since", "1h").out  # the import too
    assert "34 run(s)" in cli("report", "--pr", "30433", "--since", "2020-01-01T00:00Z").out
    assert "New since" not in cli("report", "--pr", "30433").out


def test_report_since_refuses_what_it_cannot_read(cli, seeded):
    for bad in ("yesterday", "2d ago", "-3h"):
        r = cli("report", "--pr", "30433", "--since", bad)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1
        assert "expected last-post, an ISO 8601 time" in r.err


# --------------------------------------------------------------------------
# Knowledge that carries over

OTHER = """\
schema_version: 1
investigation:
  id: dsv3-disagg
  repo: sgl-project/sglang
  pr: 40000
  title: DeepSeek-V3 disagg accuracy drop after the image bump
  metric: gsm8k
  gate: 0.92
  references:
    bad: {value: 0.87, n: 1319}
    good: {value: 0.95, n: 1319}
hypotheses:
  - id: aiter-bump
    title: aiter changes in the v0.5.16 image
    text: the aiter version baked into the image
  - id: tokenizer
    title: Tokenizer config
recipes:
  - id: dsv3-aiter-revert
    change: rebuild the v0.5.16 image with the previous aiter
    tests: [aiter-bump]
    predicts: {aiter-bump: recovers}
"""


def test_similar_hypotheses_across_two_investigations(cli, seeded, rules_dir: Path):
    (rules_dir / "dsv3.yaml").write_text(OTHER)
    r = cli("add-run", "--pr", "40000", "--run-id", "41", "--config", "dsv3-aiter-revert",
            "--metric", "gsm8k=0.951/1319", "--status", "passed")
    assert r.code == 0, r.err
    r = cli("similar", "--pr", "30433")
    assert r.code == 0, r.err
    assert "image-aiter: aiter changes in the v0.5.14 image" in r.out
    assert "sgl-project/sglang#40000 aiter-bump: aiter changes in the v0.5.16 image (confirmed there)" in r.out
    assert "dsv3-aiter-revert (rebuild the v0.5.16 image with the previous aiter): confirmed" in r.out
    assert "Tokenizer" not in r.out
    matches = json.loads(cli("similar", "--pr", "30433", "--format", "json").out)
    best = {m["hypothesis"]: m for m in matches}
    assert best["image-aiter"]["other_id"] == "aiter-bump" and best["image-aiter"]["score"] >= 80
    # ordered by score: the aiter match is above its ROCm and sgl-kernel siblings' matches
    assert matches[0]["hypothesis"] == "image-aiter"
    # the report shows a "Seen elsewhere" section only when there are matches
    md = cli("report", "--pr", "30433").out
    assert "### Seen elsewhere" in md
    assert "| `image-aiter` | sgl-project/sglang\\#40000: aiter changes in the v0.5.16 image" in md
    assert report_json(cli)["similar"][0]["decided_by"][0]["recipe"] == "dsv3-aiter-revert"
    r = cli("similar", "--pr", "30433", "--hypothesis", "image-aiterr")
    assert r.code == 2 and "no such hypothesis" in r.err
    r = cli("similar", "--pr", "30433", "--hypothesis", "page-size", "--min-score", "95")
    assert r.code == 0 and "nothing scoring ≥ 95" in r.out


def test_no_seen_elsewhere_section_without_other_investigations(cli, seeded):
    assert "Seen elsewhere" not in cli("report", "--pr", "30433").out
    assert json.loads(cli("similar", "--pr", "30433", "--format", "json").out) == []


def test_parse_since_ages_and_times():
    from datetime import datetime, timezone

    from triage.errors import InputError
    from triage.ingest.runs import parse_since

    now = datetime(2026, 7, 10, 12, 0, tzinfo=timezone.utc)
    assert parse_since("90m", now) == datetime(2026, 7, 10, 10, 30, tzinfo=timezone.utc)
    assert parse_since("2d", now) == datetime(2026, 7, 8, 12, 0, tzinfo=timezone.utc)
    assert parse_since("1w", now) == datetime(2026, 7, 3, 12, 0, tzinfo=timezone.utc)
    assert parse_since("2026-07-01T08:00:00+02:00", now) == datetime(2026, 7, 1, 6, 0, tzinfo=timezone.utc)
    with pytest.raises(InputError):
        parse_since("2 days", now)


def test_stored_text_is_printed_as_text_with_controls_escaped(cli, seeded):
    evil = "[/bold][red]x\x1b[2J\x1b]0;title\x07evil\r"
    r = cli("add-run", "--pr", "30433", "--run-id", "1", "--config", evil + "\u202e", "--status", "failed")
    assert r.code == 2 and "an invisible character (U+202E) is not allowed" in r.err  # #30: no bidi in a name
    r = cli("add-run", "--pr", "30433", "--run-id", "1", "--config", evil, "--status", "failed",
            "--note", evil)
    assert r.code == 0, r.err
    assert "\x1b" not in r.out
    assert "[/bold][red]x\\x1b[2J\\x1b]0;title\\x07evil\\x0d" in r.out
    r = cli("runs", "list", "--pr", "30433")
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\u202e" not in r.out and "\r" not in r.out
    assert "[/bold][red]x\\x1b[2J" in r.out.replace("\n", "").replace("│", "").replace(" ", "")
    r = cli("runs", "exclude", "1", "--pr", "30433", "--because", "flaky")
    assert r.code == 0, r.err
    assert "excluded: 1 ([/bold][red]x\\x1b[2J" in r.out
