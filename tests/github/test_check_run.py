"""The ``triage`` check run on the PR's head commit, set with the sticky comment:
created once, then updated (never a second one), its summary within GitHub's
limit, skipped with one line for a token that may not write check runs, shown
by a dry run; against the fake GitHub, which answers as ``rest/checks.*.json``."""

from __future__ import annotations

import json

import pytest

from tests.support.fakegithub import load_fixture
from triage.github.checks import CUT_NOTE, NOT_AN_APP, SUMMARY_LIMIT, fit_summary

REPO, PR = "sgl-project/sglang", 30433
SHA = "3dca65fa3e8d4b3da3f3d056c59aee1c50f41390"
DASHBOARD = "https://triage.example.com"


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@pytest.fixture
def gh(fake_github, seeded):
    """The fake GitHub with the bundled investigation's PR (its head commit known)."""
    fake_github.add_pull(REPO, PR, head_sha=SHA)
    return fake_github


@pytest.fixture
def as_app(gh, app_key, tmp_path, monkeypatch):
    """``triage post`` as a GitHub App installed on the repository, the dashboard's address set."""
    private, public = app_key
    (tmp_path / "app.pem").write_text(private)
    gh.enable_app("4242", public, installations={REPO: 777})
    monkeypatch.setenv("TRIAGE_APP_ID", "4242")
    monkeypatch.setenv("TRIAGE_APP_PRIVATE_KEY_FILE", str(tmp_path / "app.pem"))
    monkeypatch.setenv("TRIAGE_DASHBOARD_URL", DASHBOARD + "/")
    return gh


def test_as_an_app_the_post_sets_a_neutral_check_run_with_the_verdict_and_the_first_screen(cli, as_app):
    r = cli("post", "--pr", str(PR))
    assert r.code == 0, r.err
    (comment,) = as_app.comments(REPO, PR)
    assert comment["user"]["login"] == "triage-app[bot]"
    (run,) = as_app.check_runs(REPO)
    assert r.out.splitlines() == [f"created {comment['html_url']}", f"check run created {run['html_url']}"]
    assert (run["name"], run["head_sha"], run["status"], run["conclusion"]) == ("triage", SHA, "completed", "neutral")
    assert run["details_url"] == f"{DASHBOARD}/pr/{REPO}/{PR}" and run["external_id"] == "kimik26-disagg"
    verdict = json.loads(cli("report", "--pr", str(PR), "--format", "json").out)["verdict"]
    assert run["output"]["title"] == verdict[0]
    first = comment["body"][:comment["body"].index("<details>")]
    assert run["output"]["summary"] == first.strip() + "\n" and "### Verdict so far" in run["output"]["summary"]
    (create,) = as_app.calls("POST", f"/repos/{REPO}/check-runs")
    assert create.headers["authorization"][7:] in as_app.installation_tokens
    assert set(create.json) == {"name", "head_sha", "status", "conclusion", "output", "details_url", "external_id"}


def test_a_new_post_updates_the_check_run_and_never_adds_a_second(cli, as_app):
    assert cli("post", "--pr", str(PR)).code == 0
    (first,) = as_app.check_runs(REPO)
    again = cli("post", "--pr", str(PR))
    assert again.code == 0 and again.out.splitlines()[1] == f"check run unchanged {first['html_url']}"
    assert as_app.calls("PATCH", f"/repos/{REPO}/check-runs/*") == []

    r = cli("add-run", "--pr", str(PR), "--run-id", "29500000000", "--config", "kimik26-fp8-1k1k-1p1d",
            "--metric", "gsm8k=0.884/1319", "--status", "failed")
    assert r.code == 0, r.err
    third = cli("post", "--pr", str(PR))
    assert third.code == 0 and third.out.splitlines()[1] == f"check run updated {first['html_url']}"
    (run,) = as_app.check_runs(REPO)
    assert run["id"] == first["id"] and run["output"]["summary"] != first["output"]["summary"]
    (patch,) = as_app.calls("PATCH", f"/repos/{REPO}/check-runs/{first['id']}")
    assert "head_sha" not in patch.json and patch.json["conclusion"] == "neutral"
    assert len(as_app.calls("POST", f"/repos/{REPO}/check-runs")) == 1
    (comment,) = as_app.comments(REPO, PR)
    assert "29500000000" in comment["body"]


def test_without_a_dashboard_address_the_apps_page_is_the_link_and_a_second_post_changes_nothing(
        cli, as_app, monkeypatch):
    monkeypatch.delenv("TRIAGE_DASHBOARD_URL")
    assert cli("post", "--pr", str(PR)).code == 0
    (run,) = as_app.check_runs(REPO)
    (create,) = as_app.calls("POST", f"/repos/{REPO}/check-runs")
    assert "details_url" not in create.json and run["details_url"] == "https://github.com/apps/triage-app"
    again = cli("post", "--pr", str(PR))
    assert again.out.splitlines()[1] == f"check run unchanged {run['html_url']}"
    assert as_app.calls("PATCH", f"/repos/{REPO}/check-runs/*") == []


