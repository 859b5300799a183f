"""Fetch a GitHub Actions workflow run, its jobs and their logs.

Used by ``triage add-run --from-github RUN_ID``.

Status mapping (:func:`status_for`), from GitHub's job/run ``conclusion``:

=================  ===========  ==============================================
GitHub             triage       why
=================  ===========  ==============================================
success            passed
failure            failed       (a known failure with an ``outcome:`` in the
                                log refines it: exit code 137 is ``oom``, the
                                runner's shutdown signal ``infra``)
timed_out          timeout      the job ran out of time (or hung)
startup_failure    infra        the job never started: not a verdict on the code
cancelled          cancelled
skipped            cancelled    the job produced no result
neutral            cancelled    completed without a verdict: neither a pass
action_required    cancelled    nor a failure; it needs approval, did not run
stale              cancelled
(other value)      infra        unknown: never count it as a pass
None, completed    infra        completed without a conclusion
None, not done     InputError   "still in progress": wait for it to finish
=================  ===========  ==============================================

A timeout or an infra error is no result unless the investigation declares
it its failure (``failure: [failed, timeout]``).

Logs: the job log endpoint answers 302 to a short-lived archive URL, usually
on another host; the client follows it without the token.  A log that is gone
(404/410: expired or deleted) gives ``log_text=None``.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from typing import Any

from triage.errors import InputError

from .client import GitHubClient, GitHubError
from .comments import validate_repo

__all__ = [
    "JobRecord",
    "fetch_workflow_run",
    "fetch_job_log",
    "log_lines",
    "download_run_logs",
    "list_run_artifacts",
    "download_artifact",
    "status_for",
    "GitHubLogsGone",
]

_STATUS = {
    "success": "passed",
    "failure": "failed",
    "timed_out": "timeout",
    "startup_failure": "infra",
    "cancelled": "cancelled",
    "skipped": "cancelled",
    "neutral": "cancelled",
    "action_required": "cancelled",
    "stale": "cancelled",
}
_GONE = (404, 410)
MAX_LOG_ARCHIVE_BYTES = 1 << 30  # uncompressed, a guard against absurd archives


class GitHubLogsGone(GitHubError):
    """The run's log archive is not available (expired, deleted, or no such run)."""


@dataclass
class JobRecord:
    run_id: int
    job_id: int
    name: str
    status: str  # the triage status (see status_for)
    conclusion: str | None  # GitHub's conclusion, unchanged
    html_url: str | None
    head_sha: str | None
    head_branch: str | None
    started_at: str | None
    completed_at: str | None
    log_text: str | None = None  # the job's log text, if available
    github_status: str | None = None  # GitHub's status (queued/in_progress/completed/...)


def status_for(conclusion: str | None, status: str | None = None) -> str:
    """Map a GitHub conclusion (and status) to an outcome (passed, failed, timeout, cancelled, infra)."""
    if conclusion is None or conclusion == "":
        if status in (None, "", "completed"):
            return "infra"
        raise InputError(f"the run is still in progress (status: {status}); add it once it has finished")
    return _STATUS.get(str(conclusion).lower(), "infra")


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{what} must be a positive integer, got {value!r}")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a positive integer, got {value!r}") from None
    if number <= 0:
        raise InputError(f"{what} must be a positive integer, got {value!r}")
    return number


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")


def log_lines(text: str) -> list[str]:
    """A job log's lines without the timestamp GitHub puts before each one."""
    return [_STAMP.sub("", line, count=1) for line in text.splitlines()]


def fetch_job_log(client: GitHubClient, repo: str, job_id: int) -> str | None:
    """The plain-text log of one job, or None when GitHub no longer has it."""
    try:
        resp = client.request("GET", f"/repos/{repo}/actions/jobs/{job_id}/logs", follow_redirects=True)
    except GitHubError as err:
        if err.status in _GONE:
            return None
        raise
    return _text(resp.content)


