"""Check runs for the fake GitHub (:class:`tests.support.fakegithub.FakeGitHub` mixes this in).

* ``POST /repos/{o}/{r}/check-runs`` -- 201 with the run, shaped from
  ``rest/checks.create.json``; 422 without ``name``, a 40-hex ``head_sha``,
  ``output.title``/``output.summary``, with a ``completed`` status and no
  conclusion, or with a summary past 65,535 characters (GitHub's message).
* ``PATCH /repos/{o}/{r}/check-runs/{id}`` -- 200 (``rest/checks.update.json``),
  404 for no such run, 403 for a run another App made.
* ``GET /repos/{o}/{r}/commits/{ref}/check-runs`` -- ``{total_count, check_runs}``
  (``rest/checks.list-for-ref.json``), ``check_name`` filters, paginated.

Who may write them, as on GitHub: an App's installation token while
``fake.app_checks_write`` is true (else 403 "Resource not accessible by
integration"); the plain ``fake.token`` only while ``fake.token_writes_checks``
is true (the Actions GITHUB_TOKEN with ``checks: write``), else 403 "You must
authenticate via a GitHub App." (the refusal a personal token gets).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from typing import Any

SUMMARY_MAX = 65_535
_FALLBACK_RUN = {"id": 1, "head_sha": "", "node_id": "", "external_id": "", "url": "", "html_url": "",
                 "details_url": "", "status": "completed", "conclusion": "neutral", "started_at": "",
                 "completed_at": "", "output": {}, "name": "", "check_suite": {"id": 1}, "app": {},
                 "pull_requests": []}
_PERSONAL_REFUSAL = {"message": "You must authenticate via a GitHub App.",
                     "documentation_url": "https://docs.github.com/rest/reference/checks#create-a-check-run"}


class CheckRuns:
    """State and routes of the check runs; ``_check_runs_init`` from ``__init__``."""

    def _check_runs_init(self, example: Any, refusal: Any) -> None:
        self._check_run_example = example or copy.deepcopy(_FALLBACK_RUN)
        self._personal_refusal = refusal or copy.deepcopy(_PERSONAL_REFUSAL)
        self._check_runs: dict[str, list[dict]] = {}
        self._next_check_run_id = 4_000_000_001
        self.app_checks_write = True
        self.token_writes_checks = False
        self._auth = threading.local()

    def check_runs(self, repo: str, sha: str | None = None) -> list[dict]:
        """The check runs on ``repo`` (of one commit), oldest first."""
        with self._lock:
            return [copy.deepcopy(r) for r in self._check_runs.get(repo, []) if sha is None or r["head_sha"] == sha]

    def _check_routes(self, repo: str) -> list[tuple[str, Any]]:
        return [
            (rf"POST {repo}/check-runs", self._create_check_run),
            (rf"PATCH {repo}/check-runs/(?P<run_id>\d+)", self._update_check_run),
            (rf"GET {repo}/commits/(?P<ref>[^/]+)/check-runs", self._list_check_runs),
        ]

    def _writer(self) -> tuple[str | None, Any]:
        """Who writes: ``(app slug, None)``, or ``(None, the 403 reply)`` for one who may not."""
        from tests.support.fakegithub import _json_reply

        auth = getattr(self._auth, "value", "")
        if auth[7:] in self.installation_tokens:
            if not self.app_checks_write:
                return None, _json_reply(403, {"message": "Resource not accessible by integration",
                                                "documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run",
                                                "status": "403"})
            return self.app["slug"], None
        if self.token_writes_checks:
            return "github-actions", None
        return None, _json_reply(403, copy.deepcopy(self._personal_refusal))

    @staticmethod
    def _invalid(message: str) -> Any:
        from tests.support.fakegithub import _json_reply

        return _json_reply(422, {"message": f"Invalid request.\n\n{message}",
                                 "documentation_url": "https://docs.github.com/rest/checks/runs", "status": "422"})

    def _check_body(self, body: bytes, creating: bool) -> dict | Any:
        try:
            data = json.loads(body or b"null")
        except ValueError:
            return self._invalid("Problems parsing JSON")
        if not isinstance(data, dict):
            return self._invalid("the body is not an object")
        if creating and not isinstance(data.get("name"), str):
            return self._invalid('"name" wasn\'t supplied.')
        if creating and not re.fullmatch(r"[0-9a-f]{40}", str(data.get("head_sha") or "")):
            return self._invalid('"head_sha" wasn\'t supplied.')
        if data.get("status") == "completed" and not data.get("conclusion"):
            return self._invalid('"conclusion" wasn\'t supplied.')
        output = data.get("output")
        if output is not None:
            if not isinstance(output, dict) or not isinstance(output.get("summary"), str) or (
                    creating and not isinstance(output.get("title"), str)):
                return self._invalid('"title" and "summary" weren\'t supplied.')
            if len(output["summary"]) > SUMMARY_MAX:
                return self._invalid(f"Only {SUMMARY_MAX} characters are allowed; {len(output['summary'])} were supplied.")
        return data

    def _apply(self, run: dict, data: dict) -> None:
        for key in ("name", "details_url", "external_id", "status", "conclusion"):
            if key in data:
                run[key] = data[key]
        if data.get("conclusion"):
            run["status"] = "completed"
        if "output" in data:
            run["output"] = {"title": data["output"].get("title", run["output"].get("title")),
                             "summary": data["output"]["summary"], "text": data["output"].get("text"),
                             "annotations_count": 0, "annotations_url": f"{run['url']}/annotations"}

    def _create_check_run(self, repo: str, query: dict, body: bytes) -> Any:
        from tests.support.fakegithub import _json_reply, _now

        slug, refused = self._writer()
        if refused is not None:
            return refused
        data = self._check_body(body, creating=True)
        if not isinstance(data, dict):
            return data
        with self._lock:
            rid = self._next_check_run_id
            self._next_check_run_id += 1
            run = copy.deepcopy(self._check_run_example)
            # no details_url given: "the homepage of the GitHub app is used" (the REST docs)
            run.update(id=rid, node_id=f"CR_{rid}", head_sha=data["head_sha"], external_id="",
                       details_url=f"https://github.com/apps/{slug}",
                       url=f"{self.url}/repos/{repo}/check-runs/{rid}",
                       html_url=f"https://github.com/{repo}/runs/{rid}", status="queued", conclusion=None,
                       started_at=_now(), completed_at=None, output={}, pull_requests=[])
            run["app"] = dict(run.get("app") or {}, slug=slug)
            self._apply(run, data)
            if run["status"] == "completed":
                run["completed_at"] = _now()
            self._check_runs.setdefault(repo, []).append(run)
            return _json_reply(201, copy.deepcopy(run))

    def _update_check_run(self, repo: str, run_id: str, query: dict, body: bytes) -> Any:
        from tests.support.fakegithub import _error, _json_reply, _now

        slug, refused = self._writer()
        if refused is not None:
            return refused
        data = self._check_body(body, creating=False)
        if not isinstance(data, dict):
            return data
        with self._lock:
            run = next((r for r in self._check_runs.get(repo, []) if r["id"] == int(run_id)), None)
            if run is None:
                return _error(404, "Not Found")
            if run["app"].get("slug") != slug:
                return _error(403, "Resource not accessible by integration")  # another App's run
            self._apply(run, data)
            run["completed_at"] = _now() if run["status"] == "completed" else None
            return _json_reply(200, copy.deepcopy(run))

    def _list_check_runs(self, repo: str, ref: str, query: dict, body: bytes) -> Any:
        from tests.support.fakegithub import _json_reply

        with self._lock:
            runs = [r for r in self._check_runs.get(repo, []) if r["head_sha"] == ref
                    and ("check_name" not in query or r["name"] == query["check_name"])]
            runs = sorted(runs, key=lambda r: -r["id"])  # newest first
            chunk, headers = self._page(runs, f"/repos/{repo}/commits/{ref}/check-runs", query)
            return _json_reply(200, {"total_count": len(runs), "check_runs": copy.deepcopy(chunk)}, headers)
