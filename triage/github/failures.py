"""What a failed GitHub call is: one error class per kind, and the error a response makes.

A response's error says what GitHub said (its ``message`` and ``errors``),
whether the same request may be sent again and after how long (Retry-After, or
the rate limit's reset), and what to do -- in one line, with any credential
removed by the client's ``redact``.
"""

from __future__ import annotations

import email.utils
from typing import Any, Callable, Optional

import httpx

from triage.errors import RuntimeFailure

#: GitHub's limit on a comment's body, in characters.
COMMENT_LIMIT = 65_536


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class GitHubError(RuntimeFailure):
    """A GitHub API call failed.  One line, exit code 1.

    ``status`` is the HTTP status (None for network errors); ``retryable`` says
    whether sending the same request again may succeed; ``wait`` is the wait in
    seconds the response asked for (Retry-After or the rate-limit reset), if
    any; ``retry_kind`` is "server", "primary", "secondary" or "network".
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str | None = None,
        path: str | None = None,
        retryable: bool = False,
        wait: float | None = None,
        retry_kind: str | None = None,
        github_message: str | None = None,
    ) -> None:
        super().__init__(_one_line(message))
        self.status = status
        self.method = method
        self.path = path
        self.retryable = retryable
        self.wait = wait
        self.retry_kind = retry_kind
        self.github_message = github_message

    def _append(self, text: str) -> None:
        self.message = _one_line(f"{self.message}; {text}")
        self.args = (self.message,)


class GitHubAuthError(GitHubError):
    """401: the token is missing, expired or wrong."""


class GitHubPermissionError(GitHubError):
    """403 that is not a rate limit: the token lacks a permission."""


class GitHubNotFound(GitHubError):
    """404: wrong repository, number or id (or no access to a private repo)."""


class GitHubValidationError(GitHubError):
    """422: GitHub refused the request body."""


class GitHubBodyTooLong(GitHubValidationError):
    """422 whose message says the comment body is too long."""


class GitHubRateLimited(GitHubError):
    """429, or 403 caused by a primary or secondary rate limit."""


class GitHubServerError(GitHubError):
    """5xx from GitHub or a proxy in front of it."""


class GitHubNetworkError(GitHubError):
    """No HTTP response: connection refused, timeout, connection dropped.

    ``maybe_sent`` is False only when the connection was never established.
    """

    def __init__(self, message: str, *, maybe_sent: bool = True, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.maybe_sent = maybe_sent


# --------------------------------------------------------------------------
# Retry budget


def _parse_retry_after(value: str | None, now: float) -> float | None:
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


def _said(resp: httpx.Response) -> tuple[str, str]:
    """GitHub's ``message`` and, joined to it, its ``errors`` (one line each)."""
    try:
        data = resp.json()
    except ValueError:
        data = None
    gh_message, details = "", []
    if isinstance(data, dict):
        gh_message = _one_line(str(data.get("message") or ""))
        for item in data.get("errors") or []:
            if isinstance(item, dict):
                text = item.get("message") or " ".join(str(item[k]) for k in ("resource", "field", "code")
                                                       if item.get(k))
            else:
                text = str(item)
            if text:
                details.append(_one_line(str(text)))
    return gh_message, "; ".join(x for x in [gh_message, *details] if x)


def rate_limit_kind(status: int, headers: httpx.Headers, gh_message: str) -> Optional[str]:
    """"primary" (the hourly budget is spent), "secondary" (too fast), or None: not a rate limit."""
    if status not in (403, 429):
        return None
    text = gh_message.lower()
    if "secondary rate limit" in text or "abuse" in text:
        return "secondary"
    if headers.get("x-ratelimit-remaining") == "0":
        return "primary"
    if status == 429 or "rate limit" in text or "retry-after" in headers:
        return "secondary"
    return None


def _rate_limited(kind: str, resp: httpx.Response, now: float, retry_after: Optional[float], where: str,
                  said: str, redact: Callable[[str], str], common: dict) -> GitHubError:
    wait = retry_after
    if wait is None and resp.headers.get("x-ratelimit-remaining") == "0":
        try:
            wait = max(0.0, float(resp.headers.get("x-ratelimit-reset")) - now) + 1.0
        except (TypeError, ValueError):
            wait = None
    label = "rate limit exhausted" if kind == "primary" else "secondary rate limit hit"
    return GitHubRateLimited(redact(f"GitHub {label} ({resp.status_code}) for {where}" + (f": {said}" if said else "")),
                             retryable=True, wait=wait, retry_kind=kind, **common)


def _unprocessable(where: str, said: str, body: Any, redact: Callable[[str], str], common: dict) -> GitHubError:
    text = said or "Validation Failed"
    if "too long" not in text.lower():
        return GitHubValidationError(redact(f"GitHub refused the request (422) for {where}: {text}"), **common)
    size = ""
    if isinstance(body, dict) and isinstance(body.get("body"), str):
        size = f"the body has {len(body['body']):,} characters; "
    return GitHubBodyTooLong(redact(
        f"GitHub refused the comment as too long (422) for {where}: {text}; "
        f"{size}keep a comment at or below {COMMENT_LIMIT:,} characters "
        "(shorten the report: fewer runs or shorter log excerpts)"), **common)


def _refused(status: int, where: str, url_path: str, said: str, has_token: bool,
             redact: Callable[[str], str], common: dict) -> Optional[GitHubError]:
    """The error of a 401, 403 or 404, with what to do; None for any other status."""
    if status == 401:
        if has_token:
            msg = "GitHub rejected the token (401): set GITHUB_TOKEN or GH_TOKEN to a valid token"
        else:
            msg = f"GitHub requires a token (401) for {where}: set GITHUB_TOKEN or GH_TOKEN"
        return GitHubAuthError(redact(msg), **common)
    if status == 403:
        return GitHubPermissionError(redact(
            f"GitHub refused {where} (403): the token lacks permission"
            + (f" (GitHub said: {said})" if said else "")
            + "; grant it `pull-requests: write` and `issues: write` "
            "(workflow `permissions:`), or the `repo` scope for a classic token"), **common)
    if status == 404:
        what = "the run id" if "/actions/" in url_path else "the PR number"
        return GitHubNotFound(redact(
            f"not found: check the repository name OWNER/NAME and {what} "
            f"(404 for {where}; a private repository also answers 404 without access)"), **common)
    return None


def error_for(resp: httpx.Response, *, method: str, path: str, url_path: str, body: Any, now: float,
              has_token: bool, redact: Callable[[str], str]) -> GitHubError:
    """The error a GitHub response that is no success makes (``path`` as shown, ``url_path`` as sent)."""
    status = resp.status_code
    where = f"{method} {path}"
    gh_message, said = _said(resp)
    said = redact(said[:500])
    common = dict(status=status, method=method, path=path, github_message=gh_message or None)
    retry_after = _parse_retry_after(resp.headers.get("retry-after"), now)
    kind = rate_limit_kind(status, resp.headers, gh_message)
    if kind is not None:
        return _rate_limited(kind, resp, now, retry_after, where, said, redact, common)
    if status >= 500:
        return GitHubServerError(redact(f"GitHub server error ({status}) for {where}" + (f": {said}" if said else "")),
                                 retryable=True, wait=retry_after, retry_kind="server", **common)
    refused = _refused(status, where, url_path, said, has_token, redact, common)
    if refused is not None:
        return refused
    if status == 422:
        return _unprocessable(where, said, body, redact, common)
    return GitHubError(redact(f"GitHub answered {status} {resp.reason_phrase} for {where}"
                              + (f": {said}" if said else "")), **common)
