"""A burst of deliveries for one PR makes one post, and no run is left unposted:
the hand-off of :mod:`triage.serve.handoff`, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
import threading
from datetime import timedelta

import pytest
from sqlalchemy import update

from tests.support.postgres import database
from tests.support.serve import write_rules
from triage.kb import models as m
from triage.kb import store
from triage.serve import handoff
from triage.serve.queue import Queue

IID, SUBJECT = "octo-drop", "octo-org/octo-repo#2"  # what tests.support.serve's rule file follows


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request, tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_rules(tmp_path)
    if request.param == "sqlite":
        assert cli("import", os.devnull).code == 0  # the rule file loaded
        yield store.resolve_url(None)
        return
    with database() as pg:
        assert cli("--db", pg, "import", os.devnull).code == 0
        yield pg


def _claimed(url: str, n: int, subject: str | None = SUBJECT) -> tuple[Queue, list]:
    q = Queue(url)
    for i in range(n):
        q.put(f"d{i}", "workflow_run", "completed", {}, None, subject)
    return q, [q.claim() for _ in range(n)]


def _record(url: str, iid: str = IID) -> None:
    with store.session(url) as s:
        handoff.mark_due(s, iid)


def test_the_delivery_that_hands_off_last_posts_and_the_others_leave_it(url):
    q, (a, b) = _claimed(url, 2)
    _record(url)
    assert handoff.hand_off(url, a.id, a.subject, [IID]) == []  # b is still to come
    _record(url)
    assert handoff.hand_off(url, b.id, b.subject, [IID]) == [IID]  # a is through: b posts both
    count = handoff.due(url, IID)
    assert count == 2
    handoff.posted(url, IID, count)
    assert handoff.due(url, IID) is None and handoff.pending(url) == 0


def test_runs_recorded_while_a_post_is_made_keep_it_due(url):
    _record(url)
    count = handoff.due(url, IID)
    _record(url)  # another delivery recorded runs after the post read what to show
    handoff.posted(url, IID, count)
    assert handoff.due(url, IID) == count + 1


def test_what_a_delivery_is_waited_on_for(url):
    q, (d,) = _claimed(url, 1)
    _record(url)
    for subject, other_state, waits in [
        ("octo-org/octo-repo#2", "queued", True),     # the same PR, due
        ("octo-org/octo-repo", "running", True),      # a job of the repository: which PR is not known yet
        (None, "running", True),                      # stored by an older server
        ("octo-org/octo-repo#3", "queued", False),    # another PR
        ("other/repo#2", "queued", False),            # another repository
        ("octo-org/octo-repo#2", "later", False),     # its retry is a minute away: it posts when it comes
        ("octo-org/octo-repo#2", "posting", False),   # through with its runs
        ("octo-org/octo-repo#2", "done", False),
    ]:
        q.put("other", "workflow_run", "completed", {}, None, subject)
        state = {"later": "queued", "posting": "running"}.get(other_state, other_state)
        values = dict(state=state, posting=other_state == "posting")
        if other_state == "later":
            values["next_at"] = store.now() + timedelta(seconds=60)
        with store.session(url) as s:
            s.execute(update(m.Delivery).where(m.Delivery.id == "other").values(**values))
        assert handoff.hand_off(url, d.id, d.subject, [IID]) == ([] if waits else [IID]), (subject, other_state)
        with store.session(url) as s:
            s.execute(update(m.Delivery).where(m.Delivery.id == d.id).values(posting=False))
            s.delete(s.get(m.Delivery, "other"))


def test_a_delivery_answers_for_the_due_posts_of_its_subject_not_only_its_own(url):
    q, (job, run) = _claimed(url, 2, subject="octo-org/octo-repo")
    _record(url)
    assert handoff.hand_off(url, run.id, SUBJECT, [IID]) == []  # the job is still to come
    assert handoff.hand_off(url, job.id, job.subject, []) == [IID]  # it recorded nothing: it posts
    assert handoff.hand_off(url, "elsewhere", "other/repo", []) == []


def test_a_post_waits_at_most_so_long(url, monkeypatch):
    q, (a, b) = _claimed(url, 2)
    _record(url)
    monkeypatch.setattr(handoff, "WAIT_SECONDS", 0.0)
    with store.session(url) as s:  # due since a while
        row = s.get(m.Meta, handoff.PREFIX + IID)
        row.value = json.dumps({"count": 1, "since": 1.0})
    assert handoff.hand_off(url, a.id, a.subject, [IID]) == [IID]  # though b is to come


def test_of_many_deliveries_handing_off_at_once_exactly_the_last_posts(url):
    n = 12
    q, claimed = _claimed(url, n)
    start, posts = threading.Barrier(n), []

    def one(d) -> None:
        _record(url)
        start.wait(10)
        posts.append(handoff.hand_off(url, d.id, d.subject, [IID]))

    threads = [threading.Thread(target=one, args=(d,)) for d in claimed]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(posts) == [[]] * (n - 1) + [[IID]] and handoff.due(url, IID) == n


@pytest.mark.parametrize("name", ["post_lock", "post_turn"])
def test_posts_of_one_investigation_take_turns_across_processes(url, name):
    """Another process (a replica) holds the lock: this one waits until it lets go."""
    import subprocess
    import sys

    from triage.kb import postlock

    child = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom triage.kb import postlock\n"
         f"with postlock.{name}(sys.argv[1], {IID!r}):\n    print('held', flush=True)\n    sys.stdin.readline()\n",
         url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        taken = threading.Event()

        def take() -> None:
            with getattr(postlock, name)(url, IID):
                taken.set()

        waiter = threading.Thread(target=take)
        waiter.start()
        assert not taken.wait(1.0)  # the other process holds it
        child.stdin.write("\n")
        child.stdin.flush()
        assert taken.wait(30) and child.wait(30) == 0
        waiter.join(30)
    finally:
        if child.poll() is None:
            child.kill()
