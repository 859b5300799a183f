"""The ``triage`` check run on a PR's head commit: the verdict at a glance in the checks list.

* ``GET /repos/{owner}/{repo}/pulls/{number}`` gives the head commit (``head.sha``).
* ``GET /repos/{owner}/{repo}/commits/{sha}/check-runs?check_name=triage`` finds
  the run set before; it is edited (``PATCH .../check-runs/{id}``) when its
  title, summary or link changed, left alone when not, and created
  (``POST /repos/{owner}/{repo}/check-runs``) when there is none: one run per
  commit, however often the comment is posted.
* The run is ``completed`` with the conclusion ``neutral``: it informs, it never
  blocks a merge.  Its ``output.title`` is the verdict, its ``output.summary``
  the comment's first screen, cut at a line to stay within GitHub's limit
  (:data:`SUMMARY_LIMIT`, counted here in UTF-8 bytes, which also bounds the
  characters), and ``details_url`` the dashboard's page when one is configured.
* Only a GitHub App may write check runs (the Actions ``GITHUB_TOKEN`` is one,
  with ``checks: write``).  A personal token is refused with 403 "You must
  authenticate via a GitHub App.", an App without the permission with 403
  "Resource not accessible by integration": the result is then ``skipped``
  with one line saying why, never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlsplit

from triage.errors import InputError

from .client import GitHubClient, GitHubError, GitHubPermissionError

__all__ = ["CHECK_NAME", "SUMMARY_LIMIT", "CheckResult", "dashboard_link", "fit_summary", "head_sha",
           "upsert_check_run", "validate_dashboard_url"]

CHECK_NAME = "triage"
#: ``output.summary`` (and ``output.text``): "Maximum length: 65535 characters" (REST docs).
SUMMARY_LIMIT = 65_535
#: No limit is documented for ``output.title``; one line of this many characters reads as a title.
TITLE_LIMIT = 200
CUT_NOTE = "\n\n*Cut to fit GitHub's limit for a check run's summary: the PR comment has all of it.*\n"
NOT_AN_APP = ("check run skipped: only a GitHub App may create check runs "
              "(a personal token cannot; the Actions GITHUB_TOKEN needs `checks: write`)")


@dataclass
class CheckResult:
    action: str  # "created" | "updated" | "unchanged" | "would create" | "would update" | "skipped" | "failed"
    url: Optional[str]  # html_url of the check run
    request: Optional[str] = None  # dry run: the request it would send, with its JSON body
    reason: Optional[str] = None  # skipped or failed: why, in one line

    def line(self) -> str:
        """One line for a person: what happened to the check run."""
        if self.reason:
            return self.reason
        return f"check run {self.action}" + (f" {self.url}" if self.url else "")


def validate_dashboard_url(url: Optional[str]) -> Optional[str]:
    """``url`` without its trailing slash when it is an http(s) URL; InputError otherwise."""
    if url is None or not url.strip():
        return None
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise InputError(f"TRIAGE_DASHBOARD_URL must be the dashboard's http(s) address "
                         f"(e.g. https://triage.example.com), got {url!r}")
    return url.rstrip("/")


def dashboard_link(base: Optional[str], repo: str, pr: int) -> Optional[str]:
    """The dashboard page of ``repo#pr`` under ``base`` (``/pr/OWNER/NAME/N``)."""
    return f"{base}/pr/{repo}/{int(pr)}" if base else None


