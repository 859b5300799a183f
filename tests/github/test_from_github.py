"""`triage add-run --from-github RUN_ID` against the local fake GitHub."""

from __future__ import annotations

import functools
import json

import pytest

import triage.github
from tests.support.actions import PR, REPO, RUN, SHA, rows, stamped


@pytest.fixture
def gh(fake_github, seeded, monkeypatch):
    monkeypatch.setattr(triage.github, "GitHubClient", functools.partial(triage.github.GitHubClient, sleep=lambda s: None))
    return fake_github


def nightly(gh, **kw) -> dict:
    """A workflow run with a setup job and three matrix legs."""
    return gh.add_workflow_run(
        REPO, RUN, head_sha=SHA, head_branch="amd/kimik26-disagg", name="Nightly",
        jobs=[
            {"name": "setup", "conclusion": "success", "log": stamped("checkout", "done")},
            {"name": "nightly (kimik26-fp8-1k1k-1p1d)", "conclusion": "failure",
             "log": stamped(*[f"step {i}" for i in range(30)], "[gsm8k] accuracy=0.881")},
            {"name": "nightly (kimik26-fp8-1k1k-1p1d-aiterdecode)", "conclusion": "success",
             "log": stamped("[gsm8k] accuracy=0.943")},
            {"name": "nightly (kimik26-fp8-1k1k-1p1d-nocudagraph)", "conclusion": "cancelled", "log": 410},
        ],
        **kw,
    )


def test_one_run_per_job(cli, gh, tmp_path):
    nightly(gh)
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN))
    assert r.code == 0, r.err
    assert r.out.splitlines()[:4] == [
        f"recorded run {RUN} (setup): passed",
        f"recorded run {RUN} (nightly (kimik26-fp8-1k1k-1p1d)): failed, gsm8k=0.881/1319",
        f"recorded run {RUN} (nightly (kimik26-fp8-1k1k-1p1d-aiterdecode)): passed, gsm8k=0.943/1319",
        f"recorded run {RUN} (nightly (kimik26-fp8-1k1k-1p1d-nocudagraph)): cancelled",
    ]
    # each job's log went through the investigation's extractors and signatures
    assert "log: gsm8k=0.881/1319 (line 31, gsm8k-accuracy)" in r.err
    assert "log: gsm8k=0.943/1319 (line 1, gsm8k-accuracy)" in r.err
    assert r.err.endswith("nightly (kimik26-fp8-1k1k-1p1d-nocudagraph): the job's log is no longer on GitHub (expired or deleted)\n")
    got = rows(tmp_path)
    assert set(got) == {"setup", "nightly (kimik26-fp8-1k1k-1p1d)", "nightly (kimik26-fp8-1k1k-1p1d-aiterdecode)",
                        "nightly (kimik26-fp8-1k1k-1p1d-nocudagraph)"}
    leg = got["nightly (kimik26-fp8-1k1k-1p1d)"]
    assert json.loads(leg["provenance"]) == {"sha": SHA, "branch": "amd/kimik26-disagg"}
    assert leg["url"].startswith(f"https://github.com/{REPO}/actions/runs/{RUN}/job/")
    assert leg["time"].startswith("2020-01-20 17:44:39")  # the job's completed_at (fixture shape)
    # the excerpt: what was found, with a little context, without GitHub's timestamps
    assert leg["log_excerpt"].splitlines() == ["step 28", "step 29", "[gsm8k] accuracy=0.881"]
    assert got["nightly (kimik26-fp8-1k1k-1p1d-nocudagraph)"]["log_excerpt"] is None


def test_logs_come_through_the_redirect_without_the_token(cli, gh):
    gh.separate_blob_host = True  # that host refuses a request with an Authorization header
    nightly(gh)
    assert cli("add-run", "--pr", str(PR), "--from-github", str(RUN)).code == 0
    log_calls = gh.calls("GET", f"/repos/{REPO}/actions/jobs/*/logs")
    assert len(log_calls) == 4
    blobs = [r for r in gh.requests if r.server == "blob"]
    assert len(blobs) == 3 and all("authorization" not in r.headers for r in blobs)
    assert gh.calls("GET", f"/repos/{REPO}/actions/runs/{RUN}/jobs")[0].query == {"per_page": "100", "filter": "latest"}


