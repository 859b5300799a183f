"""Racing writers and posters (issue #14): separate ``triage`` processes at once,
on SQLite and PostgreSQL, through bench/bench_concurrency.py in its short form."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench import bench_concurrency as bench
from tests.conftest import EXAMPLE_RUNS, RULES
from tests.support.postgres import database


def _prepare(cli, db: str, *args: str) -> str:
    """What the benchmark's prepare does, in this process (quicker)."""
    r = cli("--db", db, "--rules", str(RULES), *(args or ("import", os.devnull)))
    assert r.code == 0, r.err
    return db


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db(request, tmp_path, cli):
    """An empty knowledge base of each kind, with the bundled rules loaded."""
    if request.param == "sqlite":
        yield _prepare(cli, str(tmp_path / "kb.sqlite"))
        return
    with database() as url:
        yield _prepare(cli, url)


def test_the_same_new_run_from_many_processes_is_one_row(db):
    """Reproduction: 16 add-run of one new run at once -> 15 failed with a
    UNIQUE violation (SQLite) or duplicate key (PostgreSQL)."""
    out = bench.same_run(db, 4)
    assert out.failures == []
    assert out.rows == 1


def test_many_writers_lose_nothing_and_fail_nowhere(db):
    """Reproduction: 3 of 800 concurrent SQLite writes failed with "database is locked"."""
    out = bench.add_runs(db, 3, 2)
    assert out.failures == []
    assert (out.rows, out.duplicates) == (6, 0)


def test_parallel_imports_count_each_new_run_once(db, tmp_path):
    """Three imports of one file at once: together they report each run new exactly once."""
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(lambda _: bench.triage(db, "import", str(EXAMPLE_RUNS)), range(3)))
    assert [r.returncode for r in results] == [0, 0, 0], [r.stderr for r in results]
    # a record without updated_at counts as written when its import started, so one that a parallel
    # import wrote later is kept as the newer: either way every other record is accounted for
    said = r": (\d+) new, (\d+) updated(?:, (\d+) older \(kept the newer\))?$"
    counts = [[int(x or 0) for x in re.search(said, r.stdout.strip()).groups()] for r in results]
    assert sum(new for new, _, _ in counts) == 33
    assert sum(updated + older for _, updated, older in counts) == 66
    assert bench.counts(db) == (33, 0)


@pytest.fixture
def posted_db(db, cli):
    """The bundled investigation with its runs, ready to post."""
    return _prepare(cli, db, "import", str(EXAMPLE_RUNS))


def test_concurrent_posts_leave_one_comment(posted_db, fake_github):
    """Reproduction: 8 posts at once on one PR made two comments in 7 of 18 rounds."""
    out = bench.posts([posted_db], 3, 2, fake_github)
    assert out.failures == []
    assert out.comments == [1, 1]


def test_posts_that_race_past_the_lock_delete_their_own_duplicate(fake_github, tmp_path, cli):
    """Posts through separate knowledge bases share no lock: each one that
    created a comment newer than another's deletes its own."""
    dbs = [_prepare(cli, str(tmp_path / f"kb{i}.sqlite"), "import", str(EXAMPLE_RUNS)) for i in range(3)]
    out = bench.posts(dbs, 3, 2, fake_github)
    assert out.failures == []
    assert out.comments == [1, 1]
    deletes = fake_github.calls("DELETE")
    assert all(r.path.startswith("/repos/sgl-project/sglang/issues/comments/") for r in deletes)


def test_a_duplicate_check_never_touches_another_accounts_comment(client, fake_github):
    """An older comment with our marker by someone else is left alone, and
    ours is neither deleted nor folded into theirs."""
    from triage.github.comments import upsert_comment

    marker = "<!-- triage:x -->"
    theirs = fake_github.add_comment("o/r", 7, f"quoting the bot {marker}", login="someone-else")
    result = upsert_comment(client, "o/r", 7, f"report {marker}", marker)
    assert result.action == "created"
    comments = fake_github.comments("o/r", 7)
    assert [c["id"] for c in comments] == [theirs["id"], result.comment_id]
    assert comments[0]["body"] == f"quoting the bot {marker}"
    assert fake_github.calls("DELETE") == []


def test_a_create_that_lost_the_race_deletes_itself_and_edits_the_older(client, fake_github, monkeypatch):
    """Another writer's comment appears between our listing and our create:
    ours is deleted, theirs carries our body."""
    from triage.github import comments as mod

    marker = "<!-- triage:y -->"
    real = mod._create

    def racing(*args, **kw):
        fake_github.add_comment("o/r", 8, f"other writer {marker}", login="triage-bot")
        return real(*args, **kw)

    monkeypatch.setattr(mod, "_create", racing)
    result = mod.upsert_comment(client, "o/r", 8, f"report {marker}", marker)
    comments = fake_github.comments("o/r", 8)
    assert len(comments) == 1
    assert comments[0]["body"] == f"report {marker}"
    assert (result.action, result.comment_id) == ("updated", comments[0]["id"])
    assert len(fake_github.calls("DELETE")) == 1


