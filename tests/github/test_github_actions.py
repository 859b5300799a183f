"""Fetching workflow runs, jobs and logs from the local fake GitHub."""

from __future__ import annotations

import pytest

from tests.support.fakegithub import fake_github, load_fixture  # noqa: F401
from triage.errors import InputError
from triage.github.actions import (
    GitHubLogsGone,
    JobRecord,
    download_run_logs,
    fetch_job_log,
    fetch_workflow_run,
    list_run_artifacts,
    status_for,
)
from triage.github.client import GitHubClient, GitHubNotFound

REPO, RUN = "octo-org/octo-repo", 30433642


def three_jobs(fake, **kw):
    return fake.add_workflow_run(
        REPO,
        RUN,
        jobs=[
            {"name": "build", "conclusion": "success", "log": "\ufeff2024-01-01T00:00:00Z building\nok\n"},
            {"name": "test (gpu)", "conclusion": "failure", "log": "E   AssertionError: 3.1 != 3.2\n"},
            {"name": "lint", "conclusion": "timed_out", "log": 410},
        ],
        **kw,
    )


@pytest.mark.parametrize(
    "conclusion,status,expected",
    [
        ("success", "completed", "passed"),
        ("failure", "completed", "failed"),
        ("cancelled", "completed", "cancelled"),
        ("timed_out", "completed", "timeout"),
        ("startup_failure", "completed", "infra"),
        ("skipped", "completed", "cancelled"),
        ("neutral", "completed", "cancelled"),
        ("action_required", "completed", "cancelled"),
        ("something_new", "completed", "infra"),
        (None, "completed", "infra"),
        (None, None, "infra"),
    ],
)
def test_status_for(conclusion, status, expected):
    assert status_for(conclusion, status) == expected


@pytest.mark.parametrize("status", ["queued", "in_progress", "waiting", "pending", "requested"])
def test_status_for_running_is_input_error(status):
    with pytest.raises(InputError) as exc:
        status_for(None, status)
    assert "still in progress" in str(exc.value) and exc.value.exit_code == 2


def test_fetch_workflow_run_with_three_jobs(fake_github, client):
    three_jobs(fake_github)
    run, jobs = fetch_workflow_run(client, REPO, RUN)
    assert run["id"] == RUN and run["conclusion"] == "failure"
    assert [j.name for j in jobs] == ["build", "test (gpu)", "lint"]
    assert [j.status for j in jobs] == ["passed", "failed", "timeout"]
    assert [j.conclusion for j in jobs] == ["success", "failure", "timed_out"]
    build, test, lint = jobs
    assert isinstance(build, JobRecord)
    assert build.run_id == RUN and build.head_sha == run["head_sha"] and build.head_branch == "main"
    assert build.html_url.endswith(f"/actions/runs/{RUN}/job/{build.job_id}")
    assert build.started_at == "2020-01-20T17:42:40Z" and build.completed_at == "2020-01-20T17:44:39Z"
    assert build.log_text == "2024-01-01T00:00:00Z building\nok\n"  # BOM removed
    assert test.log_text == "E   AssertionError: 3.1 != 3.2\n"
    assert lint.log_text is None  # purged: 410
    assert build.github_status == "completed"
    job_list = fake_github.calls("GET", f"/repos/{REPO}/actions/runs/{RUN}/jobs")
    assert job_list[0].query == {"per_page": "100", "filter": "latest"}


def test_job_shape_comes_from_the_fixture(fake_github, client):
    example = load_fixture("actions.list-jobs-for-workflow-run")
    assert example is not None, "tests/fixtures/github/rest/actions.list-jobs-for-workflow-run.json is missing"
    three_jobs(fake_github)
    raw = client.get_json(f"/repos/{REPO}/actions/runs/{RUN}/jobs")
    assert set(raw) == {"total_count", "jobs"} and raw["total_count"] == 3
    assert set(raw["jobs"][0]) == set(example["example_response"]["body"]["jobs"][0])


def test_missing_job_log_404_is_none(fake_github, client):
    fake_github.add_workflow_run(REPO, RUN, jobs=[{"name": "build", "log": None}])
    _, (job,) = fetch_workflow_run(client, REPO, RUN)
    assert job.log_text is None


def test_without_logs(fake_github, client):
    three_jobs(fake_github)
    _, jobs = fetch_workflow_run(client, REPO, RUN, with_logs=False)
    assert all(j.log_text is None for j in jobs)
    assert fake_github.calls("GET", "/repos/*/actions/jobs/*/logs") == []


