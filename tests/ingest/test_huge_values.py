"""Any finite number, however large or small, either is refused where it
enters (a rule file, a record, a log) or is carried through every output:
``check``, ``report`` in each format, ``hypotheses``, ``bisect`` and the
dashboard.  A knowledge base that already holds such a value (written by a
triage without the range check) still reports."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

EDGES = [1.7e308, -1.7e308, 1e308, -1e308, 5e-324, -5e-324, 2.2250738585072014e-308, -0.0, 0.0, 1e15, -1e15,
         1e15 + 2, 0.9999999999999999]
numbers = st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=False, allow_infinity=False))

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

RULES = """\
schema_version: 1
investigation:
  id: big
  repo: o/big
  pr: 7
  title: Big numbers
  metric: acc
  gate: {gate}
  references:
    good: {{value: {good}}}
    bad: {{config: c1}}
hypotheses:
  - {{id: h1, title: H1}}
recipes:
  - {{id: c2, base: c1, tests: [h1], predicts: {{h1: recovers}}}}
rules:
  - {{id: r1, hypothesis: h1, when: {{config: c2, same_as: good}}, then: ruled_out, because: "c2 {{{{ value }}}}"}}
  - {{id: r2, hypothesis: h1, when: {{config: c1, at_least: {threshold}}}, then: supports}}
bisects:
  - {{id: img, axis: image, points: [i1, i2, i3], good_when: {{metric: acc, at_least: gate}}}}
"""


def _records(values: list[float]) -> str:
    configs = ["c1", "c2", "c1", "c2"]
    lines = []
    for i, (config, v) in enumerate(zip(configs, values)):
        lines.append(json.dumps({"investigation": "big", "run_id": str(100 + i), "config": config, "status": "failed",
                                 "metrics": {"acc": v}, "provenance": {"image": f"i{i % 3 + 1}"},
                                 "time": f"2026-01-0{i + 1}T00:00:00Z"}))
    return "\n".join(lines) + "\n"


def _every_output(cli, accepted: bool) -> None:
    """Each output renders (exit 0), or the rule file was refused before (exit 2)."""
    for args in (["report", "--pr", "7"], ["report", "--pr", "7", "--format", "json"],
                 ["report", "--pr", "7", "--format", "text"], ["report", "--pr", "7", "--fit"],
                 ["hypotheses", "--pr", "7"], ["bisect", "--pr", "7"]):
        r = cli(*args)
        assert "Traceback" not in r.err, (args, r.err[-2000:])
        assert r.code == (0 if accepted else 2), (args, r.code, r.err[-2000:])
    if not accepted:
        return
    from triage.serve import dashboard

    rows = dashboard.overview("sqlite:///kb.sqlite")
    assert dashboard.render("index.html.j2", rows=rows)
    model, history, colour, why = dashboard.investigation_page("sqlite:///kb.sqlite", "o/big", 7)
    assert dashboard.render("page.html.j2", model=model, history=history, colour=colour, why=why)


@SETTINGS
@given(gate=numbers, good=numbers, threshold=numbers, runs=st.lists(numbers, min_size=4, max_size=4))
def test_any_finite_number_is_refused_at_input_or_rendered(gate, good, threshold, runs, cli, tmp_path_factory,
                                                           monkeypatch):
    where = tmp_path_factory.mktemp("big")
    monkeypatch.chdir(where)
    (where / "rules").mkdir()
    (where / "rules" / "big.yaml").write_text(RULES.format(gate=repr(gate), good=repr(good),
                                                           threshold=repr(threshold)))
    (where / "runs.jsonl").write_text(_records(runs))
    checked = cli("check", "rules")
    assert "Traceback" not in checked.err and checked.code in (0, 2), checked.err[-2000:]
    imported = cli("import", "runs.jsonl")
    assert "Traceback" not in imported.err and imported.code in (0, 2), imported.err[-2000:]
    if imported.code == 0:
        assert checked.code == 0
    _every_output(cli, accepted=checked.code == 0)  # runs refused: the investigation reports without them


@SETTINGS
@given(runs=st.lists(numbers, min_size=4, max_size=4))
def test_a_knowledge_base_holding_any_finite_value_still_reports(runs, cli, tmp_path_factory, monkeypatch):
    """As if written by a triage that took any finite number: the range
    check is lifted for the import's writing (its evaluation reads as today),
    then every output must render."""
    from triage import numbers as checked_numbers
    from triage.kb import investigations

    where = tmp_path_factory.mktemp("old")
    monkeypatch.chdir(where)
    (where / "rules").mkdir()
    (where / "rules" / "big.yaml").write_text(RULES.format(gate="0.9", good="0.95", threshold="0.5"))
    (where / "runs.jsonl").write_text(_records(runs))
    today = checked_numbers.MAGNITUDE
    with monkeypatch.context() as m:
        m.setattr(investigations, "MAGNITUDE", today)  # the reader's own range, as today
        m.setattr(checked_numbers, "MAGNITUDE", sys.float_info.max)
        imported = cli("import", "runs.jsonl")
    assert imported.code == 0, imported.err[-2000:]
    _every_output(cli, accepted=True)


def test_a_huge_value_in_a_log_does_not_count(cli, tmp_path: Path):
    """Like a match that is no number: the run is recorded without it."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "big.yaml").write_text(RULES.format(gate="0.9", good="0.95", threshold="0.5")
                                                 + "extractors:\n  - {id: acc, pattern: 'acc=(?P<value>[0-9.]+)', metric: acc}\n")
    (tmp_path / "run.log").write_text("acc=0.5\nacc=17" + "0" * 307 + "\n")
    r = cli("add-run", "--pr", "7", "--run-id", "9", "--config", "c1", "--log", "run.log")
    assert r.code == 0, r.err
    assert "acc=0.5 (line 1, acc)" in r.err
    assert "e+308" not in r.err
