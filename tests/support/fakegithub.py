"""A fake GitHub REST API on a real local HTTP server, for tests.

Use the ``fake_github`` fixture (``from tests.support.fakegithub import fake_github`` in a
test module, or ``pytest_plugins = ["tests.support.fakegithub"]`` in the root conftest).
It starts a :class:`FakeGitHub` on 127.0.0.1 (port 0), sets ``GITHUB_API_URL``
to it and ``GITHUB_TOKEN`` to its token (and removes ``GH_TOKEN``), and yields
the handle.

Responses are shaped from the fixture files of ``tests/fixtures/github/rest``
(found next to the repository, or at ``$TRIAGE_GITHUB_FIXTURES``); a minimal
built-in shape is used when those files are absent.

Endpoints (all under ``fake.url``; every one but ``/_blob`` needs
``Authorization: Bearer <fake.token>`` while ``fake.require_auth`` is true):

* ``GET /user`` -- ``fake.viewer`` (a login), or 403 "Resource not accessible
  by integration" when ``fake.viewer`` is None (the Actions token).
* ``GET|POST /repos/{o}/{r}/issues/{n}/comments`` -- ``per_page``/``page``
  pagination (default 30, max 100), ascending id, ``Link`` with next/last
  (and first/prev); POST answers 201, 422 above ``fake.max_comment_chars``.
* ``GET|PATCH /repos/{o}/{r}/issues/comments/{id}``.
* ``GET /repos/{o}/{r}/pulls/{n}`` (after :meth:`FakeGitHub.add_pull`, with its ``labels``).
* ``GET /repos/{o}/{r}/collaborators/{login}/permission`` -- ``{permission, role_name, user}``
  from ``fake.permissions[login]`` (a role: admin, maintain, write, triage, read; a login set
  to None is 404, as for a user who is not a collaborator; any other login reads ``read``).
* ``POST /repos/{o}/{r}/issues/comments/{id}/reactions`` -- 201 with the reaction, 200 when
  the viewer added that one already, 422 for an unknown ``content``, 404 for no such comment;
  :meth:`FakeGitHub.reactions` lists a comment's.
* Check runs (create, update, list for a commit): see :mod:`tests.support.fakechecks`.
* ``POST /repos/{o}/{r}/actions/workflows/{workflow}/dispatches`` -- recorded in
  ``fake.dispatches``; ``fake.on_dispatch(repo, workflow, ref, inputs)`` may
  return a run it added (:meth:`FakeGitHub.add_workflow_run`): the dispatched
  run, which then answers as ``workflow_run`` data.  With
  ``return_run_details: true`` the answer is 200 with its ``workflow_run_id``,
  ``run_url`` and ``html_url``, else 204.
* ``GET /repos/{o}/{r}/actions/runs/{id}``, ``.../runs/{id}/jobs`` (paginated,
  ``{total_count, jobs}``), ``.../runs/{id}/artifacts``, ``.../artifacts/{id}/zip`` (302 -> zip blob),
  ``.../actions/jobs/{id}/logs`` (302 -> text blob) and ``.../runs/{id}/logs``
  (302 -> zip blob).  Blobs live at ``/_blob/...`` on the same server, or on a
  second server (another port, so another origin, like GitHub's archive hosts)
  when ``fake.separate_blob_host`` is true; that second host answers 400 to a
  request carrying an ``Authorization`` header.

Failure injection: :meth:`FakeGitHub.inject` queues canned responses for the
next N requests matching a method and a glob on the path; ``perform=True``
lets the request take effect first (the "created, then 502" case);
``drop=True`` closes the connection without an answer.

Every request is recorded in ``fake.requests`` (method, path, query, headers,
body, server).
"""

from __future__ import annotations

import copy
import fnmatch
import io
import json
import os
import re
import secrets
import threading
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from tests.support.fakechecks import CheckRuns

__all__ = ["FakeGitHub", "Injection", "RecordedRequest", "TOKENS_IN_USE", "fake_github", "fixtures_dir", "load_fixture"]

DEFAULT_TOKEN = "ghs_FakeTokenForTests0123456789abcdefXYZ"
# Every token a FakeGitHub was given (long enough to be one): conftest fails a
# test whose output shows one, and masks it in a failure report.
TOKENS_IN_USE: set[str] = {DEFAULT_TOKEN}


# --------------------------------------------------------------------------
# Fixture files


