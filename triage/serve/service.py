"""What one ``triage serve`` process runs beside its routes: the delivery queue,
the workers that take deliveries from it, the heartbeat that keeps their leases,
and the start and stop of all three (the app's lifespan).

The workers (``--workers N`` tasks, each handing its delivery to a thread of a
pool) take deliveries from the queue in the knowledge base, each on a lease that
a heartbeat renews (``--lease``); at shutdown each finishes the delivery it holds
within half the grace period, and the rest stay queued, for another replica or
the next start.  The routes reach it as ``request.app.state.service``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

from starlette.concurrency import run_in_threadpool

from triage import limits

from .intake import Intake
from .queue import Queue
from .worker import Locks, Processor

__all__ = ["Service"]

log = logging.getLogger("triage.serve")


class Service:
    def __init__(self, settings: Any, credentials: Any, post: Callable[..., Any]) -> None:
        self.settings = settings
        self.queue = Queue(settings.db_url, max_attempts=settings.max_attempts, backoff=settings.backoff,
                           lease=settings.lease)
        self.processor = Processor(settings.db_url, self.queue, credentials, post, locks=Locks(),
                                   bot_login=settings.bot_login)
        self.intake = Intake(settings.secret, settings.max_body)
        self.wake = asyncio.Event()  # a delivery was stored: a waiting worker looks at once
        self.stopping = asyncio.Event()
        self.workers = max(1, settings.workers)
        self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="triage-worker")
        self.tasks: list[asyncio.Task] = []
        self.steps: dict[int, float] = {}  # worker number -> when its current step began
        self.beating = threading.Event()  # set: the heartbeat stops

    def health(self) -> tuple[bool, int, int]:
        """Whether the server works, its live workers and the stuck ones (a worker is stuck when one
        step, a claim or a delivery, has taken it longer than TRIAGE_MAX_STEP_SECONDS); from memory."""
        alive = sum(not task.done() for task in self.tasks)
        now, limit = time.monotonic(), limits.seconds("stuck_seconds")
        stuck = sum(now - since > limit for since in self.steps.values())
        return alive > stuck, alive, stuck

    async def work(self, number: int) -> None:
        """One worker: claim a due delivery, handle it in the pool, again; wait for a wake-up or
        the poll interval when there is none."""
        loop = asyncio.get_running_loop()
        while not self.stopping.is_set():
            self.steps[number] = time.monotonic()  # each step starts the clock again
            try:
                delivery = await loop.run_in_executor(self.pool, self.queue.claim)
            except Exception as e:  # the database hiccupped: wait, try again
                log.error(json.dumps({"outcome": "claim failed", "error": type(e).__name__}))
                delivery = None
            if delivery is None:
                try:
                    await asyncio.wait_for(self.wake.wait(), timeout=self.settings.poll)
                except asyncio.TimeoutError:
                    pass
                self.wake.clear()
                continue
            self.steps[number] = time.monotonic()
            try:
                await loop.run_in_executor(self.pool, self.processor.handle, delivery)
            except Exception as e:  # it could not even be settled: it stays running until its lease runs out
                log.error(json.dumps({"delivery": delivery.id, "outcome": "not settled", "error": type(e).__name__}))
                await asyncio.sleep(self.settings.poll)

    def heartbeat(self) -> None:
        """Renew the leases of the deliveries this replica holds, three times a lease: in a
        thread of its own, so that neither a busy event loop nor a full pool delays it."""
        while not self.beating.wait(self.settings.lease / 3):
            try:
                self.queue.renew()
            except Exception as e:  # the database hiccupped: the next beat tries again
                log.error(json.dumps({"outcome": "lease not renewed", "error": type(e).__name__}))

    @asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """Recover what a dead process of this host held, start the workers and the heartbeat;
        at the end, give the workers half the grace period to finish."""
        recovered = await run_in_threadpool(self.queue.recover)
        counts = await run_in_threadpool(self.queue.counts)
        log.info(json.dumps({"outcome": "started", "replica": self.queue.replica, "workers": self.settings.workers,
                             "recovered": recovered, "queued": counts.get("queued", 0)}))
        self.tasks[:] = [asyncio.create_task(self.work(i)) for i in range(self.workers)]
        beat = threading.Thread(target=self.heartbeat, name="triage-heartbeat", daemon=True)
        beat.start()
        try:
            yield
        finally:
            self.stopping.set()
            self.wake.set()
            done, pending = await asyncio.wait(self.tasks, timeout=self.settings.grace / 2)
            self.beating.set()
            for task in pending:
                task.cancel()
            self.pool.shutdown(wait=False, cancel_futures=True)
            counts = self.queue.counts()
            log.info(json.dumps({"outcome": "stopped", "queued": counts.get("queued", 0),
                                 "unfinished": len(pending)}))
