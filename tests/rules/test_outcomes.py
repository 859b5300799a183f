"""Every kind of CI failure (#25): a run's outcome, and the outcomes an
investigation declares its failure (`failure:`, default [failed])."""

from __future__ import annotations

import json

import pytest
import yaml
from pydantic import ValidationError

from triage.rules.engine.evaluate import Context, Investigation, RunRec, SignatureInfo, evaluate
from triage.rules.language.schema import RuleFile

BISECT = """
hypotheses:
  - {id: c1, title: c1 broke it}
bisects:
  - id: commits
    axis: sha
    points: [c0, c1]
    good_when: {status: passed}
rules:
  - {id: found, hypothesis: c1, when: {bisect: commits, first_bad: c1}, then: confirmed}
  - {id: counted, hypothesis: c1, when: {count: 3}, then: supports}
"""


def bundle(failure: str = "", runs=(), signatures=None, text: str = BISECT, metric: str = "acc") -> Investigation:
    """A one-investigation rule file; ``failure``: its `failure:` line (none: the default)."""
    head = {"id": "t", "repo": "o/r", "pr": 1, "title": "T", "metric": metric} | (yaml.safe_load(failure) or {})
    spec = RuleFile.model_validate({"schema_version": 1, "investigation": head, **yaml.safe_load(text)})
    return Investigation(spec.investigation, spec.hypotheses, spec.recipes, spec.rules, spec.evidence,
                         spec.bisects, list(runs), signatures or {})


def at(run_id: str, sha: str, status: str, **kw) -> RunRec:
    return RunRec(run_id, "ci", status, provenance={"sha": sha}, **kw)


def bisect_of(ev):
    (b,) = ev.bisects
    return b


# -- repro 1: a timeout cannot be the failure ------------------------------------


@pytest.mark.parametrize("status", ["timeout", "error", "crashed", "oom", "infra", "cancelled"])
def test_an_undeclared_outcome_skips_its_point(status):
    runs = [at("1", "c0", "passed"), at("2", "c1", status, note="job timed out")]
    b = bisect_of(evaluate(bundle(runs=runs)))
    assert b.first_bad is None
    assert b.ends == "good end c0 is good; bad end c1 is skipped (no valid run)"


@pytest.mark.parametrize("status, declared", [
    ("timeout", "[failed, timeout]"), ("crashed", "[failed, crashed]"), ("oom", "[failed, oom]"),
    ("infra", "[failed, infra]"), ("cancelled", "[cancelled]"),
    ("error", "[failed, infra]"), ("infra", "[failed, error]"),  # `error` is the older word for infra
])
def test_a_declared_outcome_is_a_bad_result(status, declared):
    runs = [at("1", "c0", "passed"), at("2", "c1", status, note="job timed out")]
    ev = evaluate(bundle(f"failure: {declared}", runs))
    b = bisect_of(ev)
    assert (b.last_good, b.first_bad, b.done) == ("c0", "c1", True)
    assert b.ends == "good end c0 is good; bad end c1 is bad"
    assert ev.statuses["c1"] == "confirmed"


def test_a_timeout_is_not_an_oom():
    runs = [at("1", "c0", "passed"), at("2", "c1", "oom")]
    b = bisect_of(evaluate(bundle("failure: [failed, timeout]", runs)))
    assert b.first_bad is None and "bad end c1 is skipped" in b.ends


def test_failed_is_no_result_when_the_failure_is_another_outcome():
    runs = [at("1", "c0", "passed"), at("2", "c1", "failed", note="an unrelated assert")]
    ctx = Context(bundle("failure: [timeout]", runs))
    assert not ctx.valid(runs[1])
    assert ctx.invalid_reason(runs[1]) == "failed, not a declared failure (an unrelated assert)"
    b = bisect_of(evaluate(bundle("failure: [timeout]", runs)))
    assert b.first_bad is None


# -- counting: fail_rate, count, distinct, status ----------------------------------

RATE = """
hypotheses:
  - {id: h, title: H}
"""


def _mixed() -> list[RunRec]:
    return [RunRec(str(i), "main", s, provenance={"runner": f"r{i}"})
            for i, s in enumerate(["passed", "passed", "failed", "timeout", "oom", "infra", "cancelled"])]


@pytest.mark.parametrize("failure, counts", [
    ("", (1, 3)), ("failure: [failed, timeout]", (2, 4)), ("failure: [failed, timeout, oom]", (3, 5)),
    ("failure: [timeout, oom]", (2, 4)),
])
def test_fail_rate_counts_the_declared_outcomes(failure, counts):
    ctx = Context(bundle(failure, _mixed(), text=RATE, metric="fail_rate"))
    m = ctx.measure([r for r in ctx.runs if ctx.valid(r)], "fail_rate")
    assert (round(m.value * m.n), m.n) == counts


