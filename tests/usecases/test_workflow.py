"""The documented GitHub Actions workflow: its shape, and its steps run for real.

The steps' shell scripts are run with bash, as Actions runs them, with their
``env:`` expressions filled from a webhook payload of the fixtures, the real
``triage`` on PATH and the local fake GitHub as the API.  ``uses:`` steps and
the installation are skipped (the test's directory is the checkout).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.support.fakegithub import fixtures_dir

WORKFLOW = ROOT / "examples" / "github-actions" / "triage.yml"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@pytest.fixture(scope="module")
def workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def steps(workflow: dict):
    for job_id, job in workflow["jobs"].items():
        for step in job["steps"]:
            yield job_id, step


def command_lines(script: str) -> list[list[str]]:
    """The `triage …` command lines of a shell script, as words."""
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        line = line.split(" #", 1)[0].strip()
        for part in re.split(r"\s*(?:\|\||&&|;)\s*", line):
            if part.startswith("triage "):
                out.append(part.split())
    return out


# --------------------------------------------------------------------------
# The shape


def test_trigger_is_a_completed_workflow_run(workflow):
    trigger = workflow["on"]["workflow_run"]
    assert trigger["types"] == ["completed"]
    assert isinstance(trigger["workflows"], list) and trigger["workflows"]


def test_permissions_are_exactly_what_each_job_needs(workflow):
    assert workflow["permissions"] == {}  # nothing by default
    assert workflow["jobs"]["record"]["permissions"] == {"actions": "read", "contents": "read"}
    assert workflow["jobs"]["post"]["permissions"] == {"contents": "read", "pull-requests": "write"}
    # the opt-in autopilot job alone may start workflows
    autopilot = workflow["jobs"]["autopilot"]
    assert autopilot["permissions"] == {"actions": "write", "contents": "read", "pull-requests": "read"}
    assert autopilot["if"] == "vars.TRIAGE_AUTOPILOT != ''" and autopilot["needs"] == ["record", "post"]


def test_actions_are_pinned_to_commit_shas(workflow):
    used = [step["uses"] for _, step in steps(workflow) if "uses" in step]
    assert used and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in used), used


def test_every_job_has_a_timeout_and_triage_is_pinned(workflow):
    assert all(0 < job["timeout-minutes"] <= 30 for job in workflow["jobs"].values())
    install = workflow["env"]["TRIAGE_INSTALL"]
    assert re.search(r"(@v\d+\.\d+\.\d+|==\d+\.\d+\.\d+)$", install), install


def test_event_values_reach_scripts_only_through_env(workflow):
    for _, step in steps(workflow):
        if "run" in step:
            assert "${{" not in step["run"], step.get("name")


def test_the_knowledge_base_and_the_token_come_from_secrets_only_where_needed(workflow):
    assert "TRIAGE_DB" not in workflow["env"] and all("env" not in job for job in workflow["jobs"].values())
    for _, step in steps(workflow):
        commands = {words[1] for words in command_lines(step.get("run", ""))}
        if commands & {"add-run", "post", "autopilot"}:
            assert step["env"]["GITHUB_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"
        if commands & {"add-run", "post", "report", "autopilot"}:
            assert step["env"]["TRIAGE_DB"] == "${{ secrets.TRIAGE_DB }}"
        else:
            assert "TRIAGE_DB" not in step.get("env", {}), step.get("name")


def test_posts_wait_for_each_other_per_pr(workflow):
    post = workflow["jobs"]["post"]
    assert post["needs"] == "record"
    assert post["concurrency"] == {"group": "triage-post-${{ needs.record.outputs.pr }}", "cancel-in-progress": False}


def test_every_triage_command_it_runs_exists_with_its_options(workflow, cli):
    seen = set()
    for _, step in steps(workflow):
        for words in command_lines(step.get("run", "")):
            command = [w for w in words[1:3] if not w.startswith(("-", '"', "$"))]
            options = {m for w in words for m in re.findall(r"--[a-z][a-z-]*", w)}
            r = cli(*command, "--help")
            assert r.code == 0, words
            for option in options:
                assert re.search(rf"(?<![\w-]){option}(?![\w-])", r.out), (command, option)
            seen.add((command[0], frozenset(options)))
    assert ("add-run", frozenset({"--pr", "--from-github", "--config-from"})) in seen
    assert ("post", frozenset({"--pr"})) in seen
    assert ("autopilot", frozenset({"--pr"})) in seen


# --------------------------------------------------------------------------
# The steps, run


REPO, PR = "octo-org/octo-repo", 2  # what the fixture payload names


def payload(with_prs: bool) -> dict:
    name = "workflow_run.completed.with-pull-requests.json" if with_prs else "workflow_run.completed.json"
    return json.loads((fixtures_dir() / "webhooks" / name).read_text(encoding="utf-8"))


class Runner:
    """Runs a job's steps as Actions would, from a context of expression values."""

    def __init__(self, workflow: dict, where: Path, context: dict, base_env: dict) -> None:
        self.workflow, self.where, self.context, self.base_env = workflow, where, context, base_env
        self.logs: list[str] = []

    def value(self, expr: str) -> str:
        value = self.context[expr]  # an unknown expression fails the test
        return "" if value is None else str(value)

    def fill(self, text: str) -> str:
        return EXPR.sub(lambda m: self.value(m.group(1)), str(text))

    def job(self, job_id: str) -> dict[str, str]:
        """Run the job (if its `if:` holds); return its outputs."""
        job = self.workflow["jobs"][job_id]
        if "if" in job and not self.holds(job["if"]):
            return {}
        for step in job["steps"]:
            if "uses" in step or "pip install" in step.get("run", ""):
                continue  # the checkout is this directory; triage is installed
            if "if" in step and not self.holds(step["if"]):
                continue
            got = self.step(step)
            if "id" in step:
                self.context.update({f"steps.{step['id']}.outputs.{k}": v for k, v in got.items()})
        # an output of a step that did not run is empty, as in Actions
        outputs = {k: EXPR.sub(lambda m: str(self.context.get(m.group(1)) or ""), v)
                   for k, v in job.get("outputs", {}).items()}
        self.context = {k: v for k, v in self.context.items() if not k.startswith("steps.")}
        self.context.update({f"needs.{job_id}.outputs.{k}": v for k, v in outputs.items()})
        return outputs

    def holds(self, condition: str) -> bool:
        m = re.fullmatch(r"([\w.\[\]]+) != ''", condition.strip())
        assert m, f"this test reads only `X != ''` conditions, not {condition!r}"
        return str(self.context.get(m.group(1)) or "") != ""

    def step(self, step: dict) -> dict[str, str]:
        out_file = self.where / "github_output"
        out_file.write_text("")
        env = {**self.base_env,
               **{k: self.fill(v) for k, v in self.workflow.get("env", {}).items()},
               **{k: self.fill(v) for k, v in step.get("env", {}).items()},
               "GITHUB_OUTPUT": str(out_file)}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              cwd=self.where, env=env, capture_output=True, text=True, timeout=120)
        self.logs.append(proc.stdout + proc.stderr)
        assert proc.returncode == 0, f"step {step.get('name')!r} failed:\n{proc.stdout}{proc.stderr}"
        return dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)


