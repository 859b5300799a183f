"""``add-run --from-github RUN_ID``: one run record per job of a workflow run.

Each job (latest attempt) becomes the run ``RUN_ID`` + config, where the
config is the job's name, or what ``--config-from REGEX`` takes from it (its
first group, else the whole match; jobs it does not match are skipped).  The
status comes from the job's conclusion (``github.actions.status_for``), the
URL is the job's page, the time its completion, and the provenance ``sha``
and ``branch`` the run's head.  The job's log is fetched and handed to
``ingest.logread.apply_log``, which reads what it can from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from triage.errors import InputError
from triage.github.actions import JobRecord, fetch_job_log, fetch_workflow_run, job_record, log_lines
from triage.ingest.runs import parse_time
from triage.kb import store

__all__ = ["JobRun", "config_pattern", "fetch", "fetch_job", "record"]


@dataclass
class JobRun:
    """One job of the workflow run, as a run to record."""

    job: JobRecord
    data: store.RunInput
    lines: Optional[list[str]]  # the job's log; None when GitHub no longer has it


def config_pattern(text: Optional[str]) -> Optional[re.Pattern]:
    """``--config-from``, compiled; InputError when it is not a regular expression."""
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise InputError(f"--config-from {text!r}: not a regular expression ({e})") from None


def _config(name: str, pattern: Optional[re.Pattern]) -> Optional[str]:
    if pattern is None:
        return name
    m = pattern.search(name)
    if m is None:
        return None
    value = m.group(1) if pattern.groups else m.group(0)
    return (value or "").strip() or None


def fetch(
    client: Any,
    repo: str,
    run_id: int,
    *,
    pattern: Optional[re.Pattern] = None,
    provenance: Optional[dict[str, str]] = None,
    note: Optional[str] = None,
) -> list[JobRun]:
    """The workflow run's jobs as runs to record, each with its log.

    Raises InputError when the run has not finished, has no job the pattern
    selects, or two jobs would get the same config.
    """
    run, jobs = fetch_workflow_run(client, repo, run_id, with_logs=False)
    chosen: dict[str, JobRecord] = {}
    for job in jobs:
        config = _config(job.name, pattern)
        if config is None:
            continue
        if config in chosen:
            raise InputError(
                f"jobs {chosen[config].name!r} and {job.name!r} of workflow run {run_id} both give the config "
                f"{config!r}: use --config-from to tell them apart"
            )
        chosen[config] = job
    if not chosen:
        names = ", ".join(repr(j.name) for j in jobs) or "none"
        why = f"no job matches --config-from {pattern.pattern!r}" if pattern is not None else "it has no jobs"
        raise InputError(f"nothing to record from workflow run {run_id} in {repo}: {why} (jobs: {names})")
    return [_job_run(client, repo, str(run.get("id") or run_id), config, job, provenance, note)
            for config, job in chosen.items()]


def fetch_job(
    client: Any,
    repo: str,
    job: dict,
    *,
    pattern: Optional[re.Pattern] = None,
    provenance: Optional[dict[str, str]] = None,
    note: Optional[str] = None,
) -> list[JobRun]:
    """One finished job (a ``workflow_job`` webhook's) as a run to record, with its log;
    nothing when the pattern does not select it.  Its run may still be going."""
    record = job_record(job, {})
    config = _config(record.name, pattern)
    if config is None:
        return []
    return [_job_run(client, repo, str(record.run_id), config, record, provenance, note)]


def _job_run(client: Any, repo: str, run_id: str, config: str, job: JobRecord,
             provenance: Optional[dict[str, str]], note: Optional[str]) -> JobRun:
    text = fetch_job_log(client, repo, job.job_id)
    prov = {k: v for k, v in (("sha", job.head_sha), ("branch", job.head_branch)) if v}
    data = store.RunInput(
        run_id=run_id,
        config=config,
        status=job.status,
        provenance={**prov, **(provenance or {})},
        url=job.html_url,
        time=parse_time(job.completed_at or job.started_at),
        note=note,
    )
    return JobRun(job, data, log_lines(text) if text is not None else None)


def record(s: Any, inv: Any, items: list[JobRun]) -> list[tuple[Any, bool, list[str]]]:
    """Store the runs; each with whether it was new and what reading its log said."""
    from triage.ingest.logread import apply_log

    out = []
    for item in items:
        if item.lines is None:
            messages = [f"{item.data.config}: the job's log is no longer on GitHub (expired or deleted)"]
        else:
            messages = apply_log(s, inv, item.data, item.lines, conclusion=True)
        row, created = store.upsert_run(s, inv.id, item.data)
        out.append((row, created, messages))
    return out