def test_a_new_head_commit_gets_its_own_run_and_another_apps_run_of_that_name_is_left_alone(cli, as_app):
    assert cli("post", "--pr", str(PR)).code == 0
    as_app.add_pull(REPO, PR, head_sha="b" * 40)  # a push to the PR
    as_app.token_writes_checks = True  # another App (here: the Actions token) has a "triage" run there too
    from tests.support.fakegithub import env_client

    with env_client() as other:
        other.request("POST", f"/repos/{REPO}/check-runs", json={
            "name": "triage", "head_sha": "b" * 40, "conclusion": "success",
            "output": {"title": "theirs", "summary": "theirs"}})
    assert cli("post", "--pr", str(PR)).code == 0
    ours = [r for r in as_app.check_runs(REPO, "b" * 40) if r["app"]["slug"] == "triage-app"]
    assert len(ours) == 1 and len(as_app.check_runs(REPO, SHA)) == 1
    assert [r["output"]["title"] for r in as_app.check_runs(REPO, "b" * 40)] == ["theirs", ours[0]["output"]["title"]]


def test_a_long_first_screen_is_cut_at_a_line_within_the_summary_limit(gh):
    from tests.support.fakegithub import env_client
    from triage.usecases.post import set_check_run

    gh.token_writes_checks = True
    marker = "<!-- triage:investigation=long -->"
    line = "- ❌ **Ruled out:** a hypothesis with a long title, ünïcödé included\n"
    body = "## Long\n\n" + line * 2000 + marker + "\n"  # ~140 kB, nothing folded: all of it is the first screen
    model = {"investigation": {"repo": REPO, "pr": PR, "id": "long"}, "verdict": ["Confirmed: the long one."],
             "marker": marker}
    with env_client() as client:
        check = set_check_run(client, model, body)
    assert check.action == "created", check.reason
    (run,) = gh.check_runs(REPO)
    summary = run["output"]["summary"]
    assert len(summary.encode("utf-8")) <= SUMMARY_LIMIT < len(body.encode("utf-8"))
    assert summary.startswith("## Long\n\n" + line) and marker not in summary
    assert summary.endswith("the PR comment has all of it.*\n")
    kept = summary[:summary.index("\n\n*Cut")]
    assert kept.endswith(line.rstrip("\n"))  # whole lines, as many as fit with the note
    assert len((kept + "\n" + line + CUT_NOTE).encode("utf-8")) > SUMMARY_LIMIT


