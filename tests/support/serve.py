"""`triage serve` as a subprocess with the fake GitHub: the investigation, its runs, the server."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.serving import SECRET, Server, query


REPO, PR, RUN = "octo-org/octo-repo", 2, 289782451  # what the fixture payloads name


WITH_PR = "workflow_run.completed.with-pull-requests.json"


def write_rules(where: Path, **match) -> None:
    rules = where / "rules"
    rules.mkdir(exist_ok=True)
    inv = {"id": "octo-drop", "repo": REPO, "pr": PR, "title": "Octo <script>alert(1)</script> accuracy drop",
           "metric": "accuracy", "gate": 0.9, "match": {"workflow": "test*", "config_from": r"\((.+)\)", **match}}
    (rules / "octo.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "investigation": inv,
        "hypotheses": [{"id": "flaky", "title": "A flaky leg"}, {"id": "gpu-b", "title": "Leg <b>B</b> is broken"}],
    }))


def add_run(fake, run_id: int, a: float = 0.85, b: float = 0.95) -> None:
    fake.add_workflow_run(REPO, run_id, name="test", head_branch="master", jobs=[
        {"name": "test (gpu-a)", "conclusion": "failure", "log": f"step 1\nAccuracy: {a}\n"},
        {"name": "test (gpu-b)", "conclusion": "success", "log": f"Accuracy: {b}\n"},
        {"name": "lint", "conclusion": "success", "log": "ok\n"},
    ])


def runs(where: Path) -> list[tuple]:
    return query(where, "select run_id, config, status from run order by run_id, config")


@pytest.fixture
def server(fake_github, tmp_path):
    write_rules(tmp_path)
    started: list[Server] = []

    def start(*args: str, **kw) -> Server:
        s = Server(tmp_path, fake_github, *args, **kw).start()
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
        assert SECRET not in s.log() and fake_github.token not in s.log()