@pytest.fixture
def actions(workflow, fake_github, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "octo.yaml").write_text(yaml.safe_dump({
        "schema_version": 1,
        "investigation": {"id": "octo-drop", "repo": REPO, "pr": PR, "title": "Octo accuracy drop", "metric": "acc",
                          "gate": 0.9},
        "hypotheses": [{"id": "flaky", "title": "A flaky leg"}],
    }))
    base_env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_API_URL": fake_github.url,
        "COLUMNS": "110",
    }

    def make(event: dict, variables: dict | None = None) -> Runner:
        run = event["workflow_run"]
        prs = run["pull_requests"]
        context = {
            "github.event.workflow_run.id": run["id"],
            "github.event.workflow_run.pull_requests[0].number": prs[0]["number"] if prs else None,
            "secrets.GITHUB_TOKEN": fake_github.token,
            "secrets.TRIAGE_DB": f"sqlite:///{tmp_path / 'kb.sqlite'}",
            "vars.TRIAGE_PR": (variables or {}).get("TRIAGE_PR"),
            "vars.TRIAGE_CONFIG_FROM": (variables or {}).get("TRIAGE_CONFIG_FROM"),
            "vars.TRIAGE_AUTOPILOT": (variables or {}).get("TRIAGE_AUTOPILOT"),
        }
        fake_github.add_workflow_run(REPO, run["id"], jobs=[
            {"name": "test (gpu-a)", "conclusion": "success", "log": "ok\n"},
            {"name": "test (gpu-b)", "conclusion": "failure", "log": "FAILED\n"},
        ])
        return Runner(workflow, tmp_path, context, base_env)

    return make


