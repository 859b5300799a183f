"""End to end (#26): a signed `workflow_run` `completed` delivery to `triage serve`;
the fake GitHub serves the run's jobs, logs and an artifact zip with JUnit XML and
lm-eval results; the runs are recorded with their outcomes and metrics, the
statuses change, and one comment is posted."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support.serving import Server, fixture_bytes, query

REPO, PR, RUN = "octo-org/octo-repo", 2, 289782451  # what the fixture payload names
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "results"
METRIC = "gsm8k.exact_match.strict-match"


def write_rules(where: Path) -> None:
    (where / "rules").mkdir(exist_ok=True)
    inv = {"id": "octo-evals", "repo": REPO, "pr": PR, "title": "Octo accuracy drop", "metric": METRIC,
           "gate": 0.92, "match": {"workflow": "test*", "config_from": r"\((.+)\)"}}
    (where / "rules" / "octo.yaml").write_text(yaml.safe_dump({
        "schema_version": 1, "investigation": inv,
        "hypotheses": [{"id": "gpu-b-broken", "title": "Leg B is broken"},
                       {"id": "decode-kernel", "title": "The decode kernel"}],
        "rules": [{"id": "b-passes", "hypothesis": "gpu-b-broken", "when": {"config": "gpu-b", "at_least": "gate"},
                   "then": "rules_out", "because": "gpu-b passes the gate"},
                  {"id": "a-tests-fail", "hypothesis": "decode-kernel", "when": {"config": "gpu-a", "status": "failed"},
                   "then": "confirms", "because": "the decode tests fail on gpu-a"}],
    }))


def test_a_workflow_run_with_artifacts_to_one_comment(fake_github, tmp_path):
    write_rules(tmp_path)
    lm_eval = json.loads((EXAMPLES / "lm-eval.json").read_text())
    fake_github.add_workflow_run(REPO, RUN, name="test", head_branch="master", jobs=[
        {"name": "test (gpu-a)", "conclusion": "failure", "log": "step 1\npytest: 1 failed\n"},
        {"name": "test (gpu-b)", "conclusion": "success", "log": "step 1\neval done\n"},
    ], artifacts={
        "results-gpu-a": {"reports/junit.xml": (EXAMPLES / "junit.xml").read_bytes()},
        "results-gpu-b": {"lm-eval/results_2026-06-26.json": json.dumps(lm_eval)},
    })
    srv = Server(tmp_path, fake_github).start()
    try:
        reply = srv.send(fixture_bytes("workflow_run.completed.with-pull-requests.json"), "workflow_run", "d-1")
        assert reply.status_code == 202
        assert srv.wait_settled(1)[0][1:3] == ("done", 1)
    finally:
        srv.stop()
    got = {c: (s, json.loads(m)) for c, s, m in query(tmp_path, f"select config, status, metrics from run where run_id = '{RUN}'")}
    assert got["gpu-a"][0] == "failed" and got["gpu-a"][1]["fail_rate"] == {"value": 0.5, "n": 4}
    assert got["gpu-a"][1]["failed:tests.test_decode.test_aiter_decode"] == {"value": 1.0, "n": 1}
    assert got["gpu-b"][0] == "passed" and got["gpu-b"][1][METRIC]["n"] == 1319
    assert dict(query(tmp_path, "select id, status from hypothesis")) == {
        "gpu-b-broken": "ruled_out", "decode-kernel": "confirmed"}
    (comment,) = fake_github.comments(REPO, PR)
    assert "<!-- triage:investigation=octo-evals -->" in comment["body"] and str(RUN) in comment["body"]
    assert [c.method for c in fake_github.writes()] == ["POST"]
