"""The use cases behind `import`, `export` and `runs delete`,
called directly: what they return and write, whatever prints it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_RUNS
from triage.errors import InputError
from triage.kb import store
from triage.settings import Settings
from triage.usecases.imports import export_records, import_records
from triage.usecases.report import view
from triage.usecases.runs import delete

PR, RUN = 30433, "28903343346"


def _empty(cli, name: str) -> str:
    """A new knowledge base ``name`` with the rule files loaded, no runs."""
    assert cli("--db", name, "import", os.devnull).code == 0
    return store.resolve_url(name)


def _statuses(url: str) -> list[tuple[str, str]]:
    return [(h["id"], h["status"]) for h in view(url, PR, None)["hypotheses"]]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_exported_runs_import_again_the_same(cli, seeded, tmp_path: Path, fmt):
    url = store.resolve_url(None)
    text = export_records(url, PR, None, fmt)
    assert len(text.splitlines()) == 33 if fmt == "jsonl" else text.startswith("investigation,run_id,config,status,")
    (tmp_path / f"runs.{fmt}").write_text(text, encoding="utf-8")
    other, seen = _empty(cli, "other.sqlite"), []
    result = import_records(other, f"runs.{fmt}", fmt, progress=lambda done, size: seen.append((done, size)))
    assert (result.total, result.created, result.updated, result.investigations) == (33, 33, 0, ["kimik26-disagg"])
    assert seen and seen[-1] == (len(text.encode()),) * 2
    assert export_records(other, PR, None, fmt) == text
    assert _statuses(other) == _statuses(url)  # evaluated after the import
    again = import_records(other, f"runs.{fmt}", fmt)
    assert (again.total, again.created) == (33, 0)


def test_records_without_an_investigation_go_to_the_pr_given_and_a_bad_one_writes_nothing(cli, rules_dir,
                                                                                          tmp_path: Path):
    url = _empty(cli, "kb.sqlite")
    lines = EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines()
    (tmp_path / "bad.jsonl").write_text("\n".join(lines[:3] + ["{not json"]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad.jsonl:4"):
        import_records(url, "bad.jsonl", "jsonl")
    with store.session(url) as s:
        assert store.runs_of(s, "kimik26-disagg") == []
    result = import_records(url, str(EXAMPLE_RUNS), "jsonl", pr=PR)
    assert result.created == 33


def test_an_import_evaluated_in_two_processes_decides_as_one(cli, rules_dir):
    """``settings.parallel_runs``: from how many runs an import's evaluation takes a second
    process (where there is a second CPU); the verdicts are the same either way."""
    alone, helped = _empty(cli, "alone.sqlite"), _empty(cli, "helped.sqlite")
    import_records(alone, str(EXAMPLE_RUNS), "jsonl", settings=Settings(parallel_runs=None))
    import_records(helped, str(EXAMPLE_RUNS), "jsonl", settings=Settings(parallel_runs=1))
    assert _statuses(helped) == _statuses(alone) and len(_statuses(alone)) > 5


def test_delete_returns_the_legs_and_the_changes(seeded):
    url = store.resolve_url(None)
    with pytest.raises(InputError, match="--because must say why"):
        delete(url, RUN, " ")
    legs, changed = delete(url, RUN, "recorded on the wrong PR", pr=PR)
    assert {run for run, _ in legs} == {RUN} and isinstance(changed, dict)
    with store.session(url) as s:
        assert store.find_runs(s, "kimik26-disagg", RUN, None) == []
    with pytest.raises(InputError, match=f"no run {RUN} in the knowledge base"):
        delete(url, RUN, "again")



def test_an_import_into_several_investigations_frees_what_each_evaluation_leaves(cli, rules_dir, tmp_path: Path,
                                                                                 monkeypatch):
    """Commands run without the cyclic collector; an import evaluates each investigation it
    wrote to, and an evaluation is a cycle of objects: between evaluations what the last one
    left is collected (the import's own objects set aside), and nothing stays set aside."""
    import gc
    import json

    url = _empty(cli, "kb.sqlite")
    lines = EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines()
    others = [json.dumps({"investigation": iid, "run_id": f"9{i}", "config": "c1", "status": "passed",
                          "metrics": {"wall_s": {"value": 100 + i}}}) for iid in ("compile-bump", "e2e-walltime")
              for i in range(3)]
    (tmp_path / "three.jsonl").write_text("\n".join(lines + others) + "\n", encoding="utf-8")
    collected: list[int] = []
    real = gc.collect
    monkeypatch.setattr(gc, "collect", lambda generation=2: collected.append(gc.get_freeze_count()) or real(generation))
    result = import_records(url, "three.jsonl", "jsonl")
    assert sorted(result.investigations) == ["compile-bump", "e2e-walltime", "kimik26-disagg"]
    assert len(collected) == 3 and all(frozen > 0 for frozen in collected)  # the import's objects set aside
    assert gc.get_freeze_count() == 0
    collected.clear()
    import_records(url, str(EXAMPLE_RUNS), "jsonl")  # one investigation: nothing to collect between
    assert collected == []


def test_only_an_investigation_of_many_runs_takes_a_helper_process(cli, rules_dir, tmp_path: Path, monkeypatch):
    """A large import evaluates each investigation of at least ``parallel_runs`` runs in
    two processes, once committed; the others in its own transaction, without a fork."""
    import json

    from triage.kb import parallel

    if not parallel.worth_it(1, 1):
        pytest.skip("no second CPU to fork a helper for")
    url = _empty(cli, "kb.sqlite")
    lines = EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines()
    others = [json.dumps({"investigation": "e2e-walltime", "run_id": f"9{i}", "config": "c1", "status": "passed",
                          "metrics": {"wall_s": {"value": 100 + i}}}) for i in range(3)]
    # the first record's investigation has runs already: no process reads the file beside the
    # writes (that is for a new investigation's runs)
    (tmp_path / "one.jsonl").write_text(others[0] + "\n", encoding="utf-8")
    import_records(url, "one.jsonl", "jsonl")
    (tmp_path / "two.jsonl").write_text("\n".join(others[1:] + lines) + "\n", encoding="utf-8")
    helped: list[str] = []
    real = parallel.start
    monkeypatch.setattr(parallel, "start", lambda url, iid, *a, **k: helped.append(iid) or real(url, iid, *a, **k))
    import_records(url, "two.jsonl", "jsonl", settings=Settings(parallel_runs=10))
    assert helped == ["kimik26-disagg"]  # 33 runs; e2e-walltime's 3 are evaluated in place
    assert _statuses(url) and view(url, 128, None)["hypotheses"]  # both evaluated


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_export_is_written_a_few_runs_at_a_time_without_making_runs_whole(cli, seeded, monkeypatch, fmt):
    """What an export writes is what a whole export says, in several pieces when the runs are
    many: the runs are read a batch at a time and written as they come, not made as objects
    of the ORM and held all at once (a hundred thousand took 600 MiB)."""
    from sqlalchemy import event

    from triage.kb import runs as stored
    from triage.kb.tables import models as m
    from triage.usecases.imports import export_to

    url = store.resolve_url(None)
    whole = export_records(url, PR, None, fmt)
    monkeypatch.setattr(stored, "EXPORT_BATCH", 4)
    pieces: list[str] = []
    made: list[object] = []
    listen = lambda target, context: made.append(target)  # noqa: E731
    event.listen(m.Run, "load", listen)
    try:
        export_to(url, PR, None, fmt, pieces.append)
    finally:
        event.remove(m.Run, "load", listen)
    assert "".join(pieces) == whole and len(pieces) > 3 and not made


def test_an_export_that_fails_midway_leaves_the_file_as_it_was(cli, seeded, tmp_path: Path, monkeypatch):
    from triage.kb import runs as stored

    out = tmp_path / "runs.jsonl"
    out.write_text("as it was\n", encoding="utf-8")
    monkeypatch.setattr(stored, "EXPORT_BATCH", 4)
    real, seen = stored._record, []

    def failing(*fields):  # the disk fills up while the eleventh run is written
        seen.append(fields)
        if len(seen) > 10:
            raise OSError(28, "No space left on device")
        return real(*fields)

    monkeypatch.setattr(stored, "_record", failing)
    r = cli("export", "--pr", str(PR), "-o", str(out))
    assert r.code == 2 and "No space left on device" in r.err and "Traceback" not in r.err
    assert out.read_text(encoding="utf-8") == "as it was\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("runs.jsonl")] == ["runs.jsonl"]


def test_a_small_import_into_configs_of_many_runs_takes_a_helper_process(cli, rules_dir, tmp_path: Path,
                                                                         monkeypatch):
    """What decides a helper is the runs the evaluation reads again (those of the configs the
    import wrote to), not the runs written: a thousand runs spread over every config of an
    investigation of a hundred thousand make it read them all."""
    import json

    from triage.kb import parallel

    if not parallel.worth_it(1, 1):
        pytest.skip("no second CPU to fork a helper for")
    url = _empty(cli, "kb.sqlite")
    base = "kimik26-fp8-1k1k-1p1d"
    import_records(url, str(EXAMPLE_RUNS), "jsonl", settings=Settings(parallel_runs=None))

    def one(name: str, run_id: str, config: str) -> str:
        record = {"investigation": "kimik26-disagg", "run_id": run_id, "config": config, "status": "failed",
                  "metrics": {"gsm8k": {"value": 0.88, "n": 1319}}}
        (tmp_path / name).write_text(json.dumps(record) + "\n", encoding="utf-8")
        return name

    (tmp_path / "more.jsonl").write_text("".join(
        json.dumps({"investigation": "kimik26-disagg", "run_id": f"8{i}", "config": base, "status": "failed",
                    "metrics": {"gsm8k": {"value": 0.88, "n": 1319}}}) + "\n" for i in range(12)), encoding="utf-8")
    import_records(url, "more.jsonl", "jsonl", settings=Settings(parallel_runs=None))  # the base: 15 runs
    helped: list[str] = []
    real = parallel.start
    monkeypatch.setattr(parallel, "start", lambda url, iid, *a, **k: helped.append(iid) or real(url, iid, *a, **k))
    before = _statuses(url)
    import_records(url, one("a.jsonl", "71", "pr-test-extra"), "jsonl", settings=Settings(parallel_runs=10))
    assert helped == []  # one run into a config of one: two runs to read again
    import_records(url, one("b.jsonl", "72", base), "jsonl", settings=Settings(parallel_runs=10))
    assert helped == ["kimik26-disagg"]  # one run into the base's 15
    assert _statuses(url) == before  # a failed base run more: nothing decided otherwise