def fit_summary(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """``text`` within ``limit`` UTF-8 bytes: whole when it fits, else cut after its
    last whole line that leaves room for a note saying so."""
    if len(text.encode("utf-8")) <= limit:
        return text
    room = limit - len(CUT_NOTE.encode("utf-8"))
    head = text.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    at = head.rfind("\n")
    head = head[:at] if at > 0 else head
    return head.rstrip() + CUT_NOTE


def one_line_title(text: str) -> str:
    title = " ".join(text.split()) or "No verdict yet"
    return title if len(title) <= TITLE_LIMIT else title[:TITLE_LIMIT - 1] + "…"


def head_sha(client: GitHubClient, repo: str, pr: int) -> str:
    """The PR's head commit."""
    data = client.get_json(f"/repos/{repo}/pulls/{int(pr)}")
    sha = ((data or {}).get("head") or {}).get("sha") if isinstance(data, dict) else None
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise GitHubError(f"GitHub gave no head commit for {repo}#{pr}")
    return sha


def _ours(client: GitHubClient, repo: str, sha: str, app_slug: Optional[str]) -> Optional[dict]:
    """Our check run on ``sha`` (newest first), if any."""
    found = client.paginate(f"/repos/{repo}/commits/{sha}/check-runs", params={"check_name": CHECK_NAME},
                            key="check_runs")
    runs = [r for r in found if isinstance(r, dict) and r.get("name") == CHECK_NAME and r.get("id")]
    if app_slug:
        runs = [r for r in runs if ((r.get("app") or {}).get("slug") or app_slug) == app_slug]
    return max(runs, key=lambda r: int(r["id"]), default=None)


def _describe(method: str, path: str, body: dict) -> str:
    import json

    return f"{method} {path}\n{json.dumps(body, indent=2, ensure_ascii=False)}"


def upsert_check_run(client: GitHubClient, repo: str, pr: int, *, title: str, summary: str,
                     details_url: Optional[str] = None, external_id: Optional[str] = None,
                     app_slug: Optional[str] = None, dry_run: bool = False, offline: bool = False) -> CheckResult:
    """Set the ``triage`` check run on the head commit of ``repo#pr``.

    A dry run reads (the PR, the check runs) and shows the write it would make;
    offline asks nothing and shows the create.  A refusal to write check runs
    (403) is ``skipped``; any other GitHub error is raised.
    """
    output = {"title": one_line_title(title), "summary": fit_summary(summary)}
    body: dict[str, Any] = {"name": CHECK_NAME, "status": "completed", "conclusion": "neutral", "output": output}
    if details_url:
        body["details_url"] = details_url
    if external_id:
        body["external_id"] = external_id
    create = f"/repos/{repo}/check-runs"
    if offline:
        return CheckResult("would create", None, _describe("POST", create, {"head_sha": "<the PR's head commit>", **body}))
    sha = head_sha(client, repo, pr)
    found = _ours(client, repo, sha, app_slug)
    if found is not None:
        old = found.get("output") or {}
        # Without a link of ours GitHub shows the App's homepage: that is no change.
        if (old.get("title"), old.get("summary")) == (output["title"], output["summary"]) and (
                details_url is None or found.get("details_url") == details_url):
            return CheckResult("unchanged", found.get("html_url"))
        path = f"{create}/{int(found['id'])}"
        if dry_run:
            return CheckResult("would update", found.get("html_url"), _describe("PATCH", path, body))
        return _write(client, "PATCH", path, body, "updated")
    if dry_run:
        return CheckResult("would create", None, _describe("POST", create, {"head_sha": sha, **body}))
    return _write(client, "POST", create, {"head_sha": sha, **body}, "created", repo=repo, sha=sha,
                  app_slug=app_slug)


def _write(client: GitHubClient, method: str, path: str, body: dict, action: str, *, repo: str = "",
           sha: str = "", app_slug: Optional[str] = None) -> CheckResult:
    """PATCH (retried by the client: the same edit twice is one edit), or POST
    sent once per attempt and looked for before another, so a 502 that hid a
    create does not leave two runs."""
    budget = client.retry_budget()
    while True:
        try:
            resp = client.request(method, path, json=body, retry=method != "POST")
        except GitHubPermissionError as err:
            return CheckResult("skipped", None, reason=_refusal(err))
        except GitHubError as err:
            if method != "POST":
                raise
            if err.retryable:
                budget.wait(err)  # raises past the budget
            found = _ours(client, repo, sha, app_slug)  # a failed-looking create may have made it
            if found is not None:
                patch = {k: v for k, v in body.items() if k != "head_sha"}
                return _write(client, "PATCH", f"/repos/{repo}/check-runs/{int(found['id'])}", patch, "created")
            if not err.retryable:
                raise
            continue
        data = client.json(resp) if resp.content else {}
        return CheckResult(action, data.get("html_url") if isinstance(data, dict) else None)


def _refusal(err: GitHubPermissionError) -> str:
    said = (err.github_message or "").strip().rstrip(".")
    if "github app" in said.lower() or not said:
        return NOT_AN_APP
    return f"check run skipped: GitHub refused it ({said}); the App needs the permission Checks: read and write"

