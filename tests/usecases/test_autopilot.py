"""`triage autopilot` against the fake GitHub: dispatched runs come back with the bundled investigation's results."""

from __future__ import annotations

import functools
import json

import pytest

import triage.github
from tests.support.replay import FIRST_BAD, PR, REPO, Oracle, autopilot_rules, import_start


@pytest.fixture
def pilot(cli, fake_github, rules_dir, tmp_path, monkeypatch):
    """The fake GitHub, the rules with dispatch:, and only the two failing nightlies recorded."""
    monkeypatch.setattr(triage.github, "GitHubClient", functools.partial(triage.github.GitHubClient, sleep=lambda s: None))
    autopilot_rules(rules_dir)
    import_start(cli, tmp_path)
    fake_github.on_dispatch = Oracle(fake_github)
    return fake_github


def test_autopilot_reaches_the_recorded_verdict_one_run_at_a_time(cli, pilot):
    started = []
    for _ in range(10):
        r = cli("autopilot", "--pr", str(PR))
        assert r.code == 0, r.err
        if not r.out.startswith("started "):
            break
        started.append(r.out)
        # before its run is recorded: waiting, nothing sent
        posts = len(pilot.dispatches)
        again = cli("autopilot", "--pr", str(PR))
        assert again.code == 0 and again.out.startswith("waiting for ") and len(pilot.dispatches) == posts
        run_id = pilot.on_dispatch.next_id
        rec = cli("add-run", "--pr", str(PR), "--from-github", str(run_id))
        assert rec.code == 0, rec.err
    assert r.out.startswith("the verdict holds: image-regression confirmed"), r.out
    assert len(started) == 4 <= 6  # within max_runs
    assert [d["inputs"].get("image") for d in pilot.dispatches] == [
        "v0.5.13.post1-rocm720-mi35x-20260623", "latest", "v0.5.13.post1-rocm720-mi35x-20260625", FIRST_BAD]
    assert all(d["workflow"] == "nightly-disagg.yml" and d["ref"] == "amd/kimik26-knowngood-67361ff"
               for d in pilot.dispatches)
    assert "it decides the MI35x image tags bisect (image-regression)" in started[0]
    data = json.loads(cli("report", "--pr", str(PR), "--format", "json").out)
    assert {h["id"]: h["status"] for h in data["hypotheses"]}["image-regression"] == "confirmed"
    image = next(b for b in data["bisects"] if b["id"] == "image")
    assert image["first_bad"] == FIRST_BAD and image["done"]
    md = cli("report", "--pr", str(PR)).out
    assert ("started kimik26-fp8-1k1k-1p1d-imagebisect at v0.5.13.post1-rocm720-mi35x-20260623: "
            "it decides the MI35x image tags bisect (image-regression) (run 29900000001, recorded)") in md


def test_autopilot_never_starts_twice_for_one_evaluation(cli, pilot, tmp_path):
    import sqlite3

    assert cli("autopilot", "--pr", str(PR)).out.startswith("started ")
    # as if its run had been recorded, but nothing new came in: the evaluation is the same
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    con.execute("update dispatch set done_at = '2026-07-10 09:00:00'")
    con.commit()
    con.close()
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0 and "already started for this evaluation" in r.out
    assert len(pilot.dispatches) == 1


def test_autopilot_stays_within_its_budget(cli, pilot, rules_dir):
    text = (rules_dir / "kimik26-disagg.yaml").read_text(encoding="utf-8")
    (rules_dir / "kimik26-disagg.yaml").write_text(text.replace("autopilot: {max_runs: 6}", "autopilot: {max_runs: 2}"),
                                                   encoding="utf-8")
    for _ in range(2):
        assert cli("autopilot", "--pr", str(PR)).out.startswith("started ")
        assert cli("add-run", "--pr", str(PR), "--from-github", str(pilot.on_dispatch.next_id)).code == 0
    r = cli("autopilot", "--pr", str(PR))
    assert r.out.startswith("the budget is spent (2 of 2 runs)") and len(pilot.dispatches) == 2


def test_dry_run_sends_nothing_and_says_what_it_would_start(cli, pilot):
    pilot.require_auth = True
    r = cli("autopilot", "--pr", str(PR), "--dry-run")
    assert r.code == 0, r.err
    assert r.out == ("would start bisect:image at v0.5.13.post1-rocm720-mi35x-20260623: it decides the MI35x image "
                     "tags bisect (image-regression) (workflow nightly-disagg.yml on amd/kimik26-knowngood-67361ff, "
                     "-f image=v0.5.13.post1-rocm720-mi35x-20260623 -f configs=kimik26-fp8-1k1k-1p1d-imagebisect)\n")
    assert pilot.requests == [] and pilot.dispatches == []