@pytest.mark.parametrize("failure, n", [("", 3), ("failure: [failed, timeout, oom]", 5)])
def test_count_and_distinct_count_the_declared_outcomes(failure, n):
    from triage.rules.decisions.conditions import evaluate_condition
    from triage.rules.engine.records import V
    from triage.rules.language.schema import Condition

    ctx = Context(bundle(failure, _mixed(), text=RATE, metric="fail_rate"))
    res = evaluate_condition(Condition(config="main", count=5), ctx, None)
    assert res.value is (V.TRUE if n >= 5 else V.UNKNOWN)  # below its count: can't tell, never false
    assert res.short == [f"{n} valid runs {'≥' if n >= 5 else 'of'} 5"]
    res = evaluate_condition(Condition(config="main", distinct="runner", at_least=5), ctx, None)
    assert res.value is (V.TRUE if n >= 5 else V.UNKNOWN)


def test_a_status_condition_names_outcomes_and_error_is_infra():
    from triage.rules.decisions.conditions import evaluate_condition
    from triage.rules.engine.records import V
    from triage.rules.language.schema import Condition

    runs = _mixed() + [RunRec("9", "main", "error")]
    ctx = Context(bundle("failure: [failed, timeout]", runs, text=RATE, metric="fail_rate"))
    timeouts = evaluate_condition(Condition(config="main", status="timeout", count=1), ctx, None)
    assert timeouts.value is V.TRUE and timeouts.runs == ["3/main"]
    infra = evaluate_condition(Condition(config="main", status="error", count=2), ctx, None)
    assert infra.value is V.TRUE and infra.runs == ["5/main", "9/main"]  # asked for by name: they count


def test_a_timed_out_run_keeps_the_numbers_it_printed():
    text = BISECT.replace("good_when: {status: passed}", "good_when: {at_least: 0.9}")
    runs = [at("1", "c0", "passed", metrics={"acc": (0.95, None)}),
            at("2", "c1", "timeout", metrics={"acc": (0.61, None)}, note="hung after the eval")]
    b = bisect_of(evaluate(bundle("failure: [failed, timeout]", runs, text=text)))
    assert b.first_bad == "c1" and b.points[1].value == 0.61
    b = bisect_of(evaluate(bundle("", runs, text=text)))
    assert b.first_bad is None and b.points[1].state == "skipped"


# -- known failures that name an outcome ------------------------------------------

OOM = {"oom-killed": SignatureInfo("oom-killed", "oom", "killed for memory", "", "oom"),
       "runner-lost": SignatureInfo("runner-lost", "infra", "the runner went away", "re-run it", None)}


def test_a_signature_with_a_declared_outcome_makes_its_runs_results():
    runs = [at("1", "c0", "passed"), at("2", "c1", "oom", signature="oom-killed")]
    b = bisect_of(evaluate(bundle("failure: [failed, oom]", runs, OOM)))
    assert b.first_bad == "c1"
    b = bisect_of(evaluate(bundle("", runs, OOM)))  # undeclared: a known failure is no result
    assert b.first_bad is None and "oom, known failure oom-killed (oom)" in b.points[1].reason


def test_a_signature_without_an_outcome_stays_no_result_even_when_its_status_is_declared():
    runs = [at("1", "c0", "passed"), at("2", "c1", "infra", signature="runner-lost")]
    b = bisect_of(evaluate(bundle("failure: [failed, infra]", runs, OOM)))
    assert b.first_bad is None and "known failure runner-lost" in b.points[1].reason


def test_valid_is_invalid_reason_none_for_every_outcome_and_declaration():
    from itertools import product

    from triage.rules.language.schema import STATUSES

    for failure in ("", "failure: [timeout]", "failure: [failed, oom, infra]"):
        ctx = Context(bundle(failure, signatures=OOM))
        for status, sig in product(STATUSES, (None, "oom-killed", "runner-lost", "unknown")):
            r = RunRec("1", "c", status, signature=sig)
            assert ctx.valid(r) == (ctx.invalid_reason(r) is None), (failure, r)


# -- the rule file ------------------------------------------------------------------


@pytest.mark.parametrize("failure, message", [
    ("failure: [passed]", "passed is not one"),
    ("failure: [failed, hung]", "unknown status 'hung'"),
    ("failure: []", "at least 1 item"),
])
def test_a_bad_failure_list_is_refused(failure, message):
    with pytest.raises(ValidationError, match=message):
        bundle(failure)


def test_a_signature_outcome_must_be_an_outcome():
    base = {"schema_version": 1, "signatures": [{"id": "s", "text": "Killed", "class": "oom", "outcome": "dead"}]}
    with pytest.raises(ValidationError, match="unknown status 'dead'"):
        RuleFile.model_validate(base)
    base["signatures"][0]["outcome"] = "passed"
    with pytest.raises(ValidationError, match="passed is not one"):
        RuleFile.model_validate(base)


# -- recording outcomes ---------------------------------------------------------------


def _runs(cli) -> dict:
    r = cli("runs", "list", "--pr", "30433", "--format", "json")
    assert r.code == 0, r.err
    return {x["run_id"]: x for x in json.loads(r.out)}


