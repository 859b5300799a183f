"""`triage post` end to end: the CLI against the local fake GitHub."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import pytest

import triage.github
from tests.support.gfm import check_comment
from triage.render.report import COMMENT_LIMIT

REPO, PR = "sgl-project/sglang", 30433
MARKER = "<!-- triage:investigation=kimik26-disagg -->"
LIST = f"/repos/{REPO}/issues/{PR}/comments"


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retries wait on this list instead of the clock."""
    waits: list[float] = []
    monkeypatch.setattr(triage.github, "GitHubClient", functools.partial(triage.github.GitHubClient, sleep=waits.append))
    return waits


@pytest.fixture
def gh(fake_github, sleeps, seeded):
    """The fake GitHub, with the bundled investigation in the knowledge base."""
    return fake_github


def posts(tmp_path: Path) -> list[tuple]:
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    return con.execute("select investigation_id, url, action from post order by pk").fetchall()


def test_create_then_unchanged_then_update_the_same_comment(cli, gh, tmp_path):
    first = cli("post", "--pr", str(PR))
    assert first.code == 0, first.err
    (comment,) = gh.comments(REPO, PR)
    assert first.out == f"created {comment['html_url']}\n"
    assert comment["user"]["login"] == "triage-bot"
    assert comment["body"] == cli("report", "--pr", str(PR), "--fit").out
    check_comment(comment["body"], MARKER, tables=7)
    assert posts(tmp_path) == [("kimik26-disagg", comment["html_url"], "created")]

    writes = len(gh.writes())
    again = cli("post", "--pr", str(PR))
    assert again.code == 0 and again.out == f"unchanged {comment['html_url']}\n"
    assert len(gh.writes()) == writes == 1
    assert len(posts(tmp_path)) == 1  # nothing was written, nothing recorded

    r = cli("add-run", "--pr", str(PR), "--run-id", "29500000000", "--config", "kimik26-fp8-1k1k-1p1d",
            "--metric", "gsm8k=0.884/1319", "--status", "failed")
    assert r.code == 0, r.err
    third = cli("post", "--pr", str(PR), "--repo", REPO)
    assert third.code == 0 and third.out == f"updated {comment['html_url']}\n"
    (edited,) = gh.comments(REPO, PR)
    assert edited["id"] == comment["id"] and "29500000000" in edited["body"]
    assert [c.method for c in gh.writes()] == ["POST", "PATCH"]
    assert [p[2] for p in posts(tmp_path)] == ["created", "updated"]


def test_a_comment_by_another_account_with_the_marker_is_left_alone(cli, gh):
    quoted = gh.add_comment(REPO, PR, f"quoting the bot:\n\n{MARKER}\n", login="alice")
    r = cli("post", "--pr", str(PR))
    assert r.code == 0 and r.out.startswith("created ")
    comments = gh.comments(REPO, PR)
    assert len(comments) == 2 and comments[0] == quoted
    assert gh.calls("PATCH") == []


def test_own_comment_found_on_a_later_page(cli, gh):
    for i in range(150):
        gh.add_comment(REPO, PR, f"chatter {i}", login="bob")
    own = gh.add_comment(REPO, PR, f"old report\n{MARKER}\n", login="triage-bot")
    r = cli("post", "--pr", str(PR))
    assert r.code == 0 and r.out == f"updated {own['html_url']}\n"
    assert [c.query.get("page") for c in gh.calls("GET", LIST)] == [None, "2"]
    assert all(c.query["per_page"] == "100" for c in gh.calls("GET", LIST))


@pytest.mark.parametrize("arm", [
    pytest.param(lambda gh: gh.inject("POST", LIST, 502), id="502-then-201"),
    pytest.param(lambda gh: gh.inject_create_then_fail(502), id="created-then-502"),
    pytest.param(lambda gh: gh.inject_secondary_rate_limit("POST", LIST, retry_after=7), id="403-retry-after"),
    pytest.param(lambda gh: gh.inject("POST", LIST, 429, headers={"Retry-After": "3"}), id="429-retry-after"),
])
def test_retries_end_with_exactly_one_comment(cli, gh, sleeps, arm):
    arm(gh)
    r = cli("post", "--pr", str(PR))
    assert r.code == 0, r.err
    (comment,) = gh.comments(REPO, PR)
    assert r.out == f"created {comment['html_url']}\n"
    assert comment["body"].rstrip().endswith(MARKER)
    assert len(sleeps) == 1


def test_retry_after_is_honoured(cli, gh, sleeps):
    gh.inject_secondary_rate_limit("POST", LIST, retry_after=7)
    assert cli("post", "--pr", str(PR)).code == 0
    assert sleeps == [7.0]


