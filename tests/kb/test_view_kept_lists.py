"""A long list of the stored view made of what a new view's would be is kept, not built
again, while every run recorded since was only added; and the view is then, to the byte,
the one a whole evaluation builds from scratch."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

PR = "30433"
BASE = "kimik26-fp8-1k1k-1p1d"


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The long lists built, by name, as the commands run."""
    import triage.render.digest as digest
    import triage.render.model as model

    made: list[str] = []
    for module, name, said in ((model, "_hypotheses", "hypotheses"), (model, "_experiments", "experiments"),
                               (model, "_bisects", "bisects"), (digest, "group_warnings", "warnings")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _said=said, **k: made.append(_said) or _real(*a, **k))
    return made


def _whole(cli, fmt: str, name: str) -> str:
    """The report of a copy of ./kb.sqlite without its stored view, worked out whole."""
    to = Path(name)
    with sqlite3.connect("kb.sqlite") as source, sqlite3.connect(to) as db:
        source.backup(db)
        db.execute("DELETE FROM snapshot")
    r = cli("--db", str(to), "report", "--pr", PR, "--format", fmt, "--full")
    assert r.code == 0, r.err
    return r.out


def _add(cli, run_id: str, value: str = "0.88", config: str = BASE) -> None:
    r = cli("add-run", "--pr", PR, "--run-id", run_id, "--config", config, "--status", "failed",
            "--metric", f"gsm8k={value}/1319")
    assert r.code == 0, r.err


def test_an_add_run_that_decides_nothing_new_builds_no_long_list(cli, seeded: Path, built: list) -> None:
    assert cli("report", "--pr", PR, "--format", "json").code == 0
    built.clear()
    _add(cli, "77")
    assert built == []
    for fmt in ("json", "markdown"):
        assert cli("report", "--pr", PR, "--format", fmt).out == _whole(cli, fmt, f"whole-{fmt}.sqlite")


def test_a_run_written_again_builds_every_list(cli, seeded: Path, built: list) -> None:
    _add(cli, "77")
    built.clear()
    _add(cli, "77", "0.9")  # the same run, written again
    assert sorted(set(built)) == ["bisects", "experiments", "hypotheses", "warnings"]
    assert cli("report", "--pr", PR, "--format", "json").out == _whole(cli, "json", "whole.sqlite")


def test_a_run_excluded_builds_every_list(cli, seeded: Path, built: list) -> None:
    _add(cli, "77")
    built.clear()
    assert cli("runs", "exclude", "77", "--pr", PR, "--config", BASE, "--because", "a bad node").code == 0
    assert cli("report", "--pr", PR, "--format", "json").code == 0
    assert sorted(set(built)) == ["bisects", "experiments", "hypotheses", "warnings"]
    assert cli("report", "--pr", PR, "--format", "json").out == _whole(cli, "json", "whole.sqlite")


def test_a_run_named_before_it_was_recorded_builds_every_list(cli, seeded: Path, built: list) -> None:
    """Manual evidence names a run not recorded yet: once it is, the view finds it (its link)."""
    r = cli("evidence", "add", "--pr", PR, "--hypothesis", "page-size", "--verdict", "supports",
            "--because", "seen on the next nightly", "--run", f"4242/{BASE}")
    assert r.code == 0, r.err
    _add(cli, "77")
    built.clear()
    _add(cli, "4242")
    assert "hypotheses" in built
    assert cli("report", "--pr", PR, "--format", "json").out == _whole(cli, "json", "whole.sqlite")
