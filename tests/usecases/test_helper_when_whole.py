"""A report whose evaluation will be whole (its rule files or the code changed since the last)
takes a helper process for a large investigation, as `report --full` does; one that reuses the
stored view or pieces does not fork."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage.kb import store
from triage.settings import Settings
from triage.usecases.report import view

PR = 30433


@pytest.fixture
def helped(monkeypatch) -> list[str]:
    from triage.kb import parallel

    if not parallel.worth_it(1, 1):
        pytest.skip("no second CPU to fork a helper for")
    started: list[str] = []
    real = parallel.start
    monkeypatch.setattr(parallel, "start", lambda url, iid, *a, **k: started.append(iid) or real(url, iid, *a, **k))
    return started


def test_a_helper_for_the_first_evaluation_after_a_rule_file_changed(cli, seeded: Path, helped, monkeypatch) -> None:
    monkeypatch.setenv("TRIAGE_PARALLEL_RUNS", "10")  # the bundled investigation: 33 runs
    first = json.loads(cli("report", "--pr", str(PR), "--format", "json").out)  # the import's evaluation stands
    assert helped == []
    path = seeded / "kimik26-disagg.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("title: \"", "title: \"Edited, ", 1), encoding="utf-8")
    edited = cli("report", "--pr", str(PR), "--format", "json")
    assert edited.code == 0 and helped == ["kimik26-disagg"]
    doc = json.loads(edited.out)
    assert doc["investigation"]["title"].startswith("Edited, ")
    assert doc["hypotheses"] == first["hypotheses"]
    assert cli("report", "--pr", str(PR), "--format", "json").out == edited.out  # it stands again
    assert helped == ["kimik26-disagg"]
    # what one process alone works out whole
    monkeypatch.setenv("TRIAGE_PARALLEL_RUNS", "off")
    assert cli("report", "--pr", str(PR), "--format", "json", "--full").out == edited.out


def test_no_helper_when_only_runs_changed(cli, seeded: Path, helped, tmp_path: Path) -> None:
    url, few = store.resolve_url(None), Settings(parallel_runs=10)
    view(url, PR, None, settings=few)
    record = {"investigation": "kimik26-disagg", "run_id": "77", "config": "kimik26-fp8-1k1k-1p1d",
              "status": "failed", "metrics": {"gsm8k": {"value": 0.88, "n": 1319}}}
    (tmp_path / "one.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert cli("runs", "exclude", "28873810961", "--pr", str(PR), "--config", "kimik26-fp8-1k1k-1p1d",
               "--because", "a test").code == 0  # the view no longer stands; the pieces do
    view(url, PR, None, settings=few)
    assert helped == []
