"""The JSON report of a stored view is kept with it: the first ``report --format json`` of a
view writes it, the next ones (and ``report --full`` that finds every piece as stored) print
it without reading the view's long lists back.  "Seen elsewhere", which changes without the
view, is put in each time; a report with ``--since`` or another ``--runs`` is made as before;
a view written again takes its JSON report with it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_RUNS
from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)
from tests.support.statements import recorded
from triage.render.report import json_template, to_json, with_similar

REPORT = ("report", "--pr", "30433", "--format", "json")


def _kept_json(url: str) -> list:
    from sqlalchemy import select

    from triage.kb import snapshot, store, tables

    p = tables.SnapshotPart
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        return list(s.execute(select(p.c.digest).where(p.c.investigation_id == iid, p.c.name == snapshot.JSON_PART)))


def _lists_read(sent: list) -> list:
    """The statements that read the stored view's long lists back."""
    return [sql for sql, _ in sent
            if "SELECT SNAPSHOTPART.NAME, SNAPSHOTPART.DIGEST, SNAPSHOTPART.DATA" in " ".join(sql.upper().split())]


def test_the_json_report_of_a_stored_view_is_kept_and_printed_as_made(cli, rules_dir, url) -> None:
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    first = cli("--db", url, *REPORT)
    assert first.code == 0 and _kept_json(url)
    with recorded() as sent:
        again = cli("--db", url, *REPORT)
    assert again.out == first.out and _lists_read(sent) == []  # the kept report, not the long lists
    # a whole evaluation that finds every piece as stored prints it too
    with recorded() as sent:
        full = cli("--db", url, *REPORT, "--full")
    assert full.out == first.out and _lists_read(sent) == []
    # the markdown, --since and another --runs are made from the view, as before
    with recorded() as sent:
        assert cli("--db", url, "report", "--pr", "30433").code == 0
    assert _lists_read(sent)
    since = cli("--db", url, *REPORT, "--since", "2d")
    assert since.code == 0 and json.loads(since.out)["since"] is not None
    assert cli("--db", url, *REPORT, "--runs", "5").out != first.out
    assert cli("--db", url, *REPORT).out == first.out


def test_a_view_written_again_takes_its_json_report_with_it(cli, rules_dir, url) -> None:
    """After an add-run the view is another: its JSON report is made again, and is the one a
    whole evaluation prints."""
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    before = cli("--db", url, *REPORT)
    kept = _kept_json(url)
    assert cli("--db", url, "add-run", "--pr", "30433", "--run-id", "9001", "--config", "kimik26-fp8-1k1k-1p1d",
               "--status", "passed", "--metric", "gsm8k=0.935/1319").code == 0
    assert _kept_json(url) == []  # gone with the view it was of
    after = cli("--db", url, *REPORT)
    assert after.out != before.out and "9001" in after.out
    assert _kept_json(url) and _kept_json(url) != kept
    assert after.out == cli("--db", url, *REPORT, "--full").out == cli("--db", url, *REPORT).out


def test_seen_elsewhere_is_put_in_as_it_is_now(cli, rules_dir, url) -> None:
    """"Seen elsewhere" changes with other investigations' evaluations, not with the view: the
    kept report takes it as the view model has it now."""
    from sqlalchemy import update

    from triage.kb import store, tables

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    first = cli("--db", url, *REPORT)
    similar = [{"investigation": "x/y#1", "hypothesis": "h", "title": "another \"one\"\n", "score": 0.5}]
    with store.session(url) as s:  # what a later evaluation of another investigation would keep
        t = tables.Snapshot
        s.execute(update(t).values(similar=json.dumps(similar)))
    got = json.loads(cli("--db", url, *REPORT).out)
    assert got["similar"] == similar
    assert {k: v for k, v in got.items() if k != "similar"} == {
        k: v for k, v in json.loads(first.out).items() if k != "similar"}


JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-10, 10) | st.floats(-1e20, 1e20, allow_nan=False)
                       | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(similar=st.lists(JSONISH, max_size=3), other=JSONISH)
def test_a_kept_report_with_seen_elsewhere_put_in_is_the_report(similar, other) -> None:
    """The kept report (its "Seen elsewhere" a mark) with any list put in is, to the byte,
    the report of the model that holds that list."""
    model = _model(other)
    assert with_similar(json_template(model), similar) == to_json({**model, "similar": similar})


def _model(other: object) -> dict:
    """A view model with every key the JSON report reads (each long list empty)."""
    keys = ("investigation", "references", "verdict", "command", "untested", "next_level", "engine_warnings",
            "changes")
    return {**{k: other for k in keys}, "hypotheses": [], "runs": [], "experiments": [], "bisects": [],
            "suggestions": [], "confounds": [other], "similar": [], "since": None}


def test_two_reports_keep_the_json_report_in_turn(cli, rules_dir, url) -> None:
    """Two JSON reports of one view at once, neither finding its report kept: each keeps it in
    its turn (the investigation held, as evaluations hold it), neither fails on the other's."""
    import threading

    from triage import views
    from triage.kb import snapshot, store

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    assert cli("--db", url, "report", "--pr", "30433", "--format", "text").code == 0  # the view, no JSON kept
    assert _kept_json(url) == []
    errors: list = []

    def second() -> None:
        try:
            with store.session(url) as s:
                inv = store.find_investigation(s, 30433, None)
                views.model(s, inv, json=True)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with store.session(url) as s:
        inv = store.find_investigation(s, 30433, None)
        views.model(s, inv, json=True)  # keeps it, not committed yet
        other = threading.Thread(target=second)
        other.start()
        other.join(0.5)  # waits for this transaction
    other.join(30)
    assert not other.is_alive() and errors == []
    assert len(_kept_json(url)) == 1
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        assert snapshot.read_json(s, iid, snapshot.fingerprint(s, iid)) is not None
