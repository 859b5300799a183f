"""The sticky comment upsert against the local fake GitHub."""

from __future__ import annotations

import logging

import pytest

from tests.support.fakegithub import env_client, fake_github  # noqa: F401
from triage.errors import InputError
from triage.github.client import (
    GitHubAuthError,
    GitHubBodyTooLong,
    GitHubError,
    GitHubNetworkError,
    GitHubServerError,
)
from triage.github.comments import PostResult, upsert_comment

REPO, PR = "octo-org/octo-repo", 42
MARKER = "<!-- triage:sticky -->"
LIST = f"/repos/{REPO}/issues/{PR}/comments"
EDIT = f"/repos/{REPO}/issues/comments/*"


def body(text: str = "report v1") -> str:
    return f"{MARKER}\n{text}\n"


def upsert(client, text="report v1", **kw) -> PostResult:
    return upsert_comment(client, REPO, PR, body(text), MARKER, **kw)


def assert_relisted_before_every_post(fake) -> None:
    """Every POST after the first is preceded (since the previous POST) by a list GET."""
    last_post = None
    for i, r in enumerate(fake.requests):
        if r.method == "POST" and r.path == LIST:
            if last_post is not None:
                between = fake.requests[last_post + 1 : i]
                assert any(x.method == "GET" and x.path == LIST for x in between), "POST again without re-listing"
            last_post = i


def test_first_upsert_creates(fake_github, client):
    result = upsert(client)
    (comment,) = fake_github.comments(REPO, PR)
    assert result == PostResult("created", comment["html_url"], comment["id"], None)
    assert comment["body"] == body()
    assert comment["user"]["login"] == "triage-bot"
    # the fixture's issue-comment shape
    for key in ("node_id", "url", "issue_url", "author_association", "created_at", "updated_at"):
        assert key in comment


def test_second_identical_upsert_is_unchanged_and_writes_nothing(fake_github, client):
    first = upsert(client)
    n_writes = len(fake_github.writes())
    second = upsert(client)
    assert second.action == "unchanged"
    assert second.comment_id == first.comment_id and second.url == first.url
    assert len(fake_github.writes()) == n_writes == 1


def test_crlf_is_normalised(fake_github, client):
    fake_github.add_comment(REPO, PR, body().replace("\n", "\r\n"), login="triage-bot")
    assert upsert(client).action == "unchanged"
    assert upsert_comment(client, REPO, PR, body().replace("\n", "\r\n"), MARKER).action == "unchanged"
    assert fake_github.writes() == []


def test_changed_body_edits_the_same_comment(fake_github, client):
    first = upsert(client)
    second = upsert(client, "report v2")
    assert second.action == "updated" and second.comment_id == first.comment_id
    (comment,) = fake_github.comments(REPO, PR)
    assert comment["body"] == body("report v2")
    (patch,) = fake_github.calls("PATCH")
    assert patch.path == f"/repos/{REPO}/issues/comments/{first.comment_id}"
    assert patch.json == {"body": body("report v2")}
    assert len(fake_github.calls("POST")) == 1


def test_comment_by_another_account_with_marker_is_left_alone(fake_github, client):
    quoted = fake_github.add_comment(REPO, PR, f"someone quoting the bot {MARKER}", login="alice")
    result = upsert(client)
    assert result.action == "created" and result.comment_id != quoted["id"]
    comments = fake_github.comments(REPO, PR)
    assert len(comments) == 2
    assert comments[0]["body"] == f"someone quoting the bot {MARKER}"
    assert fake_github.calls("PATCH") == []


def test_own_comment_without_marker_is_ignored(fake_github, client):
    fake_github.add_comment(REPO, PR, "an unrelated note", login="triage-bot")
    assert upsert(client).action == "created"
    assert len(fake_github.comments(REPO, PR)) == 2


def test_several_own_comments_edit_the_newest(fake_github, client):
    old = fake_github.add_comment(REPO, PR, body("old"), login="triage-bot")
    fake_github.add_comment(REPO, PR, "chatter", login="bob")
    new = fake_github.add_comment(REPO, PR, body("newer"), login="triage-bot")
    result = upsert(client, "newest")
    assert result.action == "updated" and result.comment_id == new["id"]
    by_id = {c["id"]: c["body"] for c in fake_github.comments(REPO, PR)}
    assert by_id[old["id"]] == body("old")
    assert by_id[new["id"]] == body("newest")