def test_jobs_are_paginated(fake_github, client):
    fake_github.add_workflow_run(REPO, RUN, jobs=[{"name": f"shard-{i}"} for i in range(230)])
    _, jobs = fetch_workflow_run(client, REPO, RUN, with_logs=False)
    assert [j.name for j in jobs] == [f"shard-{i}" for i in range(230)]
    assert len(fake_github.calls("GET", f"/repos/{REPO}/actions/runs/{RUN}/jobs")) == 3


def test_log_on_another_host_gets_no_token(fake_github, client):
    fake_github.separate_blob_host = True  # that host answers 400 to an Authorization header
    three_jobs(fake_github)
    _, jobs = fetch_workflow_run(client, REPO, RUN)
    assert jobs[1].log_text == "E   AssertionError: 3.1 != 3.2\n"
    blobs = [r for r in fake_github.requests if r.server == "blob"]
    assert len(blobs) == 2
    for r in blobs:
        assert "authorization" not in r.headers
        assert fake_github.token not in str(r.headers)
    api_log_calls = fake_github.calls("GET", "/repos/*/actions/jobs/*/logs")
    assert all(r.headers["authorization"] == f"Bearer {fake_github.token}" for r in api_log_calls)


def test_log_redirect_hop_is_retried(fake_github, client, sleeps):
    fake_github.add_workflow_run(REPO, RUN, jobs=[{"name": "build", "log": "hello"}])
    fake_github.inject("GET", "/_blob/*", 503)
    _, (job,) = fetch_workflow_run(client, REPO, RUN)
    assert job.log_text == "hello"
    assert len(sleeps) == 1
    assert len(fake_github.calls("GET", "/repos/*/actions/jobs/*/logs")) == 1  # only the blob was repeated


def test_run_in_progress_is_input_error(fake_github, client):
    fake_github.add_workflow_run(REPO, RUN, status="in_progress", jobs=[{"name": "b", "status": "in_progress"}])
    with pytest.raises(InputError) as exc:
        fetch_workflow_run(client, REPO, RUN)
    assert "still in progress" in str(exc.value) and exc.value.exit_code == 2


def test_unknown_run_is_not_found(fake_github, client):
    with pytest.raises(GitHubNotFound) as exc:
        fetch_workflow_run(client, REPO, 999)
    assert "run id" in str(exc.value) and f"/repos/{REPO}/actions/runs/999" in str(exc.value)


@pytest.mark.parametrize("repo,run_id", [("nope", RUN), (REPO, 0), (REPO, "abc"), (REPO, True)])
def test_bad_arguments_are_input_errors(fake_github, client, repo, run_id):
    with pytest.raises(InputError):
        fetch_workflow_run(client, repo, run_id)
    assert fake_github.requests == []


def test_download_run_logs_zip(fake_github, client):
    three_jobs(fake_github)
    logs = download_run_logs(client, REPO, RUN)
    assert logs == {
        "0_build.txt": "2024-01-01T00:00:00Z building\nok\n",
        "1_test (gpu).txt": "E   AssertionError: 3.1 != 3.2\n",
    }


def test_download_run_logs_nested_names_on_other_host(fake_github, client):
    fake_github.separate_blob_host = True
    fake_github.add_workflow_run(
        REPO, RUN, jobs=[{"name": "build"}],
        run_logs={"build/1_Set up job.txt": "setup\n", "build/2_Run tests.txt": "FAILED\n", "0_build.txt": "all\n"},
    )
    logs = download_run_logs(client, REPO, RUN)
    assert logs == {"build/1_Set up job.txt": "setup\n", "build/2_Run tests.txt": "FAILED\n", "0_build.txt": "all\n"}
    (blob,) = [r for r in fake_github.requests if r.server == "blob"]
    assert "authorization" not in blob.headers


def test_download_run_logs_gone(fake_github, client):
    fake_github.add_workflow_run(REPO, RUN, jobs=[{"name": "build"}], run_logs=410)
    with pytest.raises(GitHubLogsGone) as exc:
        download_run_logs(client, REPO, RUN)
    assert "410" in str(exc.value) and exc.value.exit_code == 1


def test_fetch_job_log_unknown_job(fake_github, client):
    assert fetch_job_log(client, REPO, 12345) is None


def test_list_run_artifacts(fake_github, client):
    fake_github.add_workflow_run(REPO, RUN, jobs=[], artifacts=["bench-results", "logs"])
    arts = list_run_artifacts(client, REPO, RUN)
    assert [a["name"] for a in arts] == ["bench-results", "logs"]
