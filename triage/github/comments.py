"""The sticky PR comment: find our own comment by its marker, then create or edit it.

Rules:

* "Our" comment is one whose body contains ``marker`` *and* whose author is our
  account: ``bot_login`` when given, else the token's login from ``/user``,
  else (``/user`` refused, as for the Actions ``GITHUB_TOKEN``)
  ``github-actions[bot]``.  Comments by anyone else are never edited, even when
  they carry the marker (someone quoting the bot).  With several own comments
  carrying the marker, the newest (highest id) is edited and the rest are left.
* The body must contain the marker, otherwise the next run could not find the
  comment and would post a second one.
* Same body (after normalising ``\\r\\n`` to ``\\n``) -> "unchanged", no write.

Retry safety of the create: the POST is sent with ``retry=False``.  After a
retryable failure (5xx, 429, rate-limit 403) the wait is taken from the
client's retry budget, then the comments are listed again and the POST is only
repeated when our comment is still absent -- a 502 from a proxy can hide a
comment that GitHub did create.  A network failure after the POST may have
been sent is not retried: the comments are listed once more and, when the
comment is not there, the error asks to run again (the rerun finds the comment
by its marker if the create landed late).

Concurrent posts: ``triage post`` holds the investigation's post lock in the
knowledge base (:mod:`triage.kb.postlock`) around list -> create/edit, so
posts through one knowledge base take turns.  A writer that raced past it anyway (another knowledge base, say)
is caught after the create: the comments are listed again and, when an own
comment with the marker is older than the one just created, the new one is
deleted and the oldest edited instead -- every racer keeps the oldest, so
one comment remains.  Only our account's comments are ever deleted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from triage.errors import InputError

from .client import GitHubClient, GitHubError, GitHubNetworkError, GitHubNotFound

__all__ = ["PostResult", "upsert_comment", "own_login", "find_own_comment", "validate_repo", "validate_login", "DEFAULT_BOT_LOGIN"]

DEFAULT_BOT_LOGIN = "github-actions[bot]"
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}\Z")
_LOGIN_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?\Z")


@dataclass
class PostResult:
    action: str  # "created" | "updated" | "unchanged" | "would create" | "would update"
    url: str | None  # html_url of the comment
    comment_id: int | None
    request: str | None  # for dry-run: "PATCH /repos/o/r/issues/comments/123 (body: 4,210 characters)"
    check: Any = None  # the check run set with it (triage.github.checks.CheckResult), if asked for


def validate_repo(repo: str) -> str:
    """Return ``repo`` if it is ``OWNER/NAME``, else raise InputError (exit 2)."""
    if not isinstance(repo, str) or not _REPO_RE.match(repo) or {".", ".."} & set(repo.split("/")):
        raise InputError(f"repository must be OWNER/NAME (e.g. octo-org/octo-repo), got {repo!r}")
    return repo


def validate_login(login: str) -> str:
    """Return ``login`` if it can be a GitHub account (``name`` or ``app[bot]``), else InputError."""
    if not isinstance(login, str) or not _LOGIN_RE.match(login):
        raise InputError(f"--bot-login must be a GitHub login such as octocat or my-app[bot], got {login!r}")
    return login


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n")


def _describe(method: str, path: str, body: str) -> str:
    return f"{method} {path} (body: {len(body):,} characters)"


def own_login(client: GitHubClient, bot_login: str | None = None) -> str:
    """The account whose comments are ours: ``bot_login``, else the token's login, else the Actions bot."""
    return bot_login or client.viewer_login() or DEFAULT_BOT_LOGIN


def find_own_comment(
    client: GitHubClient, repo: str, number: int, marker: str, login: str
) -> dict[str, Any] | None:
    """The newest comment on ``repo#number`` by ``login`` whose body contains ``marker``."""
    own = _own_comments(client, repo, number, marker, login)
    return own[-1] if own else None


def upsert_comment(
    client: GitHubClient,
    repo: str,
    number: int,
    body: str,
    marker: str,
    *,
    bot_login: str | None = None,
    dry_run: bool = False,
    offline: bool = False,
) -> PostResult:
    """Create or update the sticky comment on issue/PR ``number`` of ``repo``.

    Dry run reads (``/user``, the comment list) but never writes; the result
    describes the write it would make in ``request``.  Offline sends nothing
    at all: the result is the create it would make without a comment.
    """
    validate_repo(repo)
    if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
        raise InputError(f"PR/issue number must be a positive integer, got {number!r}")
    if not marker or not marker.strip():
        raise InputError("the comment marker must not be empty")
    body = _normalise(body)
    if marker not in body:
        raise InputError("the comment body must contain the marker, or the next run could not find it")

    create_path = f"/repos/{repo}/issues/{number}/comments"
    if offline:
        return PostResult("would create", None, None, _describe("POST", create_path, body))
    login = own_login(client, bot_login)
    existing = find_own_comment(client, repo, number, marker, login)
    if existing is not None:
        return _update(client, repo, number, body, marker, login, existing, dry_run)
    if dry_run:
        return PostResult("would create", None, None, _describe("POST", create_path, body))
    return _create(client, repo, number, body, marker, login)


