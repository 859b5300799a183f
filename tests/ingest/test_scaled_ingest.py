"""Issue 24, item 8: a percentage given with its n is a proportion on the metric's scale.

With ``metrics: {top1: {scale: 100}}`` a Top-1 of 92 on 511 samples is
``top1=92/511``: ``add-run``, ``import`` (JSON Lines and CSV) and the rule
tests take it, and still refuse a value beyond the scale."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

RULES = """\
schema_version: 1
investigation:
  id: t
  repo: o/r
  pr: 1
  title: top-1
  metric: top1
  metrics: {top1: {scale: 100}}
  references:
    good: {value: 92, n: 511}
    bad: {value: 70, n: 511}
hypotheses:
  - {id: h, title: H}
recipes:
  - {id: c, base: main, tests: [h], predicts: {h: recovers}}
"""


@pytest.fixture
def scaled(tmp_path: Path) -> Path:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "t.yaml").write_text(RULES)
    return tmp_path


def _metrics(tmp_path: Path) -> list[dict]:
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    return [json.loads(m) for (m,) in con.execute("select metrics from run order by pk")]


def test_add_run_takes_a_percentage_with_its_n(cli, scaled):
    r = cli("add-run", "--pr", "1", "--run-id", "1", "--config", "c", "--metric", "top1=92/511", "--status", "passed")
    assert r.code == 0, r.err
    assert _metrics(scaled) == [{"top1": {"value": 92.0, "n": 511}}]
    r = cli("add-run", "--pr", "1", "--run-id", "2", "--config", "c", "--metric", "top1=91,92.5/511",
            "--status", "passed")
    assert r.code == 0, r.err
    assert _metrics(scaled)[1:] == [{"top1": {"value": 91.0, "n": 511}}, {"top1": {"value": 92.5, "n": 511}}]


@pytest.mark.parametrize("metric, message", [
    ("top1=101/511", "--metric 'top1=101/511': a proportion (given with n) must lie in [0, 100], got 101.0"),
    ("top1=-1/511", "--metric 'top1=-1/511': a proportion (given with n) must lie in [0, 100], got -1.0"),
    ("acc=1.5/511", "--metric 'acc=1.5/511': a proportion (given with n) must lie in [0, 1], got 1.5"),
])
def test_add_run_still_refuses_a_value_beyond_the_scale(cli, scaled, metric, message):
    r = cli("add-run", "--pr", "1", "--run-id", "1", "--config", "c", "--metric", metric, "--status", "passed")
    assert r.code == 2 and message in r.err, r.err
    assert not (scaled / "kb.sqlite").exists() or _metrics(scaled) == []


def _records(*values: float, investigation: bool = True) -> list[dict]:
    named = {"investigation": "t"} if investigation else {}
    return [named | {"run_id": str(i), "config": "c", "status": "passed", "metrics": {"top1": {"value": v, "n": 511}}}
            for i, v in enumerate(values, 1)]


def _csv(records: list[dict]) -> str:
    head = "investigation,run_id,config,status,metric.top1,metric.top1/n\n"
    return head + "".join(f"t,{r['run_id']},c,passed,{r['metrics']['top1']['value']},511\n" for r in records)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_import_takes_percentages_with_their_n(cli, scaled, fmt):
    records = _records(92.0, 91.0, 0.5)
    path = scaled / f"runs.{fmt}"
    path.write_text(_csv(records) if fmt == "csv" else "".join(json.dumps(r) + "\n" for r in records))
    r = cli("import", str(path))
    assert r.code == 0, r.err
    assert [m["top1"]["value"] for m in _metrics(scaled)] == [92.0, 91.0, 0.5]


def test_import_takes_them_for_the_investigation_it_is_told(cli, scaled):
    path = scaled / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(92.0, investigation=False)))
    r = cli("import", "--pr", "1", str(path))
    assert r.code == 0, r.err
    assert _metrics(scaled) == [{"top1": {"value": 92.0, "n": 511}}]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_import_refuses_a_percentage_beyond_the_scale(cli, scaled, fmt):
    records = _records(92.0, 100.5)
    path = scaled / f"runs.{fmt}"
    path.write_text(_csv(records) if fmt == "csv" else "".join(json.dumps(r) + "\n" for r in records))
    r = cli("import", str(path))
    assert r.code == 2
    line = 3 if fmt == "csv" else 2
    assert f"runs.{fmt}:{line}: metric top1: a proportion (given with n) must lie in [0, 100], got 100.5" in r.err
    assert not (scaled / "kb.sqlite").exists() or _metrics(scaled) == []


def test_a_metric_without_a_scale_is_still_a_proportion_in_0_1(cli, scaled):
    path = scaled / "runs.jsonl"
    path.write_text(json.dumps({"investigation": "t", "run_id": "1", "config": "c", "status": "passed",
                                "metrics": {"acc": {"value": 92.0, "n": 511}}}) + "\n")
    r = cli("import", str(path))
    assert r.code == 2 and "metric acc: a proportion (given with n) must lie in [0, 1], got 92.0" in r.err


def test_rule_tests_take_percentages_too(cli, scaled):
    (scaled / "rules" / "t.test.yaml").write_text("""\
rule_files: [t.yaml]
tests:
  - name: the fix is back at 92 %
    runs:
      - {run_id: "1", config: c, status: passed, metrics: {top1: {value: 92.0, n: 511}}}
    expect: {h: confirmed}
""")
    r = cli("test", str(scaled / "rules" / "t.test.yaml"))
    assert "a proportion" not in r.out + r.err, r.err
    assert r.code == 0, r.out + r.err


def test_a_log_gives_a_percentage_with_its_n(cli, scaled):
    rules = scaled / "rules" / "t.yaml"
    rules.write_text(RULES + """\
extractors:
  - id: top1-line
    pattern: '^top1: (?P<value>[0-9.]+)'
    metric: top1
    n: 511
""")
    (scaled / "job.log").write_text("starting\ntop1: 92.4\ndone\n")
    r = cli("add-run", "--pr", "1", "--run-id", "1", "--config", "c", "--log", str(scaled / "job.log"),
            "--status", "passed")
    assert r.code == 0, r.err
    assert _metrics(scaled) == [{"top1": {"value": 92.4, "n": 511}}]
