"""The server's parts on their own: signatures, what a payload names, the queue
(on SQLite and on the real PostgreSQL server)."""

from __future__ import annotations

import json
import os
import threading
from datetime import timedelta
from functools import partial

import pytest
from sqlalchemy import update

from tests.support.serving import fixture_bytes
from tests.support.postgres import database
from triage.errors import InputError
from triage.kb import models as m
from triage.kb import store
from triage.serve.queue import Queue
from triage.settings import Settings
from triage.serve.webhook import RunEvent, matches, run_event, signature_ok, wanted


def test_signature_against_githubs_test_vector():
    secret, body = b"It's a Secret to Everybody", b"Hello, World!"
    good = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert signature_ok(secret, body, good)
    for bad in (None, "", good.upper(), good[:-1] + "0", "sha1=" + good[7:], good.replace("sha256=", ""),
                good + "00", "sha256=\u00e9"):
        assert not signature_ok(secret, body, bad), bad
    assert not signature_ok(b"another secret", body, good)


def test_what_the_fixture_payloads_name():
    ev = run_event("workflow_run", json.loads(fixture_bytes("workflow_run.completed.with-pull-requests.json")))
    assert (ev.repo, ev.run_id, ev.workflow, ev.branch, ev.event, ev.prs) == \
        ("octo-org/octo-repo", 289782451, "test", "master", "repository_dispatch", [2])
    assert run_event("workflow_run", json.loads(fixture_bytes("workflow_run.completed.json"))).prs == []
    assert wanted("workflow_run", {"action": "completed"}) and not wanted("workflow_run", {"action": "requested"})
    assert not wanted("check_suite", json.loads(fixture_bytes("check_suite.completed.json")))
    with pytest.raises(InputError, match="the workflow_run payload has no valid 'id'"):
        run_event("workflow_run", {"repository": {"full_name": "o/r"}, "workflow_run": {"id": "1"}})
    with pytest.raises(InputError, match="no valid 'repository'"):
        run_event("workflow_job", {"workflow_job": {"id": 1, "run_id": 2}})


@pytest.mark.parametrize("match, prs, branch, workflow, expected", [
    (None, [2], "feature", "CI", True),                       # the PR's run
    (None, [], "master", "CI", False),                        # no PR, no branch rule
    (None, [3], "master", "CI", False),                       # another PR
    ({"workflow": "Nightly*"}, [2], "x", "CI", False),         # the PR's, but not the workflow
    ({"workflow": ["CI", "Nightly*"]}, [2], "x", "Nightly AMD", True),
    ({"branch": "amd/*"}, [], "amd/mi355x", "CI", True),        # a nightly no PR owns
    ({"branch": "amd/*", "workflow": "Nightly*"}, [], "amd/mi355x", "CI", False),
    ({"branch": "amd/*", "event": "schedule"}, [], "amd/x", "CI", False),  # triggered otherwise
])
def test_which_runs_feed_an_investigation(match, prs, branch, workflow, expected):
    ev = RunEvent("Octo-Org/octo-repo", 1, workflow, branch, "push", prs)
    assert matches("octo-org/octo-repo", 2, match, ev) is expected
    assert not matches("octo-org/other", 2, match, ev)


def test_a_bad_match_in_a_rule_file_is_refused_with_its_place(cli, tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "x.yaml").write_text(
        "schema_version: 1\ninvestigation:\n  id: x\n  repo: o/r\n  pr: 1\n  title: t\n  metric: m\n"
        "  match: {branch: main, config_from: '(unclosed', colour: red}\n")
    r = cli("check")
    assert r.code == 2
    assert "rules/x.yaml:8:" in r.err and "config_from is not a regular expression" in r.err
    assert "colour" in r.err


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'kb.sqlite'}"
        return
    with database() as url:
        yield url


def _expire(url: str, holder: str) -> None:
    """The leases of ``holder`` run out (as when its replica was killed and did not renew them)."""
    with store.session(url) as s:
        s.execute(update(m.Delivery).where(m.Delivery.holder == holder)
                  .values(lease_until=store.now() - timedelta(seconds=1)))


