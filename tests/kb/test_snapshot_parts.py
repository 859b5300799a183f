"""A stored view keeps its long lists apart, each under the digest of its text: a view
that differs from the stored one in a few small fields (an add-run of a run that decides
nothing new changes the headline and the run count) writes those, not the lists again;
and a view whose parts are not kept as it names them is not read."""

from __future__ import annotations

from tests.conftest import EXAMPLE_RUNS
from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)
from tests.support.statements import recorded

PR = "30433"
BASE = "kimik26-fp8-1k1k-1p1d"


def _parts(url: str) -> dict[str, str]:
    from sqlalchemy import select

    from triage.kb import store, tables

    p = tables.SnapshotPart
    with store.session(url) as s:  # the long lists (not the JSON report kept with the view)
        return dict(s.execute(select(p.c.name, p.c.digest).where(p.c.name != "~json")).all())


def test_an_add_run_that_changes_the_headline_alone_writes_no_long_list_again(cli, rules_dir, url) -> None:
    from triage.render.model import LONG

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    before = cli("--db", url, "report", "--pr", PR, "--format", "json")
    parts = _parts(url)
    assert sorted(parts) == sorted(LONG)
    with recorded() as sent:
        r = cli("--db", url, "add-run", "--pr", PR, "--run-id", "77", "--config", BASE, "--status", "failed",
                "--metric", "gsm8k=0.88/1319")
    assert r.code == 0, r.err
    written = [sql.upper() for sql, _ in sent if sql.lstrip().upper().startswith(("INSERT", "DELETE", "UPDATE"))]
    assert any("INTO SNAPSHOT " in sql or "INTO SNAPSHOT(" in sql for sql in written)  # the headline changed
    # no long list written again (the JSON report of the view before it goes with it)
    assert not [sql for sql in written if "SNAPSHOTPART" in sql and not sql.lstrip().startswith("DELETE")]
    assert _parts(url) == parts
    after = cli("--db", url, "report", "--pr", PR, "--format", "json")
    assert after.code == 0 and after.out != before.out  # one run more
    assert after.out == cli("--db", url, "report", "--pr", PR, "--format", "json", "--full").out


def test_a_view_reads_back_in_the_order_written(cli, rules_dir, tmp_path) -> None:
    from triage.kb import snapshot, store

    kb = f"sqlite:///{tmp_path / 'kb.sqlite'}"
    assert cli("--db", kb, "import", str(EXAMPLE_RUNS)).code == 0
    model = {"headline": "h", "hypotheses": [{"id": "a", "é": [1, 2.5]}], "runs_total": 3,
             "experiments": [], "bisects": [{"points": []}], "warnings": ["w"], "engine_warnings": [], "chart": None}
    with store.session(kb) as s:
        iid = store.find_investigation(s, int(PR), None).id
        snapshot.write(s, iid, "fp", {"model": model, "untested": []})
    with store.session(kb) as s:
        got = snapshot.read(s, iid, "fp")
    assert got is not None and list(got["model"].items()) == list(model.items())


def test_a_view_whose_part_is_not_kept_as_named_is_not_read(cli, rules_dir, tmp_path) -> None:
    import sqlite3

    kb = tmp_path / "kb.sqlite"
    assert cli("--db", str(kb), "import", str(EXAMPLE_RUNS)).code == 0
    report = cli("--db", str(kb), "report", "--pr", PR, "--format", "json")
    with sqlite3.connect(kb) as db:
        db.execute("UPDATE snapshotpart SET data = '[]' , digest = 'other' WHERE name = 'hypotheses'")
    from triage.kb import snapshot, store

    with store.session(f"sqlite:///{kb}") as s:
        iid = store.find_investigation(s, int(PR), None).id
        assert snapshot.read(s, iid, snapshot.fingerprint(s, iid)) is None
    again = cli("--db", str(kb), "report", "--pr", PR, "--format", "json")
    assert again.code == 0 and again.out == report.out  # built again, and kept
    with store.session(f"sqlite:///{kb}") as s:
        assert snapshot.read(s, iid, snapshot.fingerprint(s, iid)) is not None


def test_an_add_run_that_decides_nothing_new_keeps_the_lists_on_either_database(cli, rules_dir, url,
                                                                                 monkeypatch) -> None:
    """The runs in numbers that tell a kept list from one to build (their count, largest key and
    sum of write times) read alike on SQLite and PostgreSQL: the lists are kept on both."""
    import triage.render.model as model

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    assert cli("--db", url, "report", "--pr", PR, "--format", "json").code == 0
    built: list = []
    real = model._hypotheses
    monkeypatch.setattr(model, "_hypotheses", lambda *a, **k: built.append(1) or real(*a, **k))
    r = cli("--db", url, "add-run", "--pr", PR, "--run-id", "77", "--config", BASE, "--status", "failed",
            "--metric", "gsm8k=0.88/1319")
    assert r.code == 0, r.err
    assert built == []