def test_rate_limit_reset_too_far_gives_up_with_one_line(cli, gh, sleeps):
    gh.inject_primary_rate_limit("GET", LIST, reset_in=3600)
    r = cli("post", "--pr", str(PR))
    assert r.code == 1 and sleeps == []
    (line,) = r.err.splitlines()
    assert line.startswith("Error: GitHub rate limit exhausted (403)") and "try again later" in line
    assert gh.comments(REPO, PR) == []


def test_huge_investigation_posts_under_the_limit(cli, fake_github, sleeps, tmp_path):
    from tests.support.generate import HUGE_PR, HUGE_REPO, write_huge

    _, runs = write_huge(tmp_path, runs=1700)
    assert cli("import", str(runs)).code == 0
    assert len(cli("report", "--pr", str(HUGE_PR), "--runs", "all").out) > 4 * COMMENT_LIMIT
    r = cli("post", "--pr", str(HUGE_PR))
    assert r.code == 0, r.err
    (comment,) = fake_github.comments(HUGE_REPO, HUGE_PR)  # the fake refuses more than 65,536 with a 422
    body = comment["body"]
    assert len(body) <= COMMENT_LIMIT
    assert body.rstrip("\n").splitlines()[-1] == "<!-- triage:investigation=huge -->"
    assert f"`triage report --pr {HUGE_PR} --repo {HUGE_REPO}` shows everything." in body
    assert "shortened to fit GitHub's comment limit: " in r.err


def test_actions_token_edits_the_github_actions_bot_comment(cli, gh):
    gh.viewer = None  # GET /user: 403 "Resource not accessible by integration"
    gh.add_comment(REPO, PR, f"old\n{MARKER}\n", login="someone-else")
    own = gh.add_comment(REPO, PR, f"old\n{MARKER}\n", login="github-actions[bot]")
    r = cli("post", "--pr", str(PR))
    assert r.code == 0, r.err
    assert r.out == f"updated {own['html_url']}\n"
    assert [c["body"].startswith("old") for c in gh.comments(REPO, PR)] == [True, False]


def test_bot_login_option(cli, gh):
    gh.viewer = "my-app[bot]"
    own = gh.add_comment(REPO, PR, f"old\n{MARKER}\n", login="my-app[bot]")
    r = cli("post", "--pr", str(PR), "--bot-login", "my-app[bot]")
    assert r.code == 0 and r.out == f"updated {own['html_url']}\n"
    assert gh.calls("GET", "/user") == []


def test_dry_run_prints_the_request_and_the_body_and_writes_nothing(cli, gh, tmp_path):
    r = cli("post", "--pr", str(PR), "--dry-run")
    assert r.code == 0, r.err
    body = cli("report", "--pr", str(PR), "--fit").out
    assert r.out == (f"would create a new comment on {REPO}#{PR}\n"
                     f"POST {LIST} (body: {len(body):,} characters)\n\n{body}")
    assert gh.writes() == [] and posts(tmp_path) == []
    own = gh.add_comment(REPO, PR, f"old\n{MARKER}\n", login="triage-bot")
    r = cli("post", "--pr", str(PR), "--dry-run")
    assert r.out.startswith(f"would update {own['html_url']}\n"
                            f"PATCH /repos/{REPO}/issues/comments/{own['id']} (body: {len(body):,} characters)\n\n## ")
    assert gh.writes() == []