def test_add_run_records_each_outcome_and_reads_error_as_infra(cli, rules_dir):
    base = ["add-run", "--pr", "30433", "--config", "kimik26-fp8-1k1k-1p1d"]
    for run_id, status in (("1", "timeout"), ("2", "oom"), ("3", "infra"), ("4", "error")):
        r = cli(*base, "--run-id", run_id, "--status", status, "--metric", "gsm8k=0.61/1319")
        assert r.code == 0, r.err
    runs = _runs(cli)
    assert [runs[k]["status"] for k in "1234"] == ["timeout", "oom", "infra", "infra"]
    assert runs["1"]["metrics"] == {"gsm8k": {"value": 0.61, "n": 1319}}  # the numbers it printed are kept
    r = cli(*base, "--run-id", "5", "--status", "hung")
    assert r.code == 2 and r.out == ""
    assert r.err.strip().splitlines() == [
        "Error: --status 'hung': expected one of passed, failed, timeout, oom, crashed, cancelled, infra"]
    assert "5" not in _runs(cli)


def test_an_import_file_with_the_older_error_reads_it_as_infra(cli, rules_dir, tmp_path):
    lines = [{"investigation": "kimik26-disagg", "run_id": str(i), "config": "c", "status": s, "note": "lost runner"}
             for i, s in enumerate(["error", "timeout", "passed"])]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("import", str(path))
    assert r.code == 0, r.err
    runs = _runs(cli)
    assert [(runs[k]["status"]) for k in "012"] == ["infra", "timeout", "passed"]
    r = cli("export", "--pr", "30433")
    assert '"status": "error"' not in r.out and r.out.count('"status": "infra"') == 1


def test_the_migration_reads_error_as_infra_and_keeps_the_rest(cli, rules_dir, tmp_path):
    import sqlite3

    from tests.support.schema1 import first_schema_sqlite

    path = tmp_path / "kb.sqlite"
    first_schema_sqlite(path)
    con = sqlite3.connect(path)
    con.execute("UPDATE run SET status = 'error', note = 'job timed out'")
    con.commit()
    con.close()
    assert cli("db", "upgrade").code == 0
    (row,) = sqlite3.connect(path).execute("SELECT status, note, metrics FROM run").fetchall()
    assert row == ("infra", "job timed out", '{"gsm8k": {"value": 0.879, "n": 1319}}')


# -- outcomes from GitHub and from known failures ----------------------------------------


@pytest.fixture
def github(fake_github, seeded, monkeypatch):
    import functools

    import triage.github

    monkeypatch.setattr(triage.github, "GitHubClient",
                        functools.partial(triage.github.GitHubClient, sleep=lambda s: None))
    return fake_github


def test_github_conclusions_and_signatures_give_the_outcome(cli, github, tmp_path):
    from tests.support.actions import PR, REPO, RUN, SHA, rows, stamped

    github.add_workflow_run(REPO, RUN, head_sha=SHA, head_branch="b", name="Nightly", jobs=[
        {"name": "hung", "conclusion": "timed_out", "log": stamped("[gsm8k] accuracy=0.611", "waiting...")},
        {"name": "killed", "conclusion": "failure",
         "log": stamped("loading weights", "##[error]Process completed with exit code 137.")},
        {"name": "lost", "conclusion": "failure",
         "log": stamped("step 1", "##[error]The runner has received a shutdown signal. This can happen when")},
        {"name": "plain", "conclusion": "failure", "log": stamped("[gsm8k] accuracy=0.881")},
    ])
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN))
    assert r.code == 0, r.err
    got = rows(tmp_path)
    assert {c: (x["status"], x["signature_id"]) for c, x in got.items()} == {
        "hung": ("timeout", None), "killed": ("oom", "oom-killed"), "lost": ("infra", "runner-shutdown"),
        "plain": ("failed", None)}
    assert json.loads(got["hung"]["metrics"]) == {"gsm8k": {"value": 0.611, "n": 1319}}  # printed before it hung
    assert "log: status oom (from known failure oom-killed)" in r.err


def test_the_users_status_wins_over_a_signatures_outcome(cli, seeded, tmp_path):
    log = tmp_path / "job.log"
    log.write_text("loading weights\n##[error]Process completed with exit code 137.\n")
    base = ["add-run", "--pr", "30433", "--config", "kimik26-fp8-1k1k-1p1d", "--log", str(log)]
    r = cli(*base, "--run-id", "1", "--status", "failed")
    assert r.code == 0, r.err
    assert "log: status oom (from known failure oom-killed) (not used: --status given)" in r.err
    r = cli(*base, "--run-id", "2")
    assert r.code == 0, r.err
    assert "log: status oom (from known failure oom-killed)" in r.err
    runs = _runs(cli)
    assert (runs["1"]["status"], runs["2"]["status"]) == ("failed", "oom")