def test_marker_found_on_third_page(fake_github, client):
    for i in range(249):
        fake_github.add_comment(REPO, PR, f"comment {i}", login="bob" if i % 2 else "triage-bot")
    own = fake_github.add_comment(REPO, PR, body("old"), login="triage-bot")  # the 250th
    result = upsert(client, "new")
    assert result.action == "updated" and result.comment_id == own["id"]
    assert len(fake_github.comments(REPO, PR)) == 250
    lists = fake_github.calls("GET", LIST)
    assert [r.query.get("page") for r in lists] == [None, "2", "3"]
    assert all(r.query["per_page"] == "100" for r in lists)
    assert fake_github.calls("POST") == []


def test_502_then_200_creates_exactly_one(fake_github, client, sleeps):
    fake_github.inject("POST", LIST, 502)
    result = upsert(client)
    assert result.action == "created"
    assert len(fake_github.comments(REPO, PR)) == 1
    assert len(fake_github.calls("POST", LIST)) == 2
    assert_relisted_before_every_post(fake_github)
    assert len(sleeps) == 1 and sleeps[0] >= 1.0


def test_created_then_502_does_not_duplicate(fake_github, client, sleeps):
    fake_github.inject_create_then_fail(502)
    result = upsert(client)
    (comment,) = fake_github.comments(REPO, PR)
    assert result.action == "created" and result.comment_id == comment["id"]
    assert len(fake_github.calls("POST", LIST)) == 1
    assert len(fake_github.calls("GET", LIST)) == 2  # before the POST, and after the 502


def test_created_then_502_twice_in_a_row_is_still_one(fake_github, client, sleeps):
    fake_github.inject("POST", LIST, 502)
    fake_github.inject_create_then_fail(504)
    assert upsert(client).action == "created"
    assert len(fake_github.comments(REPO, PR)) == 1
    assert len(fake_github.calls("POST", LIST)) == 2
    assert_relisted_before_every_post(fake_github)


def test_another_run_posted_meanwhile_is_edited_not_duplicated(fake_github, client, sleeps):
    fake_github.inject("POST", LIST, 502)
    # while we back off, a concurrent run's comment (same account) appears
    real_sleep = client._sleep

    def sleep(seconds: float) -> None:
        fake_github.add_comment(REPO, PR, body("from the other run"), login="triage-bot")
        real_sleep(seconds)

    client._sleep = sleep
    result = upsert(client, "ours")
    assert result.action == "updated"
    (comment,) = fake_github.comments(REPO, PR)
    assert comment["body"] == body("ours")


def test_secondary_rate_limit_retry_after_on_create(fake_github, client, sleeps):
    fake_github.inject_secondary_rate_limit("POST", LIST, retry_after=1)
    assert upsert(client).action == "created"
    assert sleeps and sleeps[0] >= 1.0
    assert len(fake_github.comments(REPO, PR)) == 1
    assert_relisted_before_every_post(fake_github)


def test_primary_rate_limit_reset_on_listing(fake_github, client, sleeps):
    fake_github.inject_primary_rate_limit("GET", LIST, reset_in=20)
    assert upsert(client).action == "created"
    assert len(sleeps) == 1 and 19 <= sleeps[0] <= 22
    assert len(fake_github.comments(REPO, PR)) == 1


def test_create_retries_are_bounded(fake_github, sleeps):
    fake_github.inject("POST", LIST, 502, times=None)
    client = env_client(max_retries=2, sleep=sleeps.append)
    with pytest.raises(GitHubServerError) as exc:
        upsert(client)
    text = str(exc.value)
    assert "\n" not in text and "gave up after 2 retries" in text
    assert len(fake_github.calls("POST", LIST)) == 3
    assert_relisted_before_every_post(fake_github)
    assert fake_github.comments(REPO, PR) == []


def test_post_connection_dropped_after_create_finds_it(fake_github, client, sleeps):
    fake_github.inject("POST", LIST, drop=True, perform=True)
    result = upsert(client)
    assert result.action == "created"
    assert len(fake_github.comments(REPO, PR)) == 1
    assert len(fake_github.calls("POST", LIST)) == 1


def test_post_connection_dropped_before_create_is_not_retried(fake_github, client, sleeps):
    fake_github.inject("POST", LIST, drop=True)
    with pytest.raises(GitHubNetworkError) as exc:
        upsert(client)
    assert len(fake_github.calls("POST", LIST)) == 1
    assert fake_github.comments(REPO, PR) == []
    assert "run the command again" in str(exc.value) and "\n" not in str(exc.value)
    # the rerun then creates it once
    assert upsert(client).action == "created"
    assert len(fake_github.comments(REPO, PR)) == 1


