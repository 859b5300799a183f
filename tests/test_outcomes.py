"""Every kind of CI failure (#25): a run's outcome, and the outcomes an
investigation declares its failure (`failure:`, default [failed])."""

from __future__ import annotations

import json

import pytest
import yaml
from pydantic import ValidationError

from triage.rules.engine import Context, Investigation, RunRec, SignatureInfo, evaluate
from triage.rules.schema import RuleFile

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
    from triage.rules.conditions import evaluate_condition
    from triage.rules.records import V
    from triage.rules.schema import Condition

    ctx = Context(bundle(failure, _mixed(), text=RATE, metric="fail_rate"))
    res = evaluate_condition(Condition(config="main", count=5), ctx, None)
    assert res.value is (V.TRUE if n >= 5 else V.UNKNOWN)  # below its count: can't tell, never false
    assert res.short == [f"{n} valid runs {'≥' if n >= 5 else 'of'} 5"]
    res = evaluate_condition(Condition(config="main", distinct="runner", at_least=5), ctx, None)
    assert res.value is (V.TRUE if n >= 5 else V.UNKNOWN)


def test_a_status_condition_names_outcomes_and_error_is_infra():
    from triage.rules.conditions import evaluate_condition
    from triage.rules.records import V
    from triage.rules.schema import Condition

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

    from triage.rules.schema import STATUSES

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

