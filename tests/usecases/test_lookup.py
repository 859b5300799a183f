"""The use cases behind `runs list`, `bisect`, `similar` and `history`, called directly."""

from __future__ import annotations

import pytest

from triage.errors import InputError
from triage.kb import store
from triage.usecases import lookup
from triage.usecases.runs import delete

PR, RUN = 30433, "28903343346"


def test_the_lookups_return_what_the_commands_show(seeded):
    url = store.resolve_url(None)
    rows, _, total = lookup.runs(url, PR, None)
    assert len(rows) == total == 33 and RUN in {r.run_id for r in rows}
    model = lookup.bisects(url, PR, None)
    assert [b["id"] for b in lookup.bisects(url, PR, None, ["image"])["bisects"]] == ["image"]
    assert len(model["bisects"]) >= 1
    with pytest.raises(InputError, match="--id 'nope': no such bisect; known: "):
        lookup.bisects(url, PR, None, ["nope"])
    with pytest.raises(InputError, match="--hypothesis 'nope': no such hypothesis"):
        lookup.similar(url, PR, None, ["nope"])
    targets, matches = lookup.similar(url, PR, None, undecided=True)
    assert matches == []  # no other investigation
    delete(url, RUN, "recorded on the wrong PR", pr=PR)
    found = lookup.history(url, PR, None)
    assert [(d.run_id, d.because) for d in found["deleted_runs"]] == [(RUN, "recorded on the wrong PR")] * len(
        found["deleted_runs"]) and found["deleted_runs"]
    assert found["changes"] and all(e.retired_at is not None for e in found["retired"])


def test_the_runs_listed_are_read_as_rows_not_made_as_objects(seeded):
    """`runs list` shows every run: read as rows of what it shows, not as objects of the ORM
    (a hundred thousand of those took a gigabyte), with the same values, in the order recorded."""
    from sqlalchemy import event

    from triage.kb.tables import models as m

    url = store.resolve_url(None)
    made: list[object] = []
    listen = lambda target, context: made.append(target)  # noqa: E731
    event.listen(m.Run, "load", listen)
    try:
        rows, _, _ = lookup.runs(url, PR, None)
        last, _, total = lookup.runs(url, PR, None, last=4)
        none, _, _ = lookup.runs(url, PR, None, last=0)
    finally:
        event.remove(m.Run, "load", listen)
    assert not made and len(rows) == 33
    with store.session(url) as s:
        whole = store.runs_of(s, "kimik26-disagg")
    fields = ("run_id", "config", "status", "metrics", "provenance", "time", "url", "note", "signature_id",
              "excluded", "excluded_reason")
    assert [tuple(getattr(r, f) for f in fields) for r in rows] == [tuple(getattr(r, f) for f in fields)
                                                                   for r in whole]
    # the last few recorded, in the order recorded, and how many there are in all
    assert [tuple(getattr(r, f) for f in fields) for r in last] == [tuple(getattr(r, f) for f in fields)
                                                                   for r in whole[-4:]]
    assert total == 33 and none == []


def test_json_output_is_what_json_dumps_writes_whatever_it_holds(capsys):
    import json
    from datetime import datetime, timezone

    from triage.cli.base import _json_out

    for data in ([{"a": 1e-05, "b": "é", "c": None}], {"when": datetime(2026, 1, 2, tzinfo=timezone.utc)}):
        _json_out(data)
        assert capsys.readouterr().out == json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def test_the_bisects_are_read_from_the_stored_view_while_nothing_changed(seeded, monkeypatch):
    """`bisect` shows what `report` shows: on an unchanged knowledge base, the stored view,
    without an evaluation (it read and evaluated every run: 1.6 s at 100,000 runs)."""
    from triage.rules.engine import evaluate as engine
    from triage.usecases.report import view

    url = store.resolve_url(None)
    shown = view(url, PR, None)["bisects"]  # evaluated, and the view kept
    assert shown

    def no_evaluation(*args, **kwargs):
        raise AssertionError("evaluated again")

    monkeypatch.setattr(engine, "evaluate", no_evaluation)
    assert lookup.bisects(url, PR, None)["bisects"] == shown
    first = shown[0]["id"]
    assert [b["id"] for b in lookup.bisects(url, PR, None, [first])["bisects"]] == [first]