def fetch_workflow_run(
    client: GitHubClient, repo: str, run_id: int, *, with_logs: bool = True
) -> tuple[dict, list[JobRecord]]:
    """The run object and one :class:`JobRecord` per job (latest attempt).

    Raises InputError when the run has not finished yet.
    """
    validate_repo(repo)
    run_id = _positive_int(run_id, "run id")
    run = client.get_json(f"/repos/{repo}/actions/runs/{run_id}")
    if not isinstance(run, dict):
        raise GitHubError(f"unexpected response for workflow run {run_id} in {repo}")
    run_status = run.get("status")
    if run_status not in (None, "completed"):
        raise InputError(
            f"workflow run {run_id} in {repo} is still in progress (status: {run_status}); "
            "add it once it has finished"
        )
    jobs = client.paginate(f"/repos/{repo}/actions/runs/{run_id}/jobs", params={"filter": "latest"}, key="jobs")
    records: list[JobRecord] = []
    for job in jobs:
        record = job_record(job, run)
        if with_logs:
            record.log_text = fetch_job_log(client, repo, record.job_id)
        records.append(record)
    return run, records


def job_record(job: dict, run: dict) -> JobRecord:
    """One job (an item of the jobs list, or a ``workflow_job`` webhook's job) without its log."""
    job_id = int(job["id"])
    try:
        status = status_for(job.get("conclusion"), job.get("status"))
    except InputError:
        status = "error"  # a job left unfinished inside a finished run
    return JobRecord(
        run_id=int(job.get("run_id") or run.get("id")),
        job_id=job_id,
        name=str(job.get("name") or job_id),
        status=status,
        conclusion=job.get("conclusion"),
        html_url=job.get("html_url"),
        head_sha=job.get("head_sha") or run.get("head_sha"),
        head_branch=job.get("head_branch") or run.get("head_branch"),
        started_at=job.get("started_at"),
        completed_at=job.get("completed_at"),
        github_status=job.get("status"),
    )


def download_run_logs(
    client: GitHubClient, repo: str, run_id: int, *, max_bytes: int = MAX_LOG_ARCHIVE_BYTES
) -> dict[str, str]:
    """All logs of a run: the zip archive unpacked in memory, file name -> text."""
    validate_repo(repo)
    run_id = _positive_int(run_id, "run id")
    try:
        resp = client.request("GET", f"/repos/{repo}/actions/runs/{run_id}/logs", follow_redirects=True)
    except GitHubError as err:
        if err.status in _GONE:
            raise GitHubLogsGone(
                f"the logs of workflow run {run_id} in {repo} are not available ({err.status}): "
                "they expired or were deleted, or the run does not exist",
                status=err.status,
            ) from None
        raise
    try:
        archive = zipfile.ZipFile(io.BytesIO(resp.content))
    except zipfile.BadZipFile:
        raise GitHubError(
            f"the log archive of workflow run {run_id} in {repo} is not a valid zip file"
        ) from None
    with archive:
        members = [info for info in archive.infolist() if not info.is_dir()]
        total = sum(info.file_size for info in members)
        if total > max_bytes:
            raise GitHubError(
                f"the log archive of workflow run {run_id} in {repo} unpacks to {total:,} bytes, "
                f"more than the {max_bytes:,} allowed"
            )
        return {info.filename: _text(archive.read(info)) for info in members}


def list_run_artifacts(client: GitHubClient, repo: str, run_id: int) -> list[dict]:
    """The artifacts of a run (``{total_count, artifacts}`` pages, flattened)."""
    validate_repo(repo)
    run_id = _positive_int(run_id, "run id")
    return list(client.paginate(f"/repos/{repo}/actions/runs/{run_id}/artifacts", key="artifacts"))


def download_artifact(client: GitHubClient, repo: str, artifact: dict) -> bytes | None:
    """An artifact's zip archive, or None when GitHub no longer has it (expired,
    deleted); InputError when it is bigger than ``TRIAGE_MAX_ARTIFACT_BYTES``."""
    from triage import limits

    most = limits.get("artifact_bytes")
    name = str(artifact.get("name"))[:100]
    too_big = InputError(f"artifact {name!r}: more than {most:,} bytes; TRIAGE_MAX_ARTIFACT_BYTES raises the limit")
    size = artifact.get("size_in_bytes")
    if isinstance(size, int) and size > most:
        raise too_big
    if artifact.get("expired"):
        return None
    try:
        resp = client.request("GET", f"/repos/{repo}/actions/artifacts/{int(artifact['id'])}/zip",
                              follow_redirects=True)
    except GitHubError as err:
        if err.status in _GONE:
            return None
        raise
    if len(resp.content) > most:
        raise too_big
    return resp.content