def test_too_long_body_raises_body_too_long(fake_github, client):
    with pytest.raises(GitHubBodyTooLong) as exc:
        upsert(client, "x" * 65_536)
    assert "Body is too long (maximum is 65536 characters)" in str(exc.value)
    assert "shorten" in str(exc.value)
    assert fake_github.comments(REPO, PR) == []


def test_too_long_edit_keeps_old_body(fake_github, client):
    upsert(client)
    with pytest.raises(GitHubBodyTooLong):
        upsert(client, "y" * 70_000)
    assert fake_github.comments(REPO, PR)[0]["body"] == body()


def test_actions_token_uses_github_actions_bot(fake_github, client):
    fake_github.viewer = None  # GET /user -> 403 "Resource not accessible by integration"
    fake_github.add_comment(REPO, PR, body("old"), login="someone-else")
    own = fake_github.add_comment(REPO, PR, body("old"), login="github-actions[bot]")
    result = upsert(client, "new")
    assert result.action == "updated" and result.comment_id == own["id"]
    assert len(fake_github.calls("GET", "/user")) == 1
    bodies = [c["body"] for c in fake_github.comments(REPO, PR)]
    assert bodies == [body("old"), body("new")]


def test_explicit_bot_login_skips_user_lookup(fake_github, client):
    own = fake_github.add_comment(REPO, PR, body("old"), login="My-App[bot]")
    fake_github.viewer = "my-app[bot]"  # the account that will edit
    result = upsert(client, "new", bot_login="my-app[bot]")  # login compare is case-insensitive
    assert result.action == "updated" and result.comment_id == own["id"]
    assert fake_github.calls("GET", "/user") == []


def test_dry_run_create_describes_and_writes_nothing(fake_github, client):
    text = "z" * (4_210 - len(body("")))
    result = upsert(client, text, dry_run=True)
    assert result == PostResult(
        "would create", None, None, f"POST /repos/{REPO}/issues/{PR}/comments (body: 4,210 characters)"
    )
    assert fake_github.writes() == [] and fake_github.comments(REPO, PR) == []


def test_dry_run_update_describes_and_writes_nothing(fake_github, client):
    own = fake_github.add_comment(REPO, PR, body("old"), login="triage-bot")
    text = "z" * (4_210 - len(body("")))
    result = upsert(client, text, dry_run=True)
    assert result.action == "would update" and result.comment_id == own["id"] and result.url == own["html_url"]
    assert result.request == f"PATCH /repos/{REPO}/issues/comments/{own['id']} (body: 4,210 characters)"
    assert fake_github.writes() == []
    assert upsert(client, "old", dry_run=True).action == "unchanged"


@pytest.mark.parametrize("repo", ["octo-repo", "a/b/c", "", "/r", "o/", "o r/x", "../x", "o/.."])
def test_bad_repo_is_input_error(fake_github, client, repo):
    with pytest.raises(InputError) as exc:
        upsert_comment(client, repo, PR, body(), MARKER)
    assert exc.value.exit_code == 2
    assert fake_github.requests == []


def test_body_without_marker_is_input_error(fake_github, client):
    with pytest.raises(InputError):
        upsert_comment(client, REPO, PR, "no marker here", MARKER)
    with pytest.raises(InputError):
        upsert_comment(client, REPO, 0, body(), MARKER)


def test_bad_token(fake_github, sleeps):
    client = env_client(token="not-the-token", sleep=sleeps.append)
    with pytest.raises(GitHubAuthError):
        upsert(client)


SECRET = "plain-secret-value-for-comments-42"


def test_token_never_appears_in_failures(fake_github, monkeypatch, capsys, caplog, sleeps):
    caplog.set_level(logging.DEBUG)
    fake_github.token = SECRET
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    client = env_client(max_retries=1, sleep=sleeps.append)
    seen = [repr(client)]
    scenarios = [
        lambda: fake_github.inject("POST", LIST, 502, times=None),
        lambda: fake_github.inject("POST", LIST, drop=True),
        lambda: fake_github.inject("GET", LIST, 404, body={"message": f"Not Found {SECRET}"}),
        lambda: fake_github.inject("POST", LIST, 403, body={"message": f"denied for {SECRET}"}),
        lambda: None,  # too long
    ]
    for i, arm in enumerate(scenarios):
        fake_github._injections.clear()
        arm()
        text = "x" * 70_000 if i == 4 else f"v{i}"
        with pytest.raises(GitHubError) as exc:
            upsert(client, text)
        seen += [str(exc.value), repr(exc.value), *map(str, exc.value.args)]
    out = capsys.readouterr()
    seen += [out.out, out.err, caplog.text]
    for text in seen:
        assert SECRET not in text