def test_benchmark_script_short_form(db, capsys):
    """bench/bench_concurrency.py end to end, with the smallest numbers, on
    SQLite and PostgreSQL: the tests above run its scenarios at larger sizes."""
    assert bench.main(["--db", db, "--procs", "2", "--runs", "1", "--posters", "2", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 runs, 0 errors, 0 duplicates" in out
    assert "comments per round [1]" in out and out.rstrip().endswith("OK")


def test_a_writer_that_read_before_another_created_the_run_still_succeeds(db, monkeypatch):
    """The same-run race, made certain: writer A has looked for the run (not
    there) when writer B records it; A then writes too. Before: A failed with
    a UNIQUE violation, a duplicate key or "database is locked"."""
    import threading
    import time

    from triage.kb import runs, store

    url = store.resolve_url(db)
    real_now = store.now
    a_looked, b_started = threading.Event(), threading.Event()

    def now():
        if threading.current_thread().name == "A" and not a_looked.is_set():
            a_looked.set()  # A has read: no such run
            b_started.wait(10)
            time.sleep(0.5)  # B writes now, or waits for A's lock
        return real_now()

    monkeypatch.setattr(runs, "now", now)  # the clock upsert_run reads
    errors: list[BaseException] = []

    def write(note: str) -> None:
        try:
            with store.session(url) as s:
                inv = store.find_investigation(s, 30433)
                store.upsert_run(s, inv.id, store.RunInput(run_id="r1", config=bench.CONFIG, status="failed",
                                                           note=note))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    a = threading.Thread(target=write, args=("from A",), name="A")
    a.start()
    assert a_looked.wait(30)
    b = threading.Thread(target=write, args=("from B",), name="B")
    b_started.set()
    b.start()
    a.join(60)
    b.join(60)
    assert errors == []
    assert bench.counts(db) == (1, 0)


def _hold_post_lock(url: str, iid: str, entered, release) -> "threading.Thread":
    """A thread that takes ``iid``'s post lock, says so, and keeps it until ``release``."""
    import threading

    from triage.kb.postlock import post_lock

    def hold() -> None:
        with post_lock(url, iid):
            entered.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    assert entered.wait(30)
    return t


def test_posts_of_one_investigation_take_turns_and_other_writers_do_not_wait(db):
    """While a post holds its lock (waiting for GitHub), a second post of the
    same investigation waits, a post of another investigation and a write to
    the knowledge base do not; the lock leaves nothing behind."""
    import threading
    import time

    from triage.kb import models as m
    from triage.kb import store
    from triage.kb.postlock import lease_key, post_lock

    url = store.resolve_url(db)
    first_in, release = threading.Event(), threading.Event()
    holder = _hold_post_lock(url, "kimik26-disagg", first_in, release)
    second_in = threading.Event()

    def second() -> None:
        with post_lock(url, "kimik26-disagg"):
            second_in.set()

    waiter = threading.Thread(target=second)
    waiter.start()
    try:
        with post_lock(url, "another-investigation"):  # another investigation's post: at once
            pass
        started = time.monotonic()
        with store.session(url) as s:  # a writer (add-run, import): at once, not after the post
            inv = store.find_investigation(s, 30433)
            store.upsert_run(s, inv.id, store.RunInput(run_id="during-post", config=bench.CONFIG, status="passed"))
        assert time.monotonic() - started < 5
        assert not second_in.wait(0.5)  # the same investigation's second post waits its turn
    finally:
        release.set()
        holder.join(30)
    assert second_in.wait(30)
    waiter.join(30)
    with store.session(url) as s:
        assert s.get(m.Meta, lease_key("kimik26-disagg")) is None


def test_a_lease_left_by_a_killed_post_is_taken_over_at_once(tmp_path, cli):
    """SQLite: a post killed while holding its lease leaves the row; the next
    post of this host sees its process gone and takes the lease."""
    import json
    import socket
    import subprocess
    import sys
    import time

    from triage.kb import models as m
    from triage.kb import store
    from triage.kb.postlock import lease_key, post_lock

    url = store.resolve_url(_prepare(cli, str(tmp_path / "kb.sqlite")))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with store.session(url) as s:
        s.add(m.Meta(key=lease_key("kimik26-disagg"), value=json.dumps(
            {"host": socket.gethostname(), "pid": gone.pid, "token": "x", "until": time.time() + 3600})))
    started = time.monotonic()
    with post_lock(url, "kimik26-disagg"):
        assert time.monotonic() - started < 5


def test_a_lease_holds_until_it_expires_or_its_process_is_gone():
    import json
    import os
    import time

    from triage.kb.postlock import _held

    def lease(**kw) -> str:
        return json.dumps({"host": "another-host", "pid": 1, "token": "t", "until": time.time() + 60} | kw)

    assert _held(lease())  # another host's: it cannot be asked, so it holds until it expires
    assert not _held(lease(until=time.time() - 1))
    assert _held(lease(host=__import__("socket").gethostname(), pid=os.getpid()))
    assert not _held("not json") and not _held("[]") and not _held(lease(until="soon"))
