"""``add-run --from-github RUN_ID``: one run record per job of a workflow run.

Each job (latest attempt) becomes the run ``RUN_ID`` + config, where the
config is the job's name, or what ``--config-from REGEX`` takes from it (its
first group, else the whole match; jobs it does not match are skipped).  The
status comes from the job's conclusion (``github.actions.status_for``), the
URL is the job's page, the time its completion, and the provenance ``sha``
and ``branch`` the run's head.  The job's log is fetched and handed to
``ingest.logread.apply_log``, which reads what it can from it.  The run's
artifacts are downloaded (``ingest.artifacts``: bounded, no path leaves its
directory) and the results files in them read into the runs of the jobs
they belong to, as ``add-run --results`` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
    results: list[tuple[str, bytes]] = field(default_factory=list)  # ("ARTIFACT/ENTRY", content)
    said: list[str] = field(default_factory=list)  # what the artifacts gave or why not


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
    items = [_job_run(client, repo, str(run.get("id") or run_id), config, job, provenance, note)
             for config, job in chosen.items()]
    _artifacts(client, repo, run_id, {item.data.config: item for item in items})
    return items


def _artifacts(client: Any, repo: str, run_id: int, by_config: dict[str, JobRun]) -> None:
    """Each artifact's results files onto the run of the job it belongs to (``artifacts.owner``)."""
    from triage.github.actions import download_artifact, list_run_artifacts
    from triage.ingest.artifacts import owner, results_in_zip

    for art in list_run_artifacts(client, repo, run_id):
        name = str(art.get("name"))
        config = owner(name, by_config)
        if config is None:
            first = next(iter(by_config.values()))
            first.said.append(f"artifact {name}: no job's config is in its name; not read")
            continue
        data = download_artifact(client, repo, art)
        item = by_config[config]
        if data is None:
            item.said.append(f"artifact {name}: no longer on GitHub (expired or deleted)")
            continue
        item.results += [(f"{name}/{entry}", content) for entry, content in results_in_zip(name, data)]


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
        runs, said = _with_results(s, inv, item)
        for i, data in enumerate(runs):
            row, created = store.upsert_run(s, inv.id, data)
            out.append((row, created, messages + item.said + said if i == 0 else []))
    return out


def _with_results(s: Any, inv: Any, item: JobRun) -> tuple[list, list[str]]:
    """The job's run (or its repeats) with what its artifacts' results files gave."""
    if not item.results:
        return [item.data], []
    import tempfile
    from pathlib import Path

    from triage.ingest.artifacts import write_results
    from triage.ingest.results.apply import results_into

    def named(text: str) -> str:  # a file by its artifact and entry, not its temporary path
        for path, (name, _) in zip(paths, item.results):
            text = text.replace(path, f"artifact {name}")
        return text

    with tempfile.TemporaryDirectory(prefix="triage-artifacts-") as tmp:
        paths = write_results(item.results, Path(tmp))
        try:
            runs, said = results_into(s, inv, [item.data], item.data.run_id, paths, None, [])
        except InputError as e:
            raise InputError(named(e.message)) from None
    return runs, [named(line) for line in said]