def test_queue_stores_once_claims_once_retries_and_gives_up(db_url):
    q = Queue(db_url, max_attempts=2, backoff=60)
    assert q.put("d1", "workflow_run", "completed", {"a": 1}, 7) == "queued"
    assert q.put("d1", "workflow_run", "completed", {"a": 2}, 7) == "duplicate"  # a redelivery
    for i in range(2, 41):
        assert q.put(f"d{i}", "workflow_run", "completed", {"n": i}, None) == "queued"
    claimed: list[str] = []
    lock = threading.Lock()

    def take() -> None:
        while (d := q.claim()) is not None:
            with lock:
                claimed.append(d.id)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(claimed) == sorted(f"d{i}" for i in range(1, 41))  # each exactly once
    assert q.counts() == {"running": 40}

    assert q.finish("d1", "done", "ok")
    assert q.retry("d2", 1, "HTTP 502") == "queued"
    assert q.claim() is None  # its retry is a minute away
    due = q.next_due()
    assert due is not None and timedelta(seconds=55) < due - q.listing("queued")[0].received_at
    assert q.retry("d3", 2, "HTTP 502 again") == "failed"
    assert [d.id for d in q.listing("failed")] == ["d3"] and q.listing("failed")[0].outcome == "HTTP 502 again"
    assert q.recover() == 0  # what this live process holds stays its own
    with store.session(db_url) as s:
        assert s.get(m.Delivery, "d1").payload == {}  # settled: only its outcome is kept
        assert s.get(m.Delivery, "d3").payload == {"n": 3}
        assert (s.get(m.Delivery, "d1").holder, s.get(m.Delivery, "d2").lease_until) == (None, None)
    assert q.put("d1", "workflow_run", "completed", {"a": 3}, 7) == "duplicate"
    assert q.put("d3", "workflow_run", "completed", {"n": 3}, None) == "requeued"  # failed: redelivered by hand
    assert q.counts() == {"done": 1, "queued": 2, "running": 37}
    assert [d.attempts for d in q.listing("queued") if d.id == "d3"] == [0]


def test_a_lease_holds_while_renewed_and_runs_out_for_another_replica(db_url):
    one, two = Queue(db_url, lease=60), Queue(db_url, lease=60)
    assert one.replica != two.replica
    for i in range(3):
        one.put(f"d{i}", "workflow_run", "completed", {"n": i}, None, "o/r#1")
    held = [one.claim().id for _ in range(3)]
    assert two.claim() is None  # a live replica's work is not taken
    before = {d.id: d.lease_until for d in one.listing("running")}
    assert one.renew() == 3 and two.renew() == 0  # the heartbeat: only its own
    assert all(d.lease_until >= before[d.id] for d in one.listing("running"))

    _expire(db_url, one.replica)  # `one` was killed: its leases run out
    taken = two.claim()
    assert taken is not None and taken.id == held[0] and taken.holder == two.replica and taken.attempts == 2
    assert taken.payload == {"n": 0}
    assert not one.finish(held[0], "done", "late")  # it lost the lease: the new holder's work stands
    assert one.retry(held[0], 1, "late") == "lost"
    assert two.finish(held[0], "done", "ok")
    assert {d.id: (d.state, d.outcome) for d in one.listing()}[held[0]] == ("done", "ok")
    assert one.finish(held[1], "done", "ok")  # not yet taken by another: still its own


def test_a_delivery_whose_leases_keep_running_out_is_given_up(db_url):
    q = Queue(db_url, max_attempts=2, lease=60)
    q.put("poison", "workflow_run", "completed", {}, None)
    for attempt in (1, 2):
        assert q.claim().attempts == attempt
        _expire(db_url, q.replica)
    assert q.claim() is None
    (row,) = q.listing()
    assert row.state == "failed" and "leases ran out" in row.outcome


def test_recover_takes_back_at_once_only_what_dead_processes_of_this_host_held(db_url):
    import socket
    import subprocess
    import sys

    q = Queue(db_url)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = socket.gethostname()
    holders = {"dead": f"{host}:{int(gone.stdout)}:a1", "alive": f"{host}:{os.getpid()}:b2",
               "elsewhere": "another-host:1:c3", "old": None}
    for did, holder in holders.items():
        q.put(did, "workflow_run", "completed", {}, None)
        with store.session(db_url) as s:
            s.execute(update(m.Delivery).where(m.Delivery.id == did)
                      .values(state="running", holder=holder,
                              lease_until=store.now() + timedelta(seconds=60) if holder else None))
    assert q.recover() == 1
    assert {d.id: d.state for d in q.listing()} == {"dead": "queued", "alive": "running", "elsewhere": "running",
                                                     "old": "running"}
    # a server of an older version left "old" running without a lease: it is due now
    assert sorted(q.claim().id for _ in range(2)) == ["dead", "old"] and q.claim() is None


