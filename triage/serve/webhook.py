"""What a webhook delivery says: its signature, its event, the investigations it names.

GitHub signs each delivery with ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256
of the raw body, keyed with the webhook secret>``; :func:`signature_ok` checks
it in constant time.  Only completed ``workflow_run`` and ``workflow_job``
events carry work (:func:`wanted`), and a new comment that holds ``/triage``
(``issue_comment`` / ``created``; an edit is not acted on); :func:`run_event`
and :func:`comment_event` read what the worker needs from them, and :func:`investigations_for` maps a run to the
investigations it feeds:

* the investigation's repository must be the run's;
* ``match: {workflow: …, event: …}`` (globs, or lists of globs), when given,
  must match the run's workflow name and triggering event;
* and the run must belong to the investigation's PR (GitHub lists it in
  ``pull_requests``), or run on a branch that ``match: {branch: …}`` names
  (a nightly on ``amd/*`` that no PR owns).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Optional

from triage.errors import InputError

__all__ = ["RunEvent", "signature_ok", "wanted", "run_event", "comment_event", "subject", "matches", "of_repo",
           "investigations_for"]

WORK_EVENTS = ("workflow_run", "workflow_job")


def signature_ok(secret: bytes, body: bytes, header: Optional[str]) -> bool:
    """Whether ``header`` is ``sha256=`` + the HMAC-SHA256 of ``body`` under ``secret``."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode("utf-8", "replace"))


def wanted(event: str, payload: Any) -> bool:
    """Whether the delivery carries work: a completed workflow run or job, or a new
    comment that may hold a ``/triage`` command."""
    if not isinstance(payload, dict):
        return False
    if event == "issue_comment":
        comment = payload.get("comment")
        body = comment.get("body") if isinstance(comment, dict) else None
        return payload.get("action") == "created" and isinstance(body, str) and "/triage" in body
    return event in WORK_EVENTS and payload.get("action") == "completed"


def subject(event: str, payload: Any) -> Optional[str]:
    """What a wanted delivery is about, as the queue keeps it: ``owner/name#N`` (lower
    case) when the payload names one PR -- a comment's, or the one PR of a run --
    else its repository (a job, a run of no PR or of several); None without one."""
    repo = payload.get("repository") if isinstance(payload, dict) else None
    name = repo.get("full_name") if isinstance(repo, dict) else None
    if not isinstance(name, str) or not name:
        return None
    number: Any = None
    if event == "issue_comment":
        issue = payload.get("issue")
        number = issue.get("number") if isinstance(issue, dict) else None
    elif event == "workflow_run" and isinstance(payload.get("workflow_run"), dict):
        prs = payload["workflow_run"].get("pull_requests") or []
        numbers = {p.get("number") for p in prs if isinstance(p, dict)} if isinstance(prs, list) else set()
        number = numbers.pop() if len(numbers) == 1 else None
    if isinstance(number, int) and not isinstance(number, bool):
        return f"{name.lower()}#{number}"
    return name.lower()


def comment_event(payload: dict) -> Any:
    """Read an ``issue_comment`` payload (:class:`~triage.usecases.commands.CommentEvent`);
    InputError when it lacks what is needed."""
    from triage.usecases.commands import CommentEvent

    where = "issue_comment"
    repo = _need(_need(payload, "repository", dict, where), "full_name", str, where)
    comment = _need(payload, "comment", dict, where)
    user = _need(comment, "user", dict, where)
    return CommentEvent(repo=repo, number=_need(_need(payload, "issue", dict, where), "number", int, where),
                        comment_id=_need(comment, "id", int, where), author=_need(user, "login", str, where),
                        author_type=str(user.get("type") or "User"), body=_need(comment, "body", str, where),
                        url=str(comment.get("html_url") or ""))


@dataclass
class RunEvent:
    """A completed workflow run (or one job of it), as the worker needs it."""

    repo: str
    run_id: int
    workflow: str
    branch: str
    event: str
    prs: list[int] = field(default_factory=list)
    job: Optional[dict] = None  # workflow_job: the job, recorded alone


def _need(mapping: Any, key: str, kind: type, where: str) -> Any:
    value = mapping.get(key) if isinstance(mapping, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InputError(f"the {where} payload has no valid {key!r}")
    return value


def run_event(event: str, payload: dict) -> RunEvent:
    """Read a ``workflow_run``/``workflow_job`` payload; InputError when it lacks what is needed."""
    repo = _need(_need(payload, "repository", dict, event), "full_name", str, event)
    if event == "workflow_run":
        run = _need(payload, "workflow_run", dict, event)
        workflow = run.get("name") or (payload.get("workflow") or {}).get("name") or ""
        prs = [int(p["number"]) for p in run.get("pull_requests") or []
               if isinstance(p, dict) and isinstance(p.get("number"), int)]
        return RunEvent(repo, _need(run, "id", int, event), str(workflow), str(run.get("head_branch") or ""),
                        str(run.get("event") or ""), prs)
    job = _need(payload, "workflow_job", dict, event)
    _need(job, "id", int, event)
    return RunEvent(repo, _need(job, "run_id", int, event), str(job.get("workflow_name") or ""),
                    str(job.get("head_branch") or ""), "", [], job)


def _globs(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _glob_ok(value: Any, text: str) -> bool:
    globs = _globs(value)
    return not globs or any(fnmatchcase(text, g) for g in globs)


def matches(repo: str, pr: int, match: Optional[dict], ev: RunEvent) -> bool:
    """Whether the run feeds the investigation ``repo#pr`` with this ``match:``."""
    match = match or {}
    if repo.lower() != ev.repo.lower():
        return False
    if not _glob_ok(match.get("workflow"), ev.workflow) or (ev.event and not _glob_ok(match.get("event"), ev.event)):
        return False
    if pr in ev.prs:
        return True
    branches = _globs(match.get("branch"))
    return bool(branches) and any(fnmatchcase(ev.branch, g) for g in branches)


def of_repo(s: Any, repo: str) -> list[Any]:
    """The investigations of a repository (names compared without case, as GitHub does)."""
    from sqlalchemy import func, select

    from triage.kb import models as m

    return list(s.execute(select(m.Investigation).where(func.lower(m.Investigation.repo) == repo.lower())
                          .order_by(m.Investigation.id)).scalars())


def investigations_for(s: Any, ev: RunEvent) -> list[Any]:
    """The investigations of the knowledge base that the run feeds."""
    return [inv for inv in of_repo(s, ev.repo) if matches(inv.repo, inv.pr, (inv.spec or {}).get("match"), ev)]