def test_fit_summary_keeps_what_fits_and_never_splits_a_character():
    assert fit_summary("short\n") == "short\n"
    exact = "é" * (SUMMARY_LIMIT // 2)  # two bytes each: 65,534 bytes
    assert fit_summary(exact) == exact
    one_line = "é" * SUMMARY_LIMIT  # no line to cut at: cut within it, at a whole character
    cut = fit_summary(one_line)
    assert len(cut.encode("utf-8")) <= SUMMARY_LIMIT and cut.startswith("éé") and "\ufffd" not in cut


def test_a_token_that_may_not_write_check_runs_skips_it_in_one_line_and_the_comment_stands(cli, gh):
    r = cli("post", "--pr", str(PR), "--check-run")
    assert r.code == 0, r.err
    (comment,) = gh.comments(REPO, PR)
    assert r.out == f"created {comment['html_url']}\n"
    assert r.err.strip().splitlines() == [NOT_AN_APP] and "Traceback" not in r.err
    (refused,) = gh.calls("POST", f"/repos/{REPO}/check-runs")
    assert gh.check_runs(REPO) == []
    personal = load_fixture("checks.create")["refusals"]["personal_token"]
    assert personal["body"]["message"] == "You must authenticate via a GitHub App."

    plain = cli("post", "--pr", str(PR))  # a token and no --check-run: not tried at all
    assert plain.code == 0 and plain.err == "" and len(gh.calls("POST", f"/repos/{REPO}/check-runs")) == 1


def test_an_app_without_the_checks_permission_skips_it_in_one_line(cli, as_app):
    as_app.app_checks_write = False
    r = cli("post", "--pr", str(PR))
    assert r.code == 0, r.err
    assert r.err.strip() == ("check run skipped: GitHub refused it (Resource not accessible by integration); "
                             "the App needs the permission Checks: read and write")
    assert len(as_app.comments(REPO, PR)) == 1 and as_app.check_runs(REPO) == []


def test_a_check_run_that_fails_does_not_lose_the_comment(cli, as_app):
    as_app.inject("POST", f"/repos/{REPO}/check-runs", 422, body={"message": "Validation Failed"})
    r = cli("post", "--pr", str(PR), "--format", "json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["action"] == "created" and out["check_run"]["action"] == "failed"
    assert r.err.startswith("check run not set (the comment is posted): ") and "422" in r.err
    assert len(as_app.comments(REPO, PR)) == 1 and as_app.check_runs(REPO) == []
    again = cli("post", "--pr", str(PR))  # the next post sets it
    assert again.code == 0 and len(as_app.check_runs(REPO)) == 1


def test_dry_run_shows_the_check_run_request_and_sends_nothing(cli, as_app):
    r = cli("post", "--pr", str(PR), "--dry-run")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[:3] == [f"would create a new comment on {REPO}#{PR}", "check run would create",
                         f"POST /repos/{REPO}/check-runs"]
    request = json.loads(r.out[r.out.index("{"):r.out.index("\n}\n") + 2])
    assert request["head_sha"] == SHA and request["conclusion"] == "neutral"
    assert request["details_url"] == f"{DASHBOARD}/pr/{REPO}/{PR}"
    assert [c for c in as_app.writes() if c.path.startswith("/repos/")] == []

    assert cli("post", "--pr", str(PR)).code == 0
    cli("add-run", "--pr", str(PR), "--run-id", "29500000000", "--config", "kimik26-fp8-1k1k-1p1d",
        "--metric", "gsm8k=0.884/1319", "--status", "failed")
    (run,) = as_app.check_runs(REPO)
    update = cli("post", "--pr", str(PR), "--dry-run")
    assert f"PATCH /repos/{REPO}/check-runs/{run['id']}" in update.out.splitlines()
    assert as_app.calls("PATCH", "/repos/*") == []

    offline = cli("post", "--pr", str(PR), "--offline", "--check-run")
    assert offline.code == 0 and '"head_sha": "<the PR\'s head commit>"' in offline.out


def test_a_dashboard_address_that_is_not_http_is_refused_before_anything_is_sent(cli, gh, monkeypatch):
    monkeypatch.setenv("TRIAGE_DASHBOARD_URL", "javascript:alert(1)")
    r = cli("post", "--pr", str(PR), "--check-run")
    assert r.code == 2 and r.err.startswith("Error: TRIAGE_DASHBOARD_URL must be the dashboard's http(s) address")
    assert gh.requests == [] and "Traceback" not in r.err


def test_the_server_as_an_app_sets_the_check_run_with_each_post_and_keeps_one(fake_github, app_key, tmp_path):
    from tests.support.serving import Server, fixture_bytes, with_run
    from tests.support.serve import PR as SPR
    from tests.support.serve import REPO as SREPO
    from tests.support.serve import RUN, WITH_PR, add_run, write_rules

    private, public = app_key
    (tmp_path / "app.pem").write_text(private)
    fake_github.enable_app("4242", public, installations={SREPO: 777})
    fake_github.add_pull(SREPO, SPR, head_sha=SHA)
    write_rules(tmp_path)
    for i in range(2):
        add_run(fake_github, RUN + i, a=0.85 - i / 100)
    srv = Server(tmp_path, fake_github, env={"TRIAGE_APP_ID": "4242", "TRIAGE_APP_PRIVATE_KEY_FILE": str(tmp_path / "app.pem"),
                                             "GITHUB_TOKEN": "", "TRIAGE_DASHBOARD_URL": DASHBOARD}).start()
    try:
        body = fixture_bytes(WITH_PR)
        srv.send(body, "workflow_run")
        srv.wait_settled(1)
        (first,) = fake_github.check_runs(SREPO)
        srv.send(with_run(body, RUN + 1), "workflow_run")
        assert [r[1] for r in srv.wait_settled(2)] == ["done", "done"]
    finally:
        srv.stop()
    (run,) = fake_github.check_runs(SREPO)
    (comment,) = fake_github.comments(SREPO, SPR)
    assert run["id"] == first["id"] and run["head_sha"] == SHA and run["app"]["slug"] == "triage-app"
    assert run["details_url"] == f"{DASHBOARD}/pr/{SREPO}/{SPR}" and run["conclusion"] == "neutral"
    assert str(RUN + 1) in comment["body"]
    assert run["output"]["summary"] == comment["body"][:comment["body"].index("<details>")].strip() + "\n"
    assert run["output"]["summary"] != first["output"]["summary"]
    assert len(fake_github.calls("PATCH", f"/repos/{SREPO}/check-runs/{run['id']}")) == 1
    assert len(fake_github.calls("POST", f"/repos/{SREPO}/check-runs")) == 1


def test_the_server_refuses_a_dashboard_address_that_is_not_http_before_it_starts(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("TRIAGE_DASHBOARD_URL", "ftp://triage.example.com")
    r = cli("serve", "--insecure-no-signature", "--port", "0")
    assert r.code == 2 and r.err.startswith("Error: TRIAGE_DASHBOARD_URL must be the dashboard's http(s) address")
    assert not (tmp_path / "kb.sqlite").exists()  # nothing opened, nothing written