def test_config_from_names_and_selects_the_legs(cli, gh, tmp_path):
    nightly(gh)
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN), "--config-from", r"\((.+)\)",
            "--set", "image=latest", "--note", "nightly leg")
    assert r.code == 0, r.err
    got = rows(tmp_path)
    assert sorted(got) == ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-aiterdecode", "kimik26-fp8-1k1k-1p1d-nocudagraph"]
    base = got["kimik26-fp8-1k1k-1p1d"]
    assert json.loads(base["provenance"]) == {"sha": SHA, "branch": "amd/kimik26-disagg", "image": "latest"}
    assert base["note"] == "nightly leg" and base["status"] == "failed"
    # the setup job was skipped: only the three legs' logs were fetched
    assert len(gh.calls("GET", f"/repos/{REPO}/actions/jobs/*/logs")) == 3
    # the legs now count: the report shows them
    report = cli("report", "--pr", str(PR), "--format", "json").out
    assert str(RUN) in {x["run_id"] for x in json.loads(report)["runs"]}


def test_again_updates_the_same_runs(cli, gh, tmp_path):
    nightly(gh)
    assert cli("add-run", "--pr", str(PR), "--from-github", str(RUN)).code == 0
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN))
    runs = [line for line in r.out.splitlines() if not line.startswith("  ")]  # not the status changes
    assert r.code == 0 and len(runs) == 4 and all(line.startswith("updated run") for line in runs)
    assert len(rows(tmp_path)) == 4


def test_jobs_over_several_pages(cli, gh, tmp_path):
    gh.add_workflow_run(REPO, RUN, jobs=[{"name": f"shard {i:03d}", "log": stamped(f"shard {i}")} for i in range(120)])
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN))
    assert r.code == 0, r.err
    assert len(rows(tmp_path)) == 120
    assert len(gh.calls("GET", f"/repos/{REPO}/actions/runs/{RUN}/jobs")) == 2


@pytest.mark.parametrize("args, message", [
    (["--run-id", "1"], "Error: --from-github takes --run-id from GitHub: leave it out"),
    (["--config", "c", "--status", "passed"], "Error: --from-github takes --config, --status from GitHub: leave them out"),
    (["--log", "x.log"], "Error: --from-github takes --log from GitHub"),
    (["--config-from", "(unclosed"], "Error: --config-from '(unclosed': not a regular expression"),
    (["--set", "image"], "Error: --set 'image': expected KEY=VALUE"),
])
def test_bad_input_exit_2_nothing_sent(cli, gh, tmp_path, args, message):
    nightly(gh)
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN), *args)
    assert r.code == 2 and r.err.startswith(message) and len(r.err.splitlines()) == 1
    assert gh.requests == [] and rows(tmp_path) == {}


def test_without_from_github_run_id_and_config_are_needed(cli, gh):
    r = cli("add-run", "--pr", str(PR), "--status", "passed")
    assert r.code == 2 and r.err == "Error: add-run needs --run-id and --config (or --from-github RUN_ID)\n"
    r = cli("add-run", "--pr", str(PR), "--run-id", "1", "--config", "c", "--status", "passed", "--config-from", "x")
    assert r.code == 2 and r.err == "Error: --config-from goes with --from-github\n"


def test_no_matching_job_and_clashing_configs(cli, gh, tmp_path):
    nightly(gh)
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN), "--config-from", "^lint$")
    assert r.code == 2
    assert r.err.startswith(f"Error: nothing to record from workflow run {RUN} in {REPO}: no job matches --config-from '^lint$' (jobs: 'setup', ")
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN), "--config-from", "nightly")
    assert r.code == 2 and "both give the config 'nightly'" in r.err
    assert rows(tmp_path) == {}


def test_run_in_progress_is_refused(cli, gh, tmp_path):
    gh.add_workflow_run(REPO, RUN, status="in_progress", jobs=[{"name": "b", "status": "in_progress"}])
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN))
    assert r.code == 2 and "still in progress" in r.err and rows(tmp_path) == {}


def test_unknown_run_is_a_one_line_error(cli, gh, tmp_path):
    r = cli("add-run", "--pr", str(PR), "--from-github", "123")
    assert r.code == 1
    (line,) = r.err.splitlines()
    assert line.startswith("Error: not found: check the repository name OWNER/NAME and the run id")
    assert gh.token not in r.err


def test_permission_error_says_what_to_grant(cli, gh):
    nightly(gh)
    gh.inject("GET", f"/repos/{REPO}/actions/runs/{RUN}", 403, body={"message": "Resource not accessible by integration"})
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN))
    assert r.code == 1 and "(403)" in r.err and "Resource not accessible by integration" in r.err
