"""`triage serve` under load and across a crash: nothing acknowledged is lost."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.serving import fixture_bytes, with_run
from tests.support.serve import PR, REPO, RUN, WITH_PR, add_run, runs

N = 200
DISTINCT = 25  # runs: each delivered 8 times under different delivery ids (re-runs, job events)


@pytest.mark.slow
def test_200_concurrent_deliveries_are_each_recorded_once_and_healthz_answers(server, fake_github, tmp_path):
    for i in range(DISTINCT):
        add_run(fake_github, RUN + i)
    srv = server("--workers", "4")
    body = fixture_bytes(WITH_PR)
    bodies = [with_run(body, RUN + i % DISTINCT) for i in range(N)]
    health: list[tuple[int, float]] = []
    sending = threading.Event()

    def watch() -> None:  # /healthz, all along
        with httpx.Client(timeout=5) as client:
            for _ in range(2000):  # bounded: at most ~2000 probes
                t0 = time.monotonic()
                try:
                    code = client.get(f"{srv.url}/healthz").status_code
                except httpx.HTTPError:
                    code = 0
                health.append((code, time.monotonic() - t0))
                if not sending.is_set() and len(health) > 5:
                    return
                time.sleep(0.05)

    sending.set()
    watcher = threading.Thread(target=watch)
    watcher.start()
    # every delivery once, and a quarter of them twice (redeliveries racing the first)
    order = [(f"load-{i}", i) for i in range(N)] + [(f"load-{i}", i) for i in range(0, N, 4)]
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(lambda x: srv.send(bodies[x[1]], "workflow_run", x[0]).json()["outcome"], order))
    assert answers.count("queued") == N and answers.count("duplicate") == N // 4
    rows = srv.wait_settled(N, timeout=300)
    sending.clear()
    watcher.join(timeout=30)
    assert len(rows) == N and {r[0] for r in rows} == {f"load-{i}" for i in range(N)}
    assert all(r[1:3] == ("done", 1) for r in rows), [r for r in rows if r[1:3] != ("done", 1)][:3]
    assert len(runs(tmp_path)) == 2 * DISTINCT  # two configs per run, none lost
    (comment,) = fake_github.comments(REPO, PR)  # one comment, and the last post shows every run
    assert all(str(RUN + i) in comment["body"] for i in range(DISTINCT))
    # a burst for one PR coalesces: a delivery leaves its post to one of the same PR still to come (queued,
    # or running and not yet through), so the last one posts what all recorded (triage.serve.handoff)
    edits = len(fake_github.calls("PATCH"))
    assert edits <= 5, edits
    # every probe answered 200 within the client's 5-s timeout (a probe that timed out is code 0): the
    # workers never hold /healthz; how fast it answers is the benchmarks' business, not a test's
    assert len(health) > 10 and all(code == 200 for code, _ in health)
    per_delivery = [x for x in srv.log_lines() if "attempt" in x]
    assert sorted(x["delivery"] for x in per_delivery) == sorted(f"load-{i}" for i in range(N))
    assert all("2 run(s) recorded" in x["detail"] for x in per_delivery)


def test_killed_mid_queue_the_restarted_server_finishes_the_work(server, fake_github, tmp_path):
    for i in range(6):
        add_run(fake_github, RUN + i)
    fake_github.slow("GET", f"/repos/{REPO}/actions/runs/*/jobs", 1.0)
    srv = server("--workers", "1")
    body = fixture_bytes(WITH_PR)
    for i in range(6):
        assert srv.send(with_run(body, RUN + i), "workflow_run", f"crash-{i}").status_code == 202
    deadline = time.monotonic() + 30
    while not any(r[1] == "running" for r in srv.deliveries()) and time.monotonic() < deadline:
        time.sleep(0.05)
    srv.kill()  # SIGKILL: no shutdown, one delivery left running, the rest queued
    states = [r[1] for r in srv.deliveries()]
    assert len(states) == 6 and "running" in states and states.count("done") < 5

    fake_github._injections.clear()
    again = server("--workers", "2")
    rows = again.wait_settled(6)
    assert [r[1] for r in rows] == ["done"] * 6
    assert len(runs(tmp_path)) == 12
    assert len(fake_github.comments(REPO, PR)) == 1
    started = [x for x in again.log_lines() if x.get("outcome") == "started"]
    assert started[-1]["recovered"] == 1


def test_sigterm_finishes_the_delivery_in_hand_and_keeps_the_rest_queued(server, fake_github, tmp_path):
    for i in range(4):
        add_run(fake_github, RUN + i)
    fake_github.slow("GET", f"/repos/{REPO}/actions/runs/*/jobs", 1.5)
    srv = server("--workers", "1")
    body = fixture_bytes(WITH_PR)
    for i in range(4):
        assert srv.send(with_run(body, RUN + i), "workflow_run", f"term-{i}").status_code == 202
    deadline = time.monotonic() + 30
    while not any(r[1] == "running" for r in srv.deliveries()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.stop() in (0, -15)  # SIGTERM: uvicorn shuts down, then ends by the signal it got
    states = [r[1] for r in srv.deliveries()]
    assert "running" not in states and states.count("done") >= 1 and states.count("queued") >= 2
    stopped = [x for x in srv.log_lines() if x.get("outcome") == "stopped"]
    assert stopped and stopped[-1]["queued"] == states.count("queued")

    fake_github._injections.clear()
    again = server()
    assert [r[1] for r in again.wait_settled(4)] == ["done"] * 4
    assert len(runs(tmp_path)) == 8
