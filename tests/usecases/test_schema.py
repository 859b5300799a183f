"""The use cases behind `db status` and `db upgrade`, called directly."""

from __future__ import annotations

from triage.kb import store
from triage.usecases import schema


def test_status_changes_nothing_and_upgrade_creates():
    url = store.resolve_url("kb.sqlite")
    before = schema.status(url)
    assert before.state == "empty" and before.head
    assert schema.upgrade(url).state == "empty"
    now = schema.status(url, "the team's")
    assert (now.state, now.version) == ("current", before.head)
    assert schema.upgrade(url).state == "current"