def test_autopilot_runs_after_each_post_under_the_investigations_lock(fake_github, tmp_path, monkeypatch, cli):
    """The hook for `triage autopilot`: run_for(client, db_url, investigation_id) -> str | None."""
    from tests.support.serve import PR, REPO, RUN, WITH_PR, add_run, write_rules
    from triage.serve import worker
    from triage.serve.auth import from_settings
    from triage.usecases.post import post_report

    write_rules(tmp_path)
    add_run(fake_github, RUN)
    assert cli("import", os.devnull).code == 0  # the rule file loaded
    url = store.resolve_url(None)
    locks, calls = worker.Locks(), []

    def run_for(client, db_url, investigation_id):
        slot = locks._slots[investigation_id]
        calls.append((db_url, investigation_id, slot.lock.locked(), len(fake_github.comments(REPO, PR))))
        return "dispatched kimik26-fp8-1k1k-1p1d-aiterdecode"

    monkeypatch.setattr(worker, "_autopilot", lambda: run_for)
    q = Queue(url)
    processor = worker.Processor(url, q, from_settings(Settings.from_env()), partial(post_report, url), locks=locks)
    q.put("auto-1", "workflow_run", "completed", json.loads(fixture_bytes(WITH_PR)), None)
    assert processor.handle(q.claim()) == "done"
    assert calls == [(url, "octo-drop", True, 1)]  # after the post, holding the lock
    (row,) = q.listing()
    assert row.outcome.endswith("comment created, autopilot: dispatched kimik26-fp8-1k1k-1p1d-aiterdecode")


def _processor_on_its_way(fake_github, tmp_path, cli, monkeypatch):
    """A processor whose fetches of run RUN wait until ``go`` is set (a delivery on its way)."""
    from tests.support.serving import with_run
    from tests.support.serve import RUN, WITH_PR, add_run, write_rules
    from triage.ingest import fromgithub
    from triage.serve import worker
    from triage.serve.auth import from_settings
    from triage.usecases.post import post_report

    write_rules(tmp_path)
    add_run(fake_github, RUN)
    add_run(fake_github, RUN + 1)
    assert cli("import", os.devnull).code == 0
    url = store.resolve_url(None)
    q = Queue(url)
    processor = worker.Processor(url, q, from_settings(Settings.from_env()), partial(post_report, url))
    fetching, go, fail = threading.Event(), threading.Event(), []
    real = fromgithub.fetch

    def fetch(client, repo, run_id, **kw):
        if run_id == RUN:
            fetching.set()
            go.wait(10)
            if fail:
                raise RuntimeError("GitHub answered 502")
        return real(client, repo, run_id, **kw)

    monkeypatch.setattr(fromgithub, "fetch", fetch)
    body = fixture_bytes(WITH_PR)
    q.put("slow", "workflow_run", "completed", json.loads(with_run(body, RUN)), None)
    q.put("fast", "workflow_run", "completed", json.loads(with_run(body, RUN + 1)), None)
    return processor, q, fetching, go, fail


def test_a_post_is_left_to_a_delivery_on_its_way(fake_github, tmp_path, monkeypatch, cli):
    """While one delivery for an investigation fetches its jobs, another that records runs
    leaves the comment to it: one post shows both."""
    from tests.support.serve import PR, REPO, RUN

    processor, q, fetching, go, _ = _processor_on_its_way(fake_github, tmp_path, cli, monkeypatch)
    slow = threading.Thread(target=lambda: processor.handle(q.claim()))
    slow.start()
    assert fetching.wait(10)
    assert processor.handle(q.claim()) == "done"
    assert fake_github.comments(REPO, PR) == []  # left to the delivery on its way
    go.set()
    slow.join(10)
    (comment,) = fake_github.comments(REPO, PR)
    assert str(RUN) in comment["body"] and str(RUN + 1) in comment["body"]
    outcomes = {row.id: row.outcome for row in q.listing()}
    assert outcomes["fast"].endswith("comment left to a delivery still to come")
    assert "2 run(s) recorded, comment created" in outcomes["slow"]


def test_a_delivery_that_fails_on_its_way_makes_the_post_left_to_it(fake_github, tmp_path, monkeypatch, cli):
    from tests.support.serve import PR, REPO, RUN

    processor, q, fetching, go, fail = _processor_on_its_way(fake_github, tmp_path, cli, monkeypatch)
    fail.append(True)
    states = []
    slow = threading.Thread(target=lambda: states.append(processor.handle(q.claim())))
    slow.start()
    assert fetching.wait(10)
    assert processor.handle(q.claim()) == "done"
    go.set()
    slow.join(10)
    assert states == ["retrying"]  # its own failure stands, retried later
    (comment,) = fake_github.comments(REPO, PR)  # but the runs the other recorded are posted
    assert str(RUN + 1) in comment["body"] and str(RUN) not in comment["body"]