def test_dry_run_needs_no_token(cli, gh, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    gh.require_auth = False
    r = cli("post", "--pr", str(PR), "--dry-run")
    assert r.code == 0 and r.out.startswith("would create")
    assert all("authorization" not in c.headers for c in gh.requests)


@pytest.mark.parametrize("args, env, message", [
    ([], {"GITHUB_TOKEN": None}, "Error: no GitHub token: set GITHUB_TOKEN or GH_TOKEN"),
    (["--bot-login", "not a login"], {}, "Error: --bot-login must be a GitHub login"),
    ([], {"GITHUB_API_URL": "api.github.com"}, "Error: the GitHub API URL must start with http:// or https://"),
    (["--pr", "1"], {}, "Error: no investigation for PR 1."),
])
def test_bad_input_exit_2_or_3_nothing_sent(cli, gh, monkeypatch, tmp_path, args, env, message):
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    argv = ["post", "--pr", str(PR), *args] if "--pr" not in args else ["post", *args]
    r = cli(*argv)
    assert r.code == (3 if "no investigation" in message else 2)
    assert r.err.startswith(message) and len(r.err.splitlines()) == 1
    assert gh.requests == [] and posts(tmp_path) == []


SECRET = "plain-secret-token-for-post-7f3a9c"  # no gh*_ prefix: only exact redaction hides it


@pytest.mark.parametrize("arm, status, says", [
    (lambda gh: setattr(gh, "token", "rotated-token-not-ours"), 401, "set GITHUB_TOKEN or GH_TOKEN to a valid token"),
    (lambda gh: gh.inject("POST", LIST, 403, body={"message": f"Resource not accessible by integration {SECRET}"}),
     403, "`pull-requests: write`"),
    (lambda gh: gh.inject("GET", LIST, 404, body={"message": f"Not Found {SECRET}"}), 404,
     "check the repository name OWNER/NAME and the PR number"),
    (lambda gh: gh.inject("POST", LIST, 422, body={"message": "Validation Failed", "errors": [
        {"resource": "IssueComment", "code": "unprocessable", "field": "data",
         "message": "Body is too long (maximum is 65536 characters)"}]}), 422, "keep a comment at or below 65,536"),
    (lambda gh: gh.inject("POST", LIST, 502, times=None), 502, "gave up after"),
    (lambda gh: gh.inject("POST", LIST, drop=True), None, "run the command again"),
])
def test_github_errors_are_one_line_exit_1_without_the_token(cli, gh, monkeypatch, caplog, arm, status, says):
    import logging

    caplog.set_level(logging.DEBUG)
    gh.token = SECRET
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    arm(gh)
    r = cli("post", "--pr", str(PR))
    assert r.code == 1
    (line,) = r.err.splitlines()
    assert line.startswith("Error: ") and says in line
    if status is not None:
        assert f"({status}" in line
    for text in (r.out, r.err, caplog.text):
        assert SECRET not in text
    assert len(gh.comments(REPO, PR)) == 0


def test_token_appears_in_no_output_of_a_whole_session(cli, gh, monkeypatch, caplog, sleeps):
    import logging

    caplog.set_level(logging.DEBUG)
    gh.token = SECRET
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    outputs = []
    gh.inject("POST", LIST, 502)
    for args in (["post"], ["post"], ["post", "--dry-run"], ["report", "--fit"]):
        r = cli(*args, "--pr", str(PR))
        outputs += [r.out, r.err]
    gh.inject("PATCH", "/repos/*/issues/comments/*", 403, body={"message": f"denied {SECRET}"}, times=None)
    cli("add-run", "--pr", str(PR), "--run-id", "1", "--config", "c", "--status", "failed")
    r = cli("post", "--pr", str(PR))
    assert r.code == 1
    outputs += [r.out, r.err, caplog.text]
    assert all(SECRET not in text for text in outputs)
    assert len(gh.comments(REPO, PR)) == 1


def test_the_suite_fails_a_test_whose_output_shows_a_token(pytester: pytest.Pytester):
    from tests.support.fakegithub import DEFAULT_TOKEN

    pytester.makeconftest("from tests.conftest import pytest_runtest_makereport  # noqa: F401\n")
    pytester.makepyfile(test_leak=(
        "from tests.support.fakegithub import DEFAULT_TOKEN\n"
        "def test_prints():\n    print('token', DEFAULT_TOKEN)\n"
        "def test_fails():\n    assert DEFAULT_TOKEN == 'x'\n"
        "def test_quiet():\n    print('nothing')\n"
    ))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert DEFAULT_TOKEN not in out
    assert "a GitHub token appeared in the test's output" in out and "was masked" in out


def test_the_comment_says_what_is_new_and_stays_unchanged_when_nothing_is(cli, gh, tmp_path):
    assert cli("post", "--pr", str(PR)).out.startswith("created ")
    (comment,) = gh.comments(REPO, PR)
    assert "New since" not in comment["body"]  # a first comment has nothing to compare with
    r = cli("add-run", "--pr", str(PR), "--run-id", "29500000001", "--config", "kimik26-fp8-1k1k-1p1d-nocudagraph",
            "--metric", "gsm8k=0.941/1319", "--status", "passed")
    assert r.code == 0, r.err
    assert cli("post", "--pr", str(PR)).out.startswith("updated ")
    (comment,) = gh.comments(REPO, PR)
    line = next(x for x in comment["body"].splitlines() if "New since" in x)
    assert "the last update of this comment" in line and "29500000001" in line
    assert "status changes: `hip-graph` ruled out → inconclusive" in line  # 0.941 next to 0.883: can't tell any more
    writes = len(gh.writes())
    # nothing new: the same line stays, and nothing is edited
    assert cli("post", "--pr", str(PR)).out.startswith("unchanged ")
    assert len(gh.writes()) == writes
    (again,) = gh.comments(REPO, PR)
    assert again["body"] == comment["body"]


def test_offline_dry_run_asks_github_nothing(cli, gh, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")  # nothing listens there
    r = cli("post", "--pr", str(PR), "--offline")
    assert r.code == 0, r.err
    head, _, body = r.out.partition("\n\n")
    assert head == (f"would create a new comment on {REPO}#{PR}\n"
                    f"POST /repos/{REPO}/issues/{PR}/comments (body: {len(body):,} characters)")
    assert body == cli("report", "--pr", str(PR), "--fit").out and body.rstrip().endswith(MARKER)
    assert gh.requests == []