def recorded(tmp_path: Path) -> list[tuple]:
    import sqlite3

    path = tmp_path / "kb.sqlite"
    if not path.exists():
        return []
    return sqlite3.connect(path).execute("select run_id, config, status from run order by config").fetchall()


def test_a_run_of_a_pr_is_recorded_and_posted(actions, fake_github, tmp_path):
    event = payload(with_prs=True)
    runner = actions(event, {"TRIAGE_CONFIG_FROM": r"\((.+)\)"})
    assert runner.job("record") == {"pr": str(PR)}
    assert recorded(tmp_path) == [(str(event["workflow_run"]["id"]), "gpu-a", "passed"),
                                  (str(event["workflow_run"]["id"]), "gpu-b", "failed")]
    runner.job("post")
    (comment,) = fake_github.comments(REPO, PR)
    assert comment["body"].rstrip().endswith("<!-- triage:investigation=octo-drop -->")
    assert runner.logs[-1].startswith(f"created {comment['html_url']}")
    assert all(fake_github.token not in log for log in runner.logs)


def test_autopilot_runs_after_post_only_when_asked_for(actions, fake_github, tmp_path):
    runner = actions(payload(with_prs=True))
    runner.job("record")
    runner.job("post")
    assert runner.job("autopilot") == {} and fake_github.calls("GET", "/repos/*/pulls/*") == []
    fake_github.add_pull(REPO, PR)
    runner = actions(payload(with_prs=True), {"TRIAGE_AUTOPILOT": "on"})
    runner.job("record")
    runner.job("post")
    runner.job("autopilot")
    assert runner.logs[-1].startswith("autopilot is not enabled for octo-drop: no autopilot: in the rule file and "
                                      f"no triage:autopilot label on {REPO}#{PR}")
    assert fake_github.calls("POST", "/repos/*/actions/workflows/*") == []


def test_a_run_of_no_pr_does_nothing(actions, fake_github, tmp_path):
    runner = actions(payload(with_prs=False))
    assert runner.job("record") == {"pr": ""}
    assert "::notice::this run belongs to no open PR" in runner.logs[0]
    assert runner.job("post") == {}
    assert fake_github.requests == [] and recorded(tmp_path) == []


def test_a_run_of_no_pr_goes_to_triage_pr(actions, fake_github, tmp_path):
    runner = actions(payload(with_prs=False), {"TRIAGE_PR": str(PR)})
    assert runner.job("record") == {"pr": str(PR)}
    assert [c for _, c, _ in recorded(tmp_path)] == ["test (gpu-a)", "test (gpu-b)"]


def test_a_pr_without_an_investigation_does_nothing(actions, fake_github, tmp_path):
    runner = actions(payload(with_prs=False), {"TRIAGE_PR": "3"})
    assert runner.job("record") == {"pr": ""}
    assert "::notice::no investigation for PR #3" in runner.logs[-1]
    assert fake_github.requests == [] and recorded(tmp_path) == []


def test_a_broken_rule_file_fails_the_job(actions, tmp_path):
    runner = actions(payload(with_prs=True))
    (tmp_path / "rules" / "broken.yaml").write_text("schema_version: 1\nhypotheses: [\n")
    with pytest.raises(AssertionError, match="Record the run's jobs\" failed:\n.*rules/broken.yaml:3:1: YAML syntax"):
        runner.job("record")


def test_command_lines_parser():
    script = 'a && triage add-run --pr "$PR" \\\n  --from-github "$RUN_ID"  # c\ntriage post --pr 1 || true\n'
    assert command_lines(script) == [["triage", "add-run", "--pr", '"$PR"', "--from-github", '"$RUN_ID"'],
                                     ["triage", "post", "--pr", "1"]]