def _update(
    client: GitHubClient,
    repo: str,
    number: int,
    body: str,
    marker: str,
    login: str,
    existing: dict[str, Any],
    dry_run: bool,
) -> PostResult:
    comment_id = int(existing["id"])
    url = existing.get("html_url")
    if _normalise(existing.get("body") or "") == body:
        return PostResult("unchanged", url, comment_id, None)
    path = f"/repos/{repo}/issues/comments/{comment_id}"
    if dry_run:
        return PostResult("would update", url, comment_id, _describe("PATCH", path, body))
    try:
        resp = client.request("PATCH", path, json={"body": body})
    except GitHubNotFound:
        # Deleted between the listing and the edit: post a fresh one.
        return _create(client, repo, number, body, marker, login)
    data = client.json(resp)
    return PostResult("updated", data.get("html_url") or url, int(data.get("id") or comment_id), None)


def _create(client: GitHubClient, repo: str, number: int, body: str, marker: str, login: str) -> PostResult:
    path = f"/repos/{repo}/issues/{number}/comments"
    budget = client.retry_budget()
    while True:
        try:
            resp = client.request("POST", path, json={"body": body}, retry=False)
        except GitHubNetworkError as err:
            if err.retryable:  # never connected: nothing was sent
                budget.wait(err)
                found = find_own_comment(client, repo, number, marker, login)
                if found is not None:
                    return _found_after_failure(client, repo, number, body, marker, login, found)
                continue
            found = find_own_comment(client, repo, number, marker, login)
            if found is not None:
                return _found_after_failure(client, repo, number, body, marker, login, found)
            err._append(
                "the comment was not found afterwards; run the command again "
                "(it finds an existing comment by its marker, so no duplicate is posted)"
            )
            raise err
        except GitHubError as err:
            budget.wait(err)  # raises unless retryable and within the budget
            # A 5xx (a 502 from a proxy especially) may hide a comment that was
            # created: look before posting again.
            found = find_own_comment(client, repo, number, marker, login)
            if found is not None:
                return _found_after_failure(client, repo, number, body, marker, login, found)
            continue
        data = client.json(resp)
        created = PostResult("created", data.get("html_url"), int(data["id"]), None)
        return _keep_oldest(client, repo, number, body, marker, login, created)


def _own_comments(client: GitHubClient, repo: str, number: int, marker: str, login: str) -> list[dict[str, Any]]:
    """Our comments carrying ``marker``, oldest first."""
    wanted = login.lower()
    return sorted(
        (c for c in client.paginate(f"/repos/{repo}/issues/{number}/comments")
         if isinstance(c, dict) and ((c.get("user") or {}).get("login") or "").lower() == wanted
         and marker in (c.get("body") or "")),
        key=lambda c: int(c.get("id") or 0),
    )


def _keep_oldest(
    client: GitHubClient, repo: str, number: int, body: str, marker: str, login: str, created: PostResult
) -> PostResult:
    """After a create: when another writer's comment is older, delete ours
    (a duplicate) and edit that one instead."""
    own = _own_comments(client, repo, number, marker, login)
    if not own or int(own[0]["id"]) >= (created.comment_id or 0):
        return created
    try:
        client.request("DELETE", f"/repos/{repo}/issues/comments/{created.comment_id}")
    except GitHubNotFound:
        pass  # gone already
    return _update(client, repo, number, body, marker, login, own[0], dry_run=False)


def _found_after_failure(
    client: GitHubClient,
    repo: str,
    number: int,
    body: str,
    marker: str,
    login: str,
    found: dict[str, Any],
) -> PostResult:
    if _normalise(found.get("body") or "") == body:
        # Our own failed-looking POST did create it.
        return PostResult("created", found.get("html_url"), int(found["id"]), None)
    # Another run posted meanwhile: edit that one instead of adding a second.
    return _update(client, repo, number, body, marker, login, found, dry_run=False)