def test_without_autopilot_in_the_rules_a_dry_run_says_so(cli, fake_github, rules_dir, tmp_path, monkeypatch):
    autopilot_rules(rules_dir, budget="")
    import_start(cli, tmp_path)
    monkeypatch.delenv("GITHUB_TOKEN")
    r = cli("autopilot", "--pr", str(PR), "--dry-run")
    assert r.code == 0, r.err
    assert r.out.startswith("autopilot is not enabled for kimik26-disagg: the rule file has no autopilot:")
    assert "\nwould start bisect:image at " in r.out and fake_github.requests == []


def test_the_pr_label_enables_it_and_a_known_failure_awaiting_its_remedy_is_passed_over(cli, fake_github, rules_dir,
                                                                                         tmp_path, monkeypatch):
    monkeypatch.setattr(triage.github, "GitHubClient", functools.partial(triage.github.GitHubClient, sleep=lambda s: None))
    autopilot_rules(rules_dir, budget="")
    # the backend made ten times as likely: its recipe, whose last run hit a setup error, ranks first
    path = rules_dir / "kimik26-disagg.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "  - id: attention-backend\n", "  - id: attention-backend\n    prior: 10\n"), encoding="utf-8")
    import_start(cli, tmp_path, "28903343346")
    fake_github.add_pull(REPO, PR)
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0 and "no triage:autopilot label" in r.out and fake_github.dispatches == []
    fake_github.add_pull(REPO, PR, labels=["triage:autopilot"])
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0, r.err
    assert r.out.startswith("passed over kimik26-fp8-1k1k-1p1d-aiterdecode: fix first: unregistered-model (setup-error)")
    assert [d["inputs"].get("image") for d in fake_github.dispatches] == ["v0.5.13.post1-rocm720-mi35x-20260623"]


def test_a_lost_answer_is_never_sent_again_and_a_run_without_id_is_found_by_its_config(cli, pilot):
    pilot.inject("POST", "/repos/*/actions/workflows/*/dispatches", 502)
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 0 and r.out.startswith("started? bisect:image at ") and "it may have started" in r.out
    assert cli("autopilot", "--pr", str(PR)).out.startswith("waiting for bisect:image at ")
    assert len(pilot.calls("POST")) == 1
    # GitHub gave no run id: a run of one of the bisect's configs recorded after it ends the wait
    assert cli("add-run", "--pr", str(PR), "--run-id", "7", "--config", "kimik26-fp8-1k1k-1p1d-imagebisect",
               "--metric", "gsm8k=0.941/1319", "--status", "passed", "--set", "python=67361ff",
               "--set", "image=v0.5.13.post1-rocm720-mi35x-20260623").code == 0
    r = cli("autopilot", "--pr", str(PR))
    assert r.out.startswith("started bisect:image at latest"), r.out


def test_run_for_takes_an_open_session_and_a_dry_run_needs_no_client(cli, pilot, tmp_path, monkeypatch):
    from triage.usecases.autopilot import run_for
    from triage.kb import store

    with store.session(store.resolve_url(None)) as s:
        step = run_for(s, "kimik26-disagg", None, dry_run=True)
    assert step.action == "would-start" and step.dispatch["point"] == "v0.5.13.post1-rocm720-mi35x-20260623"
    assert step.dispatch["inputs"] == {"image": "v0.5.13.post1-rocm720-mi35x-20260623",
                                       "configs": "kimik26-fp8-1k1k-1p1d-imagebisect"}
    assert pilot.requests == []
    monkeypatch.delenv("GITHUB_TOKEN")
    r = cli("autopilot", "--pr", str(PR))
    assert r.code == 2 and "no GitHub token" in r.err and pilot.requests == []


def test_autopilot_reads_the_stored_evaluation_and_works_out_only_what_changed(cli, pilot, monkeypatch):
    """After a report, a step of autopilot reuses every stored piece; after a new run, it works
    out again only the pieces that read that run's config, and keeps them."""
    from triage.rules.engine import evaluate as engine

    assert cli("report", "--pr", str(PR), "--format", "json").code == 0
    memos = []
    whole = engine.evaluate
    monkeypatch.setattr(engine, "evaluate", lambda bundle, memo=None, *a, **k: memos.append(memo)
                        or whole(bundle, memo, *a, **k))
    assert cli("autopilot", "--pr", str(PR), "--dry-run").code == 0
    assert len(memos) == 1 and memos[0] is not None and memos[0].worked == []
    assert cli("autopilot", "--pr", str(PR)).out.startswith("started ")
    assert cli("add-run", "--pr", str(PR), "--from-github", str(pilot.on_dispatch.next_id)).code == 0
    memos.clear()
    assert cli("autopilot", "--pr", str(PR), "--dry-run").code == 0
    assert memos[-1] is not None and memos[-1].worked == []  # add-run stored what its run changed