def test_a_dashboard_page_reads_the_stored_view_and_evaluates_only_after_new_runs(seeded, cli, monkeypatch):
    """A page of an unchanged investigation is the stored view `report` shows, read without an
    evaluation; an add-run stores the view of its own evaluation, which the page then reads
    and which is what a whole evaluation shows."""
    from triage.rules.engine import evaluate as engine
    from triage.serve import dashboard

    from triage.render.report import to_json

    url = f"sqlite:///{seeded.parent / 'kb.sqlite'}"
    report = json.loads(cli("report", "--pr", "30433", "--format", "json").out)
    calls = []
    whole = engine.evaluate
    monkeypatch.setattr(engine, "evaluate", lambda *a, **k: calls.append(1) or whole(*a, **k))
    model, _, colour, _ = dashboard.investigation_page(url, "sgl-project/sglang", 30433)
    assert calls == [] and colour in ("green", "amber", "red")
    assert json.loads(to_json(model)) == report
    assert len(dashboard.overview(url)) == 3 and len(calls) == 2  # the other two were never evaluated yet
    assert len(dashboard.overview(url)) == 3 and len(calls) == 2
    assert cli("add-run", "--pr", "30433", "--run-id", "77", "--config", "kimik26-fp8-1k1k-1p1d",
               "--status", "passed", "--metric", "gsm8k=0.95/1319").code == 0
    assert len(calls) == 3  # add-run's own evaluation, which stores the view as well
    model, *_ = dashboard.investigation_page(url, "sgl-project/sglang", 30433)
    assert len(calls) == 3 and any(r["run_id"] == "77" for r in model["runs"])  # read, not evaluated
    assert json.loads(to_json(model)) == json.loads(cli("report", "--pr", "30433", "--format", "json", "--full").out)
    assert len(calls) == 4  # --full evaluates all the same


def test_a_dashboard_page_of_a_knowledge_base_it_cannot_write_is_evaluated_in_memory(seeded, cli, monkeypatch):
    """When storing the fresh view fails (a read-only file or database user), the page still
    shows it, evaluated in memory, and the knowledge base is left as it was."""
    from contextlib import contextmanager

    from sqlalchemy.exc import OperationalError

    from triage.kb import store
    from triage.serve import dashboard

    url = f"sqlite:///{seeded.parent / 'kb.sqlite'}"
    assert cli("add-run", "--pr", "30433", "--run-id", "78", "--config", "kimik26-fp8-1k1k-1p1d",
               "--status", "passed", "--metric", "gsm8k=0.95/1319").code == 0
    # an exclusion evaluates and leaves the view to its next reader (an add-run stores it)
    assert cli("runs", "exclude", "78", "--pr", "30433", "--because", "a test").code == 0
    writes, real = [], store.session

    @contextmanager
    def refused(u):
        writes.append(u)
        if len(writes) == 1:
            raise OperationalError("UPDATE", {}, Exception("attempt to write a readonly database"))
        with real(u) as s:
            yield s

    monkeypatch.setattr(store, "session", refused)
    model, _, colour, _ = dashboard.investigation_page(url, "sgl-project/sglang", 30433)
    assert writes == [url] and any(r["run_id"] == "78" for r in model["runs"]) and colour
    r = cli("report", "--pr", "30433", "--format", "json")
    assert r.code == 0, r.err
    report = json.loads(r.out)
    assert any(r["run_id"] == "78" for r in report["runs"])


def _streamed(chunks: list[bytes], headers: dict[str, str]):
    """A request whose body arrives in ``chunks``, with no declared size (chunked transfer)."""
    from starlette.requests import Request

    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent: list[bytes] = []

    async def receive() -> dict:
        message = messages.pop(0)
        sent.append(message["body"])
        return message

    scope = {"type": "http", "method": "POST", "path": "/webhook", "query_string": b"",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    return Request(scope, receive), sent


def test_a_streamed_body_is_refused_once_past_the_limit_and_its_signature_checked_as_it_arrives():
    """A body without a declared size is read as it arrives: past the size limit it is refused
    (413) without reading the rest; whole, its HMAC decides (401 or the body)."""
    import asyncio
    import hashlib
    import hmac

    from triage.serve.intake import Intake, Refused

    secret = b"s3cret"
    body = b'{"zen": "Keep it logically awesome."}'
    good = {"X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()}
    intake = Intake(secret, max_body=len(body))
    halves = [body[:10], body[10:]]
    request, _ = _streamed(halves, good)
    assert asyncio.run(intake.read(request)) == body
    request, _ = _streamed(halves, {"X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert asyncio.run(intake.read(request)) == Refused(401, "bad signature")
    request, read = _streamed([body, b"x", b"never read"], good)
    got = asyncio.run(intake.read(request))
    assert got == Refused(413, "too large", {"limit": len(body)}) and read == [body, b"x"]
    assert intake.pending == 0 and intake.uploads == 0  # the places it took are given back
