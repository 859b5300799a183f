"""Issue 25: references say which runs they mean; bisect points do not feed them."""

from __future__ import annotations

import textwrap

import yaml

from triage.rules.engine.context import Context
from triage.rules.engine.evaluate import RunRec, evaluate
from triage.rules.language.schema import RuleFile
from tests.support.references import inv

NIGHTLY = """
schema_version: 1
investigation:
  id: n
  repo: o/r
  pr: 1
  title: compile time
  metric: wall_s
  direction: lower
  metrics: {wall_s: {noise: 2%}}
  base: nightly
  references:
    good: {value: 120}
    bad: {config: nightly}
hypotheses:
  - {id: h, title: H}
recipes:
  - {id: fix, base: nightly, tests: [h], predicts: {h: recovers}}
bisects:
  - id: builds
    axis: build
    config: nightly
    points: [n0601, n0603, n0605, n0608]
    good_when: {recovers: true}
"""


def run(run_id: str, value: float, config: str = "nightly", time: str | None = None, **prov) -> RunRec:
    return RunRec(run_id=run_id, config=config, status="failed", metrics={"wall_s": (value, None)},
                  provenance=prov, time=time)


RUNS = [run("a", 170.0, time="2026-06-09"), run("b", 171.0, time="2026-06-10"),
        run("p1", 120.0, build="n0601"), run("p3", 121.0, build="n0603"), run("p5", 119.0, build="n0605"),
        run("p8", 170.0, build="n0608")]


def test_bisect_points_under_the_referenced_config_do_not_feed_it():
    ref, label = Context(inv(NIGHTLY, RUNS)).refs["bad"]
    assert ref is not None and ref.value == 170.5 and label == "bad 170.5 (×2)"
    ev = evaluate(inv(NIGHTLY, RUNS))
    (b,) = ev.bisects
    assert b.first_bad == "n0608"


def test_a_reference_filtered_by_provenance():
    text = NIGHTLY.replace("bad: {config: nightly}", "bad: {config: nightly, where: {build: n0608}}")
    ref, label = Context(inv(text, RUNS)).refs["bad"]
    assert ref is not None and ref.value == 170.0 and label == "bad 170.0"


def test_the_newest_run_of_a_config():
    text = NIGHTLY.replace("bad: {config: nightly}", "bad: {config: nightly, newest: true}")
    ref, label = Context(inv(text, RUNS)).refs["bad"]
    assert ref is not None and ref.value == 171.0 and label == "bad 171.0"


def test_a_reference_that_pools_disagreeing_runs_warns_once_naming_them():
    text = NIGHTLY.split("bisects:")[0]
    ev = evaluate(inv(text, RUNS))
    pooled = [w.message for w in ev.warnings if w.message.startswith("reference bad pools")]
    assert len(pooled) == 1
    assert "6 runs" in pooled[0] and "a 171.0" not in pooled[0] and "b 171.0" in pooled[0] and "p5 119.0" in pooled[0]
    assert not [w for w in evaluate(inv(NIGHTLY, RUNS)).warnings if w.message.startswith("reference bad pools")]


def test_where_names_the_axis_to_take_bisect_points(tmp_path):
    text = NIGHTLY.replace("bad: {config: nightly}", "bad: {config: nightly, where: {build: [n0605, n0608]}}")
    ref, label = Context(inv(text, RUNS)).refs["bad"]
    assert ref is not None and ref.repeats == (119.0, 170.0)


def test_an_unknown_reference_key_is_one_problem_not_six(cli, tmp_path):
    path = tmp_path / "n.yaml"
    path.write_text(textwrap.dedent(NIGHTLY).replace("bad: {config: nightly}", "bad: {config: nightly, provenance: {build: n0608}}"))
    r = cli("check", str(path))
    assert r.code == 2
    problems = [line for line in (r.out + r.err).splitlines() if f"{path}:" in line]
    assert len(problems) == 1 and "unknown key 'provenance'" in problems[0]
    assert "needs both" not in r.out + r.err


def test_where_and_newest_go_with_config():
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="where and newest go with config"):
        RuleFile.model_validate(yaml.safe_load(textwrap.dedent(NIGHTLY).replace("good: {value: 120}", "good: {value: 120, newest: true}")))


def test_the_chart_pools_a_config_and_each_bisect_point_apart():
    from triage.render.pictures import metric_series

    runs = [{"run_id": r.run_id, "config": r.config, "short": r.config, "valid": True,
             "metrics": {"wall_s": {"value": r.metrics["wall_s"][0]}}} for r in RUNS]
    points = [{"label": p, "runs": [{"run_id": r.run_id, "config": r.config} for r in RUNS
                                    if r.provenance.get("build") == p]} for p in ("n0601", "n0603", "n0605", "n0608")]
    model = {"investigation": {"metric": "wall_s", "gate": None, "direction": "lower"}, "runs": runs,
             "references": {}, "bisects": [{"id": "builds", "points": points}]}
    bars = {b["label"]: b["value"] for b in metric_series(model)["bars"]}
    assert bars == {"nightly ×2 170.0–171.0": 170.5, "nightly @ n0601": 120.0, "nightly @ n0603": 121.0,
                    "nightly @ n0605": 119.0, "nightly @ n0608": 170.0}
