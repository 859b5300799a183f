"""GitHubClient against the local fake GitHub: headers, env, pagination, retries, errors."""

from __future__ import annotations

import logging
import socket

import httpx
import pytest

import triage
from tests.support.fakegithub import FakeGitHub, env_client
from triage.errors import InputError, RuntimeFailure
from triage.github.client import (
    GitHubAuthError,
    GitHubBodyTooLong,
    GitHubClient,
    GitHubError,
    GitHubNetworkError,
    GitHubNotFound,
    GitHubPermissionError,
    GitHubRateLimited,
    GitHubServerError,
    GitHubValidationError,
)

COMMENTS = "/repos/o/r/issues/5/comments"


def _one_line(err: Exception) -> str:
    text = str(err)
    assert "\n" not in text and text.strip() == text and text
    return text


# -- configuration ----------------------------------------------------------


def test_headers_sent(fake_github, client):
    client.request("GET", "/user")
    (req,) = fake_github.calls("GET", "/user")
    assert req.headers["accept"] == "application/vnd.github+json"
    assert req.headers["x-github-api-version"] == "2022-11-28"
    assert req.headers["user-agent"] == f"triage/{triage.__version__}"
    assert req.headers["authorization"] == f"Bearer {fake_github.token}"


def test_github_api_url_env_is_honoured(fake_github, sleeps):
    c = env_client(sleep=sleeps.append)
    assert c.api_url == fake_github.url
    assert c.viewer_login() == "triage-bot"
    assert len(fake_github.calls("GET", "/user")) == 1