def fixtures_dir() -> Path:
    """The GitHub payloads and REST shapes the tests use, kept in the project with their sources
    (tests/fixtures/github/README.md); ``TRIAGE_GITHUB_FIXTURES`` points elsewhere."""
    env = os.environ.get("TRIAGE_GITHUB_FIXTURES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "fixtures" / "github"


def load_fixture(name: str) -> dict | None:
    """``rest/<name>.json`` parsed, or None when the fixtures are not there."""
    path = fixtures_dir() / "rest" / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


_FALLBACK_USER = {"login": "octocat", "id": 1, "type": "User", "site_admin": False}
_FALLBACK_COMMENT = {
    "id": 1,
    "node_id": "",
    "url": "",
    "html_url": "",
    "body": "",
    "user": _FALLBACK_USER,
    "created_at": "",
    "updated_at": "",
    "issue_url": "",
    "author_association": "COLLABORATOR",
}
_FALLBACK_RUN = {
    "id": 1,
    "name": "CI",
    "head_branch": "main",
    "head_sha": "",
    "run_number": 1,
    "event": "pull_request",
    "status": "completed",
    "conclusion": "success",
    "url": "",
    "html_url": "",
    "pull_requests": [],
    "created_at": "",
    "updated_at": "",
    "run_attempt": 1,
}
_FALLBACK_JOB = {
    "id": 1,
    "run_id": 1,
    "run_url": "",
    "head_sha": "",
    "url": "",
    "html_url": "",
    "status": "completed",
    "conclusion": "success",
    "started_at": "2020-01-20T17:42:40Z",
    "completed_at": "2020-01-20T17:44:39Z",
    "name": "build",
    "steps": [],
    "labels": [],
    "workflow_name": "CI",
    "head_branch": "main",
}
_FALLBACK_TOO_LONG = {
    "message": "Validation Failed",
    "errors": [
        {
            "resource": "IssueComment",
            "code": "unprocessable",
            "field": "data",
            "message": "Body is too long (maximum is 65536 characters)",
        }
    ],
    "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
}


def _example(name: str, fallback: Any, pick=lambda body: body) -> Any:
    data = load_fixture(name)
    if data is None:
        return copy.deepcopy(fallback)
    return copy.deepcopy(pick(data["example_response"]["body"]))


def _too_long_body() -> dict:
    data = load_fixture("errors.observed")
    if data:
        for entry in data.get("issue_comment_body_too_long", []):
            body = entry.get("body")
            if body and body["errors"][0].get("code") == "unprocessable":
                return copy.deepcopy(body)
    return copy.deepcopy(_FALLBACK_TOO_LONG)


def _zip_of(files: dict[str, str | bytes]) -> bytes:
    """A zip archive of ``files`` (name -> content), as GitHub serves an artifact."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, content in files.items():
            z.writestr(name, content)
    return buf.getvalue()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------
# Records


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the API prefix and the query
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes
    server: str  # "api" or "blob"

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def __repr__(self) -> str:  # keep the Authorization header out of assertion output
        return f"<{self.method} {self.path} {self.query or ''} ({self.server})>"


@dataclass
class Injection:
    method: str
    pattern: str
    status: int = 502
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    times: int | None = 1  # None: forever
    perform: bool = False
    drop: bool = False
    delay: float = 0.0
    used: int = 0
    passthrough: bool = False  # only the delay: then answered as usual

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        return (self.method == "*" or self.method.upper() == method) and fnmatch.fnmatchcase(path, self.pattern)


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False


def _json_reply(status: int, data: Any, headers: dict[str, str] | None = None) -> _Reply:
    return _Reply(
        status,
        json.dumps(data).encode(),
        {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
    )


def _error(status: int, message: str, doc: str = "https://docs.github.com/rest") -> _Reply:
    return _json_reply(status, {"message": message, "documentation_url": doc, "status": str(status)})


# --------------------------------------------------------------------------
# The fake


class FakeGitHub(CheckRuns):
    def __init__(self, *, token: str = DEFAULT_TOKEN, prefix: str = "") -> None:
        self._token = ""
        self.token = token
        self.prefix = prefix.rstrip("/")
        self.require_auth = True
        self.viewer: str | None = "triage-bot"
        self.viewer_type = "User"
        self.max_comment_chars = 65_536
        self.separate_blob_host = False
        self.requests: list[RecordedRequest] = []
        self._lock = threading.RLock()
        self._comments: dict[tuple[str, int], list[dict]] = {}
        self._comment_index: dict[int, tuple[str, int]] = {}
        self._next_comment_id = 1000
        self._runs: dict[tuple[str, int], dict] = {}
        self._jobs: dict[tuple[str, int], list[dict]] = {}
        self._job_logs: dict[int, str | bytes | int | None] = {}
        self._run_logs: dict[tuple[str, int], dict[str, str] | int] = {}
        self._artifacts: dict[tuple[str, int], list[dict]] = {}
        self._artifact_zips: dict[tuple[str, int], bytes] = {}  # (repo, artifact id) -> its zip
        self._pulls: dict[tuple[str, int], dict] = {}
        self.permissions: dict[str, str | None] = {}
        self._reactions: dict[int, list[dict]] = {}
        self._next_reaction_id = 1
        self.dispatches: list[dict] = []
        self.on_dispatch: Any = None
        self._next_job_id = 399_444_496
        self._blobs: dict[str, tuple[str, bytes]] = {}
        self._injections: list[Injection] = []
        self._comment_example = _example("issues.create-comment", _FALLBACK_COMMENT)
        self._run_example = _example("actions.get-workflow-run", _FALLBACK_RUN)
        self._job_example = _example(
            "actions.list-jobs-for-workflow-run", _FALLBACK_JOB, lambda body: body["jobs"][0]
        )
        self._artifact_example = _example(
            "actions.list-workflow-run-artifacts",
            {"id": 1, "name": "artifact", "size_in_bytes": 1, "expired": False},
            lambda body: body["artifacts"][0],
        )
        self._pull_example = _example("pulls.get", {"number": 1, "state": "open", "head": {}, "base": {}})
        self._permission_example = _example(
            "repos.get-collaborator-permission-level", {"permission": "read", "role_name": "read", "user": _FALLBACK_USER})
        self._reaction_example = _example(
            "reactions.create-for-issue-comment",
            {"id": 1, "node_id": "", "user": _FALLBACK_USER, "content": "+1", "created_at": ""})
        refusals = (load_fixture("checks.create") or {}).get("refusals") or {}
        self._check_runs_init(_example("checks.create", None), (refusals.get("personal_token") or {}).get("body"))
        self._servers: list[ThreadingHTTPServer] = []
        self.base = ""
        self.blob_base = ""
        # A GitHub App (see enable_app): id, slug, public key PEM, repo -> installation id
        self.app: dict | None = None
        self.installation_tokens: dict[str, float] = {}  # token -> expiry (epoch seconds)

    @property
    def token(self) -> str:
        return self._token

    @token.setter
    def token(self, value: str) -> None:
        if len(value) >= 12:
            TOKENS_IN_USE.add(value)
        self._token = value

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> "FakeGitHub":
        api = self._serve("api")
        blob = self._serve("blob")
        self.base = f"http://127.0.0.1:{api.server_address[1]}"
        self.blob_base = f"http://127.0.0.1:{blob.server_address[1]}"
        return self

    def _serve(self, role: str) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self, role))
        server.daemon_threads = True
        thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name=f"fakegithub-{role}", daemon=True
        )
        thread.start()
        self._servers.append(server)
        return server

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> "FakeGitHub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API base URL (what GITHUB_API_URL is set to)."""
        return self.base + self.prefix

    # -- state: comments -----------------------------------------------------

    def _user(self, login: str, user_type: str) -> dict:
        user = copy.deepcopy(self._comment_example["user"])
        uid = zlib.crc32(login.encode()) % 10_000_000
        user.update(
            login=login,
            id=uid,
            type=user_type,
            node_id=f"U_{uid}",
            url=f"{self.url}/users/{login}",
            html_url=f"https://github.com/{login}",
        )
        return user

    def add_comment(
        self, repo: str, number: int, body: str, *, login: str = "someone", user_type: str | None = None,
        cid: int | None = None,
    ) -> dict:
        """Store a comment as written by ``login`` and return it (API shape); ``cid``: its id
        (as a webhook payload names it), else the next one."""
        if user_type is None:
            user_type = "Bot" if login.endswith("[bot]") else "User"
        with self._lock:
            if cid is None:
                cid = self._next_comment_id
                self._next_comment_id += 1
            now = _now()
            comment = copy.deepcopy(self._comment_example)
            comment.update(
                id=cid,
                node_id=f"IC_{cid}",
                url=f"{self.url}/repos/{repo}/issues/comments/{cid}",
                html_url=f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
                body=body,
                user=self._user(login, user_type),
                created_at=now,
                updated_at=now,
                issue_url=f"{self.url}/repos/{repo}/issues/{number}",
                author_association="NONE" if user_type == "Bot" else "MEMBER",
            )
            self._comments.setdefault((repo, number), []).append(comment)
            self._comment_index[cid] = (repo, number)
            return copy.deepcopy(comment)

    def comments(self, repo: str, number: int) -> list[dict]:
        with self._lock:
            return copy.deepcopy(self._comments.get((repo, number), []))

    def _viewer_login(self) -> str:
        if self.viewer is None and self.app is not None:
            return f"{self.app['slug']}[bot]"
        return self.viewer or "github-actions[bot]"

    # -- state: a GitHub App -------------------------------------------------

    def enable_app(self, app_id: str, public_key_pem: str, *, slug: str = "triage-app",
                   installations: dict[str, int] | None = None, token_lifetime: int = 3600) -> None:
        """Act as GitHub for an App: JWTs (RS256, checked with ``public_key_pem``) at
        ``/app``, ``/repos/{repo}/installation`` and ``POST /app/installations/{id}/access_tokens``,
        whose tokens then work like ``fake.token``; ``GET /user`` refuses them."""
        self.app = {"id": str(app_id), "slug": slug, "key": public_key_pem, "lifetime": token_lifetime,
                    "installations": dict(installations or {})}
        self.viewer = None

    def _jwt_ok(self, headers: dict) -> bool:
        import jwt

        auth = headers.get("authorization", "")
        if self.app is None or not auth.startswith("Bearer "):
            return False
        try:
            claims = jwt.decode(auth[7:], self.app["key"], algorithms=["RS256"], options={"require": ["iat", "exp", "iss"]})
        except jwt.PyJWTError:
            return False
        return claims["iss"] == self.app["id"] and claims["exp"] - claims["iat"] <= 600

    # -- state: pulls and actions -------------------------------------------

    def add_pull(self, repo: str, number: int, *, head_sha: str = "f" * 40, head_ref: str = "feature",
                 labels: list[str] | None = None) -> dict:
        pull = copy.deepcopy(self._pull_example)
        pull.update(
            number=number,
            url=f"{self.url}/repos/{repo}/pulls/{number}",
            html_url=f"https://github.com/{repo}/pull/{number}",
            labels=[{"id": i + 1, "name": name, "color": "ededed", "default": False}
                    for i, name in enumerate(labels or [])],
        )
        if isinstance(pull.get("head"), dict):
            pull["head"].update(sha=head_sha, ref=head_ref)
        with self._lock:
            self._pulls[(repo, number)] = pull
        return copy.deepcopy(pull)

    def add_workflow_run(
        self,
        repo: str,
        run_id: int | None = None,
        *,
        jobs: list[dict] | None = None,
        status: str = "completed",
        conclusion: str | None = "failure",
        head_sha: str = "acb5820ced9479c074f688cc328bf03f341a511d",
        head_branch: str = "main",
        name: str = "CI",
        run_logs: dict[str, str] | int | None = None,
        artifacts: "list[str] | dict[str, bytes | dict[str, str | bytes]] | None" = None,
    ) -> dict:
        """Store a run with its jobs and logs; return the run (API shape).

        ``jobs``: dicts with ``name``, optional ``conclusion`` (default
        "success"), ``status`` ("completed"), ``id`` and ``log`` (text; None for
        no log -> 404; an int for that status, e.g. 410).  ``run_logs``: the
        files of the run's zip (name -> text), or a status; by default the zip
        holds ``{i}_{job name}.txt`` for each job with a text log.
        ``artifacts``: names (listed only), or name -> the zip's bytes or its
        files (name -> content), served at ``.../artifacts/{id}/zip``.
        """
        with self._lock:
            run_id = run_id or (30_433_642 + len(self._runs))
            run = copy.deepcopy(self._run_example)
            run.update(
                id=run_id,
                name=name,
                head_branch=head_branch,
                head_sha=head_sha,
                status=status,
                conclusion=conclusion if status == "completed" else None,
                url=f"{self.url}/repos/{repo}/actions/runs/{run_id}",
                html_url=f"https://github.com/{repo}/actions/runs/{run_id}",
                jobs_url=f"{self.url}/repos/{repo}/actions/runs/{run_id}/jobs",
                logs_url=f"{self.url}/repos/{repo}/actions/runs/{run_id}/logs",
            )
            job_list = []
            for spec in jobs if jobs is not None else [{"name": "build"}]:
                job_id = spec.get("id") or self._next_job_id
                self._next_job_id = max(self._next_job_id, job_id) + 1
                job = copy.deepcopy(self._job_example)
                job_status = spec.get("status", "completed")
                job.update(
                    id=job_id,
                    run_id=run_id,
                    run_url=run["url"],
                    node_id=f"J_{job_id}",
                    head_sha=head_sha,
                    head_branch=head_branch,
                    url=f"{self.url}/repos/{repo}/actions/jobs/{job_id}",
                    html_url=f"https://github.com/{repo}/actions/runs/{run_id}/job/{job_id}",
                    check_run_url=f"{self.url}/repos/{repo}/check-runs/{job_id}",
                    status=job_status,
                    conclusion=spec.get("conclusion", "success") if job_status == "completed" else None,
                    name=spec["name"],
                    workflow_name=name,
                )
                job_list.append(job)
                self._job_logs[job_id] = spec.get("log")
            self._runs[(repo, run_id)] = run
            self._jobs[(repo, run_id)] = job_list
            if run_logs is not None:
                self._run_logs[(repo, run_id)] = run_logs
            arts = []
            for i, art_name in enumerate(artifacts or []):
                art = copy.deepcopy(self._artifact_example)
                art.update(id=run_id * 10 + i, name=art_name, expired=False)
                content = artifacts[art_name] if isinstance(artifacts, dict) else None
                if content is not None:
                    data = content if isinstance(content, bytes) else _zip_of(content)
                    self._artifact_zips[(repo, art["id"])] = data
                    art["size_in_bytes"] = len(data)
                arts.append(art)
            self._artifacts[(repo, run_id)] = arts
            return copy.deepcopy(run)

    def set_job_log(self, job_id: int, log: str | bytes | int | None) -> None:
        with self._lock:
            self._job_logs[job_id] = log

    # -- failure injection ---------------------------------------------------

    def inject(
        self,
        method: str,
        pattern: str,
        status: int = 502,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int | None = 1,
        perform: bool = False,
        drop: bool = False,
        delay: float = 0.0,
    ) -> Injection:
        """Answer the next ``times`` requests matching ``method`` ("*" for any)
        and the glob ``pattern`` (on the path without prefix and query) with
        ``status``/``body``/``headers``.  ``perform``: handle the request
        normally first (its effect stays), then send the canned answer.
        ``drop``: close the connection without any answer.  ``delay``: sleep
        that long before answering.  Injections are tried in order.
        """
        if body is None:
            body = {"message": HTTPStatus(status).phrase, "documentation_url": "https://docs.github.com/rest"}
        inj = Injection(method, pattern, status, body, dict(headers or {}), times, perform, drop, delay)
        with self._lock:
            self._injections.append(inj)
        return inj

    def slow(self, method: str, pattern: str, delay: float, *, times: int | None = None) -> Injection:
        """Answer matching requests as usual, each ``delay`` seconds late (widens races)."""
        inj = Injection(method, pattern, 200, None, {}, times, delay=delay, passthrough=True)
        with self._lock:
            self._injections.append(inj)
        return inj

    def inject_secondary_rate_limit(self, method: str, pattern: str, *, retry_after: int | None = 1,
                                    status: int = 403, times: int = 1) -> Injection:
        headers = {"x-ratelimit-remaining": "4990", "x-ratelimit-limit": "5000"}
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        return self.inject(
            method,
            pattern,
            status,
            body={
                "message": "You have exceeded a secondary rate limit. Please wait a few minutes "
                "before you try again. If you reach out to GitHub Support for help, please "
                "include the request ID 0000:1111:2222:3333:4444.",
                "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/"
                "rate-limits-for-the-rest-api#about-secondary-rate-limits",
            },
            headers=headers,
            times=times,
        )

    def inject_primary_rate_limit(self, method: str, pattern: str, *, reset_in: int = 30,
                                  status: int = 403, times: int = 1) -> Injection:
        return self.inject(
            method,
            pattern,
            status,
            body={
                "message": "API rate limit exceeded for installation ID 1234567.",
                "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
            },
            headers={
                "x-ratelimit-limit": "1000",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-used": "1000",
                "x-ratelimit-reset": str(int(time.time()) + reset_in),
                "x-ratelimit-resource": "core",
            },
            times=times,
        )

    def inject_create_then_fail(self, status: int = 502, *, pattern: str = "/repos/*/issues/*/comments") -> Injection:
        """The next comment POST creates the comment but answers ``status``."""
        return self.inject("POST", pattern, status, perform=True)

    # -- queries for assertions ----------------------------------------------

    def calls(self, method: str | None = None, pattern: str | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [
                r
                for r in self.requests
                if (method is None or r.method == method.upper())
                and (pattern is None or fnmatch.fnmatchcase(r.path, pattern))
            ]

    def writes(self) -> list[RecordedRequest]:
        return [r for r in self.calls() if r.method in ("POST", "PATCH", "PUT", "DELETE")]

    # -- request handling ----------------------------------------------------

    def _blob(self, content_type: str, data: bytes) -> str:
        key = secrets.token_hex(8)
        with self._lock:
            self._blobs[key] = (content_type, data)
        base = self.blob_base if self.separate_blob_host else self.base
        return f"{base}/_blob/{key}?sig={secrets.token_hex(6)}&expires=60"

    def handle(self, role: str, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> _Reply:
        split = urlsplit(raw_path)
        path = split.path
        if role == "api" and self.prefix and path.startswith(self.prefix + "/"):
            path = path[len(self.prefix):]
        query = dict(parse_qsl(split.query))
        with self._lock:
            self.requests.append(RecordedRequest(method, path, query, headers, body, role))
            injection = next((i for i in self._injections if i.matches(method, path)), None)
            if injection is not None:
                injection.used += 1
        self._auth.value = headers.get("authorization", "")  # for the routes that ask who writes
        if injection is not None and injection.delay:
            time.sleep(injection.delay)
        if injection is not None and injection.passthrough:
            return self._route(role, method, path, query, headers, body)
        if injection is not None and not injection.perform:
            return self._canned(injection)
        reply = self._route(role, method, path, query, headers, body)
        if injection is not None:  # perform=True: the effect stays, the answer is replaced
            return self._canned(injection)
        return reply

    @staticmethod
    def _canned(inj: Injection) -> _Reply:
        if inj.drop:
            return _Reply(0, drop=True)
        if isinstance(inj.body, (bytes, str)):
            data = inj.body.encode() if isinstance(inj.body, str) else inj.body
            return _Reply(inj.status, data, {"Content-Type": "text/html", **inj.headers})
        return _json_reply(inj.status, inj.body, inj.headers)

    def _route(self, role: str, method: str, path: str, query: dict, headers: dict, body: bytes) -> _Reply:
        if path.startswith("/_blob/"):
            return self._serve_blob(role, path, headers)
        if role != "api":
            return _error(404, "Not Found")
        if path == "/app" or path.startswith("/app/") or re.fullmatch(r"/repos/[^/]+/[^/]+/installation", path):
            if not self._jwt_ok(headers):
                return _error(401, "A JSON web token could not be decoded")
        elif self.require_auth and headers.get("authorization") != f"Bearer {self.token}" and not self._installation_ok(headers):
            return _error(401, "Bad credentials")
        for pattern, handler in self._routes():
            m = re.fullmatch(pattern, f"{method} {path}")
            if m:
                return handler(query=query, body=body, **m.groupdict())
        return _error(404, "Not Found")

    def _installation_ok(self, headers: dict) -> bool:
        auth = headers.get("authorization", "")
        with self._lock:
            expiry = self.installation_tokens.get(auth[7:]) if auth.startswith("Bearer ") else None
        return expiry is not None and expiry > time.time()

    def _get_app(self, query: dict, body: bytes) -> _Reply:
        return _json_reply(200, {"id": int(self.app["id"]), "slug": self.app["slug"], "name": self.app["slug"]})

    def _get_installation(self, repo: str, query: dict, body: bytes) -> _Reply:
        iid = self.app["installations"].get(repo)
        return _json_reply(200, {"id": iid, "app_id": int(self.app["id"])}) if iid else _error(404, "Not Found")

    def _create_token(self, iid: str, query: dict, body: bytes) -> _Reply:
        if int(iid) not in self.app["installations"].values():
            return _error(404, "Not Found")
        token = "ghs_" + secrets.token_hex(18)
        TOKENS_IN_USE.add(token)
        expires = time.time() + self.app["lifetime"]
        with self._lock:
            self.installation_tokens[token] = expires
        stamp = datetime.fromtimestamp(expires, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return _json_reply(201, {"token": token, "expires_at": stamp, "permissions": {"actions": "read"}})

    def _routes(self) -> list[tuple[str, Any]]:
        repo = r"/repos/(?P<repo>[^/]+/[^/]+)"
        return [
            (r"GET /app", self._get_app),
            (rf"GET {repo}/installation", self._get_installation),
            (r"POST /app/installations/(?P<iid>\d+)/access_tokens", self._create_token),
            (r"GET /user", self._get_user),
            (rf"GET {repo}/issues/(?P<number>\d+)/comments", self._list_comments),
            (rf"POST {repo}/issues/(?P<number>\d+)/comments", self._create_comment),
            (rf"GET {repo}/issues/comments/(?P<cid>\d+)", self._get_comment),
            (rf"PATCH {repo}/issues/comments/(?P<cid>\d+)", self._update_comment),
            (rf"DELETE {repo}/issues/comments/(?P<cid>\d+)", self._delete_comment),
            (rf"GET {repo}/pulls/(?P<number>\d+)", self._get_pull),
            (rf"GET {repo}/collaborators/(?P<login>[^/]+)/permission", self._get_permission),
            (rf"POST {repo}/issues/comments/(?P<cid>\d+)/reactions", self._create_reaction),
            (rf"POST {repo}/actions/workflows/(?P<workflow>[^/]+)/dispatches", self._dispatch),
            *self._check_routes(repo),
            (rf"GET {repo}/actions/runs/(?P<run_id>\d+)", self._get_run),
            (rf"GET {repo}/actions/runs/(?P<run_id>\d+)/jobs", self._list_jobs),
            (rf"GET {repo}/actions/runs/(?P<run_id>\d+)/artifacts", self._list_artifacts),
            (rf"GET {repo}/actions/artifacts/(?P<art_id>\d+)/zip", self._artifact_zip),
            (rf"GET {repo}/actions/runs/(?P<run_id>\d+)/logs", self._run_logs_redirect),
            (rf"GET {repo}/actions/jobs/(?P<job_id>\d+)/logs", self._job_log_redirect),
        ]

    def _serve_blob(self, role: str, path: str, headers: dict) -> _Reply:
        if role == "blob" and "authorization" in headers:
            # Like a signed-URL store: a second credential is refused.
            return _Reply(400, b"<Error><Code>InvalidArgument</Code>Only one auth mechanism allowed</Error>",
                          {"Content-Type": "application/xml"})
        with self._lock:
            blob = self._blobs.get(path[len("/_blob/"):])
        if blob is None:
            return _Reply(404, b"BlobNotFound", {"Content-Type": "text/plain"})
        return _Reply(200, blob[1], {"Content-Type": blob[0]})

    def _page(self, items: list, path: str, query: dict) -> tuple[list, dict[str, str]]:
        try:
            per_page = max(1, min(100, int(query.get("per_page", 30))))
            page = max(1, int(query.get("page", 1)))
        except ValueError:
            per_page, page = 30, 1
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        rest = {k: v for k, v in query.items() if k not in ("page", "per_page")}

        def link(p: int) -> str:
            return f"{self.url}{path}?{urlencode({**rest, 'per_page': per_page, 'page': p})}"

        rels = []
        if page > 1:
            rels += [f'<{link(page - 1)}>; rel="prev"', f'<{link(1)}>; rel="first"']
        if page < last:
            rels += [f'<{link(page + 1)}>; rel="next"', f'<{link(last)}>; rel="last"']
        return chunk, ({"Link": ", ".join(rels)} if rels else {})

    def _get_user(self, query: dict, body: bytes) -> _Reply:
        if self.viewer is None:
            return _error(403, "Resource not accessible by integration",
                          "https://docs.github.com/rest/users/users#get-the-authenticated-user")
        user = self._user(self.viewer, self.viewer_type)
        return _json_reply(200, user)

    def _list_comments(self, repo: str, number: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            items = sorted(self._comments.get((repo, int(number)), []), key=lambda c: c["id"])
            chunk, headers = self._page(items, f"/repos/{repo}/issues/{number}/comments", query)
            return _json_reply(200, copy.deepcopy(chunk), headers)

    @staticmethod
    def _json_with(body: bytes, key: str) -> dict | _Reply:
        """The request's JSON object, which must carry the text ``key``; else GitHub's 400/422."""
        try:
            data = json.loads(body or b"null")
        except ValueError:
            return _error(400, "Problems parsing JSON")
        if not isinstance(data, dict) or not isinstance(data.get(key), str):
            return _json_reply(422, {"message": f"Invalid request.\n\n\"{key}\" wasn't supplied.",
                                     "documentation_url": "https://docs.github.com/rest", "status": "422"})
        return data

    def _comment_body(self, body: bytes) -> str | _Reply:
        data = self._json_with(body, "body")
        if isinstance(data, _Reply):
            return data
        if len(data["body"]) > self.max_comment_chars:
            return _json_reply(422, _too_long_body())
        return data["body"]

    def _create_comment(self, repo: str, number: str, query: dict, body: bytes) -> _Reply:
        text = self._comment_body(body)
        if isinstance(text, _Reply):
            return text
        comment = self.add_comment(repo, int(number), text, login=self._viewer_login())
        return _json_reply(201, comment, {"Location": comment["url"]})

    def _find_comment(self, repo: str, cid: str) -> dict | None:
        key = self._comment_index.get(int(cid))
        if key is None or key[0] != repo:
            return None
        return next((c for c in self._comments[key] if c["id"] == int(cid)), None)

    def _writable_comment(self, repo: str, cid: str) -> dict | _Reply:
        """The comment the viewer may edit or delete, or the error GitHub gives."""
        comment = self._find_comment(repo, cid)
        if comment is None:
            return _error(404, "Not Found")
        if comment["user"]["login"].lower() != self._viewer_login().lower():
            return _error(403, "Must have admin rights to Repository.")
        return comment

    def _get_comment(self, repo: str, cid: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            comment = self._find_comment(repo, cid)
            return _json_reply(200, copy.deepcopy(comment)) if comment else _error(404, "Not Found")

    def _update_comment(self, repo: str, cid: str, query: dict, body: bytes) -> _Reply:
        text = self._comment_body(body)
        if isinstance(text, _Reply):
            return text
        with self._lock:
            comment = self._writable_comment(repo, cid)
            if isinstance(comment, _Reply):
                return comment
            comment["body"] = text
            comment["updated_at"] = _now()
            return _json_reply(200, copy.deepcopy(comment))

    def _delete_comment(self, repo: str, cid: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            found = self._writable_comment(repo, cid)
            if isinstance(found, _Reply):
                return found
            key = self._comment_index.pop(int(cid))
            self._comments[key] = [c for c in self._comments[key] if c["id"] != int(cid)]
            return _Reply(204, b"", {})

    def _get_pull(self, repo: str, number: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            pull = self._pulls.get((repo, int(number)))
            return _json_reply(200, copy.deepcopy(pull)) if pull else _error(404, "Not Found")

    # Roles and the legacy base permission GitHub reports for them.
    _BASE = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read"}

    def _get_permission(self, repo: str, login: str, query: dict, body: bytes) -> _Reply:
        role = self.permissions.get(login, "read")
        if role is None:
            return _error(404, "Not Found")
        data = copy.deepcopy(self._permission_example)
        user = self._user(login, "User")
        user.update(role_name=role)
        data.update(permission=self._BASE.get(role, "read"), role_name=role, user=user)
        return _json_reply(200, data)

    def reactions(self, comment_id: int) -> list[str]:
        """The contents of a comment's reactions, in the order added."""
        with self._lock:
            return [r["content"] for r in self._reactions.get(comment_id, [])]

    def _create_reaction(self, repo: str, cid: str, query: dict, body: bytes) -> _Reply:
        data = self._json_with(body, "content")
        if isinstance(data, _Reply):
            return data
        if data["content"] not in ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"):
            return _json_reply(422, {"message": "Validation Failed", "errors": [
                {"resource": "Reaction", "code": "invalid", "field": "content"}],
                "documentation_url": "https://docs.github.com/rest/reactions/reactions", "status": "422"})
        with self._lock:
            if self._find_comment(repo, cid) is None:
                return _error(404, "Not Found")
            login = self._viewer_login()
            mine = [r for r in self._reactions.get(int(cid), [])
                    if r["content"] == data["content"] and r["user"]["login"] == login]
            if mine:
                return _json_reply(200, copy.deepcopy(mine[0]))
            reaction = copy.deepcopy(self._reaction_example)
            reaction.update(id=self._next_reaction_id, node_id=f"REA_{self._next_reaction_id}",
                            user=self._user(login, "Bot" if login.endswith("[bot]") else "User"),
                            content=data["content"], created_at=_now())
            self._next_reaction_id += 1
            self._reactions.setdefault(int(cid), []).append(reaction)
            return _json_reply(201, copy.deepcopy(reaction))

    def _dispatch(self, repo: str, workflow: str, query: dict, body: bytes) -> _Reply:
        data = self._json_with(body, "ref")
        if isinstance(data, _Reply):
            return data
        inputs = data.get("inputs") or {}
        with self._lock:
            self.dispatches.append({"repo": repo, "workflow": workflow, "ref": data["ref"], "inputs": inputs})
        run = self.on_dispatch(repo, workflow, data["ref"], inputs) if self.on_dispatch else None
        if data.get("return_run_details") and run is not None:
            return _json_reply(200, {"workflow_run_id": run["id"], "run_url": run["url"], "html_url": run["html_url"]})
        return _Reply(204)

    def _get_run(self, repo: str, run_id: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            run = self._runs.get((repo, int(run_id)))
            return _json_reply(200, copy.deepcopy(run)) if run else _error(404, "Not Found")

    def _list_jobs(self, repo: str, run_id: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            if (repo, int(run_id)) not in self._runs:
                return _error(404, "Not Found")
            jobs = self._jobs[(repo, int(run_id))]
            chunk, headers = self._page(jobs, f"/repos/{repo}/actions/runs/{run_id}/jobs", query)
            return _json_reply(200, {"total_count": len(jobs), "jobs": copy.deepcopy(chunk)}, headers)

    def _list_artifacts(self, repo: str, run_id: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            if (repo, int(run_id)) not in self._runs:
                return _error(404, "Not Found")
            arts = self._artifacts[(repo, int(run_id))]
            chunk, headers = self._page(arts, f"/repos/{repo}/actions/runs/{run_id}/artifacts", query)
            return _json_reply(200, {"total_count": len(arts), "artifacts": copy.deepcopy(chunk)}, headers)

    def _artifact_zip(self, repo: str, art_id: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            data = self._artifact_zips.get((repo, int(art_id)))
        if data is None:
            return _error(404, "Not Found")
        return _Reply(302, b"", {"Location": self._blob("application/zip", data)})

    def _job_log_redirect(self, repo: str, job_id: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            known = any(j["id"] == int(job_id) for (r, _), js in self._jobs.items() if r == repo for j in js)
            log = self._job_logs.get(int(job_id))
        if not known or log is None:
            return _error(404, "Not Found")
        if isinstance(log, int):
            return _error(log, HTTPStatus(log).phrase)
        data = log.encode() if isinstance(log, str) else log
        return _Reply(302, b"", {"Location": self._blob("text/plain", data)})

    def _run_logs_redirect(self, repo: str, run_id: str, query: dict, body: bytes) -> _Reply:
        with self._lock:
            if (repo, int(run_id)) not in self._runs:
                return _error(404, "Not Found")
            files = self._run_logs.get((repo, int(run_id)))
            if files is None:
                files = {}
                for i, job in enumerate(self._jobs[(repo, int(run_id))]):
                    log = self._job_logs.get(job["id"])
                    if isinstance(log, (str, bytes)):
                        files[f"{i}_{job['name']}.txt"] = log if isinstance(log, str) else log.decode()
        if isinstance(files, int):
            return _error(files, HTTPStatus(files).phrase)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, text in files.items():
                zf.writestr(name, text)
        return _Reply(302, b"", {"Location": self._blob("application/zip", buf.getvalue())})


def _make_handler(fake: FakeGitHub, role: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10
        wbufsize = 1 << 16  # one write per response (no Nagle/delayed-ACK stalls)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = fake.handle(role, self.command, self.path, headers, body)
            if reply.drop:
                self.close_connection = True
                return
            self.send_response(reply.status)
            base = {
                "x-ratelimit-limit": "5000",
                "x-ratelimit-remaining": "4999",
                "x-ratelimit-used": "1",
                "x-ratelimit-reset": str(int(time.time()) + 3600),
                "x-ratelimit-resource": "core",
                "x-github-api-version-selected": "2022-11-28",
            } if role == "api" else {}
            merged = dict(base)
            merged.update({k.lower(): v for k, v in reply.headers.items()})
            for name, value in merged.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply.body)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _handle

    return Handler


# --------------------------------------------------------------------------
# pytest fixture


@pytest.fixture
def fake_github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """A running :class:`FakeGitHub`; GITHUB_API_URL/GITHUB_TOKEN point at it."""
    fake = FakeGitHub().start()
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    try:
        yield fake
    finally:
        fake.stop()


def env_client(**options: Any) -> Any:
    """A GitHubClient as a command makes one: its API and token from the environment
    (``GITHUB_API_URL``, ``GITHUB_TOKEN``/``GH_TOKEN``), unless ``options`` name others."""
    from triage.github.client import GitHubClient
    from triage.settings import Settings

    settings = Settings.from_env()
    return GitHubClient(**{"api_url": settings.github_api_url, "token": settings.github_token, **options})


@pytest.fixture
def sleeps() -> list[float]:
    """The waits a client asked for, instead of sleeping them."""
    return []


@pytest.fixture
def client(fake_github: FakeGitHub, sleeps: list[float]) -> Iterator[Any]:
    """A GitHubClient against the fake server that records its waits in ``sleeps``."""
    from triage.github.client import GitHubClient

    with GitHubClient(fake_github.url, fake_github.token, sleep=sleeps.append) as c:
        yield c