def test_default_api_url_and_no_token(monkeypatch):
    for name in ("GITHUB_API_URL", "GITHUB_TOKEN", "GH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    c = env_client()
    assert c.api_url == "https://api.github.com"
    assert not c.has_token
    assert repr(c) == "GitHubClient(api_url='https://api.github.com', token=None)"


def test_bad_api_url_is_input_error(monkeypatch):
    monkeypatch.setenv("GITHUB_API_URL", "api.github.com")
    with pytest.raises(InputError) as exc:
        env_client()
    assert exc.value.exit_code == 2


def test_enterprise_style_prefix(monkeypatch, sleeps):
    with FakeGitHub(prefix="/api/v3") as fake:
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_TOKEN", fake.token)
        c = env_client(sleep=sleeps.append)
        assert c.api_url.endswith("/api/v3")
        fake.add_comment("o/r", 5, "hello")
        assert [x["body"] for x in c.paginate(COMMENTS)] == ["hello"]
        assert c.viewer_login() == "triage-bot"


def test_gh_token_fallback(fake_github, monkeypatch, sleeps):
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("GH_TOKEN", fake_github.token)
    c = env_client(sleep=sleeps.append)
    assert c.viewer_login() == "triage-bot"
    assert fake_github.requests[-1].headers["authorization"] == f"Bearer {fake_github.token}"


def test_github_token_wins_over_gh_token_and_argument_wins_over_both(fake_github, monkeypatch, sleeps):
    monkeypatch.setenv("GH_TOKEN", "gh-token-not-used")
    env_client(sleep=sleeps.append).request("GET", "/user")
    assert fake_github.requests[-1].headers["authorization"] == f"Bearer {fake_github.token}"
    with pytest.raises(GitHubAuthError):
        env_client(token="explicit-wrong-token", sleep=sleeps.append).request("GET", "/user")
    assert fake_github.requests[-1].headers["authorization"] == "Bearer explicit-wrong-token"


def test_no_authorization_header_without_token(fake_github, monkeypatch, sleeps):
    monkeypatch.delenv("GITHUB_TOKEN")
    fake_github.require_auth = False
    c = env_client(sleep=sleeps.append)
    c.request("GET", COMMENTS)
    assert "authorization" not in fake_github.requests[-1].headers
    assert c.viewer_login() is None  # no token: /user is not even asked


# -- pagination ---------------------------------------------------------------


def test_paginate_follows_link_header(fake_github, client):
    for i in range(250):
        fake_github.add_comment("o/r", 5, f"c{i}")
    items = list(client.paginate(COMMENTS))
    assert [c["body"] for c in items] == [f"c{i}" for i in range(250)]
    gets = fake_github.calls("GET", COMMENTS)
    assert [r.query for r in gets] == [
        {"per_page": "100"},
        {"per_page": "100", "page": "2"},
        {"per_page": "100", "page": "3"},
    ]


def test_paginate_object_with_key(fake_github, client):
    fake_github.add_workflow_run("o/r", 7, jobs=[{"name": f"j{i}"} for i in range(5)])
    jobs = list(client.paginate("/repos/o/r/actions/runs/7/jobs", params={"per_page": 2}, key="jobs"))
    assert [j["name"] for j in jobs] == [f"j{i}" for i in range(5)]
    assert len(fake_github.calls("GET", "/repos/o/r/actions/runs/7/jobs")) == 3
    # key inferred when there is a single list in the object
    assert len(list(client.paginate("/repos/o/r/actions/runs/7/jobs"))) == 5


def test_paginate_uses_next_url_as_given(fake_github, client):
    fake_github.add_comment("o/r", 5, "first")
    fake_github.inject(
        "GET",
        COMMENTS,
        200,
        body=[{"id": 1, "body": "page1"}],
        headers={"Link": f'<{fake_github.url}/repos/o/r/issues/5/comments?cursor=abc&per_page=100>; rel="next"'},
    )
    items = list(client.paginate(COMMENTS))
    assert [c["body"] for c in items] == ["page1", "first"]
    assert fake_github.calls("GET", COMMENTS)[1].query == {"cursor": "abc", "per_page": "100"}


# -- retries -------------------------------------------------------------------


def test_502_then_200_is_retried_with_backoff(fake_github, client, sleeps):
    fake_github.inject("GET", "/user", 502)
    assert client.viewer_login() == "triage-bot"
    assert len(fake_github.calls("GET", "/user")) == 2
    assert len(sleeps) == 1 and 1.0 <= sleeps[0] <= 1.1


def test_retries_are_bounded_in_count(fake_github, sleeps):
    fake_github.inject("GET", COMMENTS, 502, times=None)
    c = env_client(max_retries=3, sleep=sleeps.append)
    with pytest.raises(GitHubServerError) as exc:
        list(c.paginate(COMMENTS))
    assert len(fake_github.calls("GET", COMMENTS)) == 4
    assert len(sleeps) == 3
    # exponential from 1 s with small jitter
    for got, base in zip(sleeps, (1, 2, 4)):
        assert base <= got <= base * 1.1
    text = _one_line(exc.value)
    assert "502" in text and f"GET {COMMENTS}" in text and "gave up after 3 retries" in text
    assert exc.value.exit_code == 1 and isinstance(exc.value, RuntimeFailure)


def test_retries_are_bounded_in_time(fake_github, sleeps):
    fake_github.inject("GET", "/user", 503, times=None)
    c = env_client(max_retries=50, max_wait=10, sleep=sleeps.append)
    with pytest.raises(GitHubServerError) as exc:
        c.request("GET", "/user")
    assert sum(sleeps) <= 10
    assert len(sleeps) == 3  # 1 + 2 + 4 = 7; the next 8 s would pass 10 s
    assert "retry budget" in _one_line(exc.value)


def test_retry_after_on_5xx_is_honoured(fake_github, client, sleeps):
    fake_github.inject("GET", "/user", 503, headers={"Retry-After": "7"})
    client.request("GET", "/user")
    assert sleeps == [7.0]


def test_secondary_rate_limit_with_retry_after(fake_github, client, sleeps):
    fake_github.inject_secondary_rate_limit("GET", "/user", retry_after=3)
    assert client.viewer_login() == "triage-bot"  # a rate-limit 403 is not "no permission"
    assert sleeps == [3.0]


def test_secondary_rate_limit_without_retry_after_waits_60s_growing(fake_github, sleeps):
    fake_github.inject_secondary_rate_limit("GET", "/user", retry_after=None, times=2)
    c = env_client(max_wait=200, sleep=sleeps.append)
    c.request("GET", "/user")
    assert sleeps == [60.0, 120.0]


def test_secondary_rate_limit_beyond_budget_raises(fake_github, client, sleeps):
    fake_github.inject_secondary_rate_limit("GET", "/user", retry_after=None, times=5)
    with pytest.raises(GitHubRateLimited) as exc:
        client.request("GET", "/user")
    assert sleeps == [60.0]  # 120 s more would not fit in the 120 s budget
    assert "secondary rate limit" in _one_line(exc.value)


def test_primary_rate_limit_waits_until_reset(fake_github, client, sleeps):
    fake_github.inject_primary_rate_limit("GET", COMMENTS, reset_in=30)
    assert list(client.paginate(COMMENTS)) == []
    assert len(sleeps) == 1 and 28 <= sleeps[0] <= 32


def test_primary_rate_limit_reset_too_far_raises_without_sleeping(fake_github, client, sleeps):
    fake_github.inject_primary_rate_limit("GET", COMMENTS, reset_in=3600, status=429)
    with pytest.raises(GitHubRateLimited) as exc:
        list(client.paginate(COMMENTS))
    assert sleeps == []
    text = _one_line(exc.value)
    assert "rate limit exhausted (429)" in text and "retry budget" in text
    assert len(fake_github.calls("GET", COMMENTS)) == 1


def test_429_with_retry_after(fake_github, client, sleeps):
    fake_github.inject("GET", "/user", 429, headers={"Retry-After": "2"})
    client.request("GET", "/user")
    assert sleeps == [2.0]


def test_post_retried_on_502_response_by_default(fake_github, client, sleeps):
    fake_github.inject("POST", COMMENTS, 502)
    client.request("POST", COMMENTS, json={"body": "x"})
    assert len(fake_github.calls("POST", COMMENTS)) == 2
    assert len(fake_github.comments("o/r", 5)) == 1


def test_post_with_retry_false_raises_retryable(fake_github, client, sleeps):
    fake_github.inject("POST", COMMENTS, 502)
    with pytest.raises(GitHubServerError) as exc:
        client.request("POST", COMMENTS, json={"body": "x"}, retry=False)
    assert exc.value.retryable and sleeps == []
    assert len(fake_github.calls("POST", COMMENTS)) == 1


def test_dropped_connection_get_is_retried(fake_github, client, sleeps):
    fake_github.inject("GET", "/user", drop=True)
    assert client.viewer_login() == "triage-bot"
    assert len(fake_github.calls("GET", "/user")) == 2 and len(sleeps) == 1


def test_dropped_connection_post_is_not_retried(fake_github, client, sleeps):
    fake_github.inject("POST", COMMENTS, drop=True, perform=True)
    with pytest.raises(GitHubNetworkError) as exc:
        client.request("POST", COMMENTS, json={"body": "x"})
    assert len(fake_github.calls("POST", COMMENTS)) == 1
    assert len(fake_github.comments("o/r", 5)) == 1
    assert sleeps == []
    assert "may have reached GitHub" in _one_line(exc.value)


def test_read_timeout_get_is_retried(fake_github, sleeps):
    fake_github.inject("GET", "/user", 200, body={"login": "slow"}, delay=1.5)
    c = env_client(timeout=0.4, sleep=sleeps.append)
    assert c.viewer_login() == "triage-bot"
    assert len(sleeps) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connect_error_is_retried_even_for_post_then_fails(sleeps):
    c = GitHubClient(f"http://127.0.0.1:{_closed_port()}", token="plain-secret-value-1234", max_retries=2,
                     sleep=sleeps.append)
    with pytest.raises(GitHubNetworkError) as exc:
        c.request("POST", COMMENTS, json={"body": "x"})
    assert len(sleeps) == 2
    assert exc.value.maybe_sent is False
    text = _one_line(exc.value)
    assert "could not reach GitHub" in text and "gave up after 2 retries" in text


# -- error messages -------------------------------------------------------------


def test_401_message(fake_github, sleeps):
    c = env_client(token="wrong-token-value", sleep=sleeps.append)
    with pytest.raises(GitHubAuthError) as exc:
        c.request("GET", COMMENTS)
    assert str(exc.value) == "GitHub rejected the token (401): set GITHUB_TOKEN or GH_TOKEN to a valid token"
    assert exc.value.exit_code == 1 and sleeps == []


def test_401_message_without_token(fake_github, monkeypatch, sleeps):
    monkeypatch.delenv("GITHUB_TOKEN")
    with pytest.raises(GitHubAuthError) as exc:
        env_client(sleep=sleeps.append).request("POST", COMMENTS, json={"body": "x"})
    assert "set GITHUB_TOKEN or GH_TOKEN" in _one_line(exc.value)


def test_403_permission_message(fake_github, client, sleeps):
    fake_github.inject("POST", COMMENTS, 403, body={"message": "Resource not accessible by integration",
                                                    "documentation_url": "https://docs.github.com/rest"})
    with pytest.raises(GitHubPermissionError) as exc:
        client.request("POST", COMMENTS, json={"body": "x"})
    text = _one_line(exc.value)
    assert "lacks permission" in text
    assert "Resource not accessible by integration" in text
    assert "pull-requests: write" in text and "issues: write" in text and "repo" in text
    assert sleeps == [] and len(fake_github.calls("POST")) == 1


def test_404_message(fake_github, client):
    fake_github.inject("GET", COMMENTS, 404, body={"message": "Not Found"})
    with pytest.raises(GitHubNotFound) as exc:
        list(client.paginate(COMMENTS))
    text = _one_line(exc.value)
    assert text.startswith("not found: check the repository name OWNER/NAME and the PR number")
    assert f"GET {COMMENTS}" in text


def test_422_too_long_message(fake_github, client):
    with pytest.raises(GitHubBodyTooLong) as exc:
        client.request("POST", COMMENTS, json={"body": "x" * 65_537})
    text = _one_line(exc.value)
    assert "Body is too long (maximum is 65536 characters)" in text
    assert "65,537 characters" in text
    assert isinstance(exc.value, GitHubValidationError) and exc.value.status == 422
    assert fake_github.comments("o/r", 5) == []


def test_422_old_shape_too_long(fake_github, client):
    fake_github.inject("PATCH", "/repos/*/issues/comments/*", 422, body={
        "message": "Validation Failed",
        "errors": [{"resource": "IssueComment", "code": "custom", "field": "body",
                    "message": "body is too long (maximum is 65536 characters)"}],
    })
    with pytest.raises(GitHubBodyTooLong):
        client.request("PATCH", "/repos/o/r/issues/comments/1", json={"body": "x"})


def test_422_other_validation(fake_github, client):
    fake_github.inject("POST", COMMENTS, 422, body={
        "message": "Validation Failed",
        "errors": [{"resource": "IssueComment", "code": "missing_field", "field": "body"}],
    })
    with pytest.raises(GitHubValidationError) as exc:
        client.request("POST", COMMENTS, json={"body": ""})
    assert not isinstance(exc.value, GitHubBodyTooLong)
    assert "Validation Failed; IssueComment body missing_field" in _one_line(exc.value)


def test_other_status_is_generic_one_line(fake_github, client):
    fake_github.inject("GET", "/user", 410, body={"message": "Gone\nreally"})
    with pytest.raises(GitHubError) as exc:
        client.request("GET", "/user")
    assert "410" in _one_line(exc.value) and "Gone really" in str(exc.value)


def test_non_json_body(fake_github, client):
    fake_github.inject("GET", "/user", 200, body="<html>hello</html>")
    with pytest.raises(GitHubError) as exc:
        client.get_json("/user")
    assert "not JSON" in _one_line(exc.value)


def test_viewer_login_cases(fake_github, client):
    assert client.viewer_login() == "triage-bot"
    fake_github.viewer = None  # the Actions GITHUB_TOKEN
    assert client.viewer_login() is None
    fake_github.inject("GET", "/user", 404)
    assert client.viewer_login() is None
    fake_github.token = "rotated"
    with pytest.raises(GitHubAuthError):
        client.viewer_login()


# -- the token never leaks ------------------------------------------------------

SECRET = "plain-secret-value-XYZ987"  # no gh*_ prefix: only exact redaction can hide it


def test_token_never_appears(fake_github, monkeypatch, capsys, caplog, sleeps):
    caplog.set_level(logging.DEBUG)
    fake_github.token = SECRET
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    c = env_client(max_retries=1, sleep=sleeps.append)
    seen: list[str] = [repr(c), str(c)]

    def fail(fn) -> None:
        with pytest.raises(GitHubError) as exc:
            fn()
        err = exc.value
        seen.extend([str(err), repr(err), err.message, *map(str, err.args)])

    fake_github.inject("GET", "/user", 502, times=None)
    fail(lambda: c.request("GET", "/user"))
    fake_github._injections.clear()
    # GitHub's message echoing the token must be redacted too
    fake_github.inject("GET", COMMENTS, 403, body={"message": f"token {SECRET} has no access"})
    fail(lambda: list(c.paginate(COMMENTS)))
    fake_github.inject("GET", COMMENTS, 404, body={"message": f"nope {SECRET}"})
    fail(lambda: list(c.paginate(COMMENTS)))
    fail(lambda: c.request("POST", COMMENTS, json={"body": "y" * 70_000}))
    fake_github.inject_primary_rate_limit("GET", "/user", reset_in=9999)
    fail(lambda: c.request("GET", "/user"))
    fake_github.inject("POST", COMMENTS, drop=True)
    fail(lambda: c.request("POST", COMMENTS, json={"body": "x"}))
    fake_github.token = "rotated"
    fail(lambda: c.request("GET", "/user"))
    # a URL that contains the token, to a closed port
    bad = env_client(api_url=f"http://127.0.0.1:{_closed_port()}/{SECRET}", max_retries=1, sleep=sleeps.append)
    seen.append(repr(bad))
    fail(lambda: bad.request("GET", "/user"))

    out = capsys.readouterr()
    seen.extend([out.out, out.err, caplog.text, *(r.getMessage() for r in caplog.records)])
    assert len(seen) > 20
    for text in seen:
        assert SECRET not in text
    assert "***" in repr(c)


def test_redact_replaces_token_and_lookalikes():
    c = GitHubClient("http://127.0.0.1:1", token=SECRET)
    assert c.redact(f"a {SECRET} b") == "a *** b"
    assert "ghp_" not in c.redact("x ghp_abcdefghijklmnopqrstuvwxyz0123 y")
    assert c.redact("Authorization: Bearer abcdefghijklmnopqrstuvwxyz") == "Authorization: Bearer ***"


def test_transport_injection(sleeps):
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer t0k3n-for-mock-transport"
        return httpx.Response(200, json={"login": "mocked"})

    c = GitHubClient("https://ghe.example.com/api/v3", "t0k3n-for-mock-transport",
                     transport=httpx.MockTransport(handler), sleep=sleeps.append)
    assert c.viewer_login() == "mocked"
