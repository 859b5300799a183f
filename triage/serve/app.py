"""The ASGI app: the webhook, the dashboard, and the worker pool (Starlette, uvicorn).

Routes:

* ``POST /webhook``: size limit (413), ``X-Hub-Signature-256`` (401, nothing
  stored), JSON (400); ``ping`` 200; a completed ``workflow_run`` or
  ``workflow_job`` is stored in the queue and answered 202 at once (200 for a
  redelivery, which changes nothing, unless that delivery had failed: then it
  is queued again); anything else 202, ignored.
* ``GET /`` every investigation; ``GET /pr/{owner}/{name}/{n}`` one report as
  HTML, ``…/{n}.json`` as JSON; ``GET /deliveries`` (``.json``) the failed and
  recent deliveries; all read-only, behind ``--auth TOKEN`` when given.
* ``GET /healthz``: 200 while the workers run (answered from memory).

The workers (``--workers N`` threads) take deliveries from the queue in the
knowledge base; at shutdown each finishes the delivery it holds and the rest
stay queued for the next start.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Callable, Optional

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from triage.errors import InputError

from . import dashboard, webhook
from .queue import Queue
from .worker import Locks, Processor, log_delivery

__all__ = ["Settings", "create_app", "run"]

log = logging.getLogger("triage.serve")
DELIVERY_ID_MAX = 128


@dataclass
class Settings:
    db_url: str
    secret: Optional[bytes]  # None only with --insecure-no-signature
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 4
    auth: Optional[str] = None
    max_body: int = 25 * 1024 * 1024  # GitHub sends at most 25 MB
    max_attempts: int = 5
    backoff: float = 2.0
    poll: float = 0.5
    grace: float = 30.0
    bot_login: Optional[str] = None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _reply(status: int, **body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def create_app(settings: Settings, credentials: Any, post: Callable[..., Any]) -> Starlette:
    queue = Queue(settings.db_url, max_attempts=settings.max_attempts, backoff=settings.backoff)
    processor = Processor(settings.db_url, queue, credentials, post, locks=Locks(), bot_login=settings.bot_login)
    wake = asyncio.Event()
    stopping = asyncio.Event()

    async def read_body(request: Request) -> Optional[bytes]:
        """The raw body, or None when it exceeds the limit (read no further)."""
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > settings.max_body:
            return None
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > settings.max_body:
                return None
        return bytes(data)

    async def receive(request: Request) -> Response:
        started = time.monotonic()
        event = request.headers.get("x-github-event", "")
        delivery = request.headers.get("x-github-delivery", "")
        fields = {"delivery": delivery[:DELIVERY_ID_MAX] or None, "event": event or None}

        def answer(status: int, outcome: str, action: Optional[str] = None, **body: Any) -> JSONResponse:
            log_delivery(**fields, action=action, investigation=None, outcome=outcome, http=status,
                         ms=round((time.monotonic() - started) * 1000))
            return _reply(status, outcome=outcome, **body)

        body = await read_body(request)
        if body is None:
            return answer(413, "too large", limit=settings.max_body)
        if settings.secret is not None and not webhook.signature_ok(
                settings.secret, body, request.headers.get("x-hub-signature-256")):
            return answer(401, "bad signature")
        if not event or not delivery or len(delivery) > DELIVERY_ID_MAX or not delivery.isprintable():
            return answer(400, "missing X-GitHub-Event or X-GitHub-Delivery")
        try:
            payload = json.loads(body)
        except ValueError:
            return answer(400, "malformed JSON")
        if not isinstance(payload, dict):
            return answer(400, "malformed JSON")
        action = payload.get("action") if isinstance(payload.get("action"), str) else None
        if event == "ping":
            return answer(200, "pong", action)
        if not webhook.wanted(event, payload):
            return answer(202, "ignored", action)
        installation = payload.get("installation")
        installation_id = installation.get("id") if isinstance(installation, dict) else None
        stored = await run_in_threadpool(queue.put, delivery, event, action, payload,
                                         installation_id if isinstance(installation_id, int) else None)
        if stored == "duplicate":
            return answer(200, "duplicate", action)
        wake.set()
        return answer(202, stored, action, delivery=delivery)

    def authorised(request: Request) -> bool:
        if not settings.auth:
            return True
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {settings.auth}".encode())

    def guarded(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def wrapped(request: Request) -> Response:
            if not authorised(request):
                return PlainTextResponse("authorization required\n", status_code=401,
                                         headers={"WWW-Authenticate": "Bearer"})
            return await handler(request)
        return wrapped

    async def index(request: Request) -> Response:
        rows = await run_in_threadpool(dashboard.overview, settings.db_url)
        return HTMLResponse(dashboard.render("index.html.j2", rows=rows))

    async def investigation(request: Request) -> Response:
        p = request.path_params
        number, as_json = p["number"], False
        if number.endswith(".json"):
            number, as_json = number[:-5], True
        if not number.isdigit() or int(number) < 1:
            return PlainTextResponse("not found\n", status_code=404)
        found = await run_in_threadpool(dashboard.investigation_page, settings.db_url,
                                        f"{p['owner']}/{p['name']}", int(number))
        if found is None:
            return PlainTextResponse("no such investigation\n", status_code=404)
        model, history, colour, why = found
        if as_json:
            from triage.render.report import to_json

            return Response(to_json(model), media_type="application/json")
        return HTMLResponse(dashboard.render("page.html.j2", model=model, history=history, colour=colour, why=why))

    async def deliveries(request: Request) -> Response:
        counts = await run_in_threadpool(queue.counts)
        failed = await run_in_threadpool(queue.listing, "failed")
        recent = await run_in_threadpool(queue.listing, None, 50)
        if request.url.path.endswith(".json"):
            keep = ("id", "event", "action", "state", "attempts", "received_at", "finished_at", "outcome")
            return _reply(200, counts=counts, failed=[{k: str(getattr(d, k)) for k in keep} for d in failed])
        return HTMLResponse(dashboard.render("deliveries.html.j2", counts=counts, failed=failed, recent=recent))

    async def healthz(request: Request) -> Response:
        # From memory, on the event loop: it answers while the workers and the
        # knowledge base are busy (the queue's counts are at /deliveries.json).
        alive = sum(not task.done() for task in tasks)
        return _reply(200 if alive else 503, ok=bool(alive), workers=alive)

    pool = ThreadPoolExecutor(max_workers=max(1, settings.workers), thread_name_prefix="triage-worker")
    tasks: list[asyncio.Task] = []

    async def work() -> None:
        loop = asyncio.get_running_loop()
        while not stopping.is_set():
            try:
                delivery = await loop.run_in_executor(pool, queue.claim)
            except Exception as e:  # the database hiccupped: wait, try again
                log.error(json.dumps({"outcome": "claim failed", "error": type(e).__name__}))
                delivery = None
            if delivery is None:
                try:
                    await asyncio.wait_for(wake.wait(), timeout=settings.poll)
                except asyncio.TimeoutError:
                    pass
                wake.clear()
                continue
            try:
                await loop.run_in_executor(pool, processor.handle, delivery)
            except Exception as e:  # it could not even be settled: it stays running until the next start
                log.error(json.dumps({"delivery": delivery.id, "outcome": "not settled", "error": type(e).__name__}))
                await asyncio.sleep(settings.poll)

    @asynccontextmanager
    async def lifespan(app: Starlette):
        recovered = await run_in_threadpool(queue.recover)
        counts = await run_in_threadpool(queue.counts)
        log.info(json.dumps({"outcome": "started", "workers": settings.workers, "recovered": recovered,
                             "queued": counts.get("queued", 0)}))
        tasks[:] = [asyncio.create_task(work()) for _ in range(max(1, settings.workers))]
        try:
            yield
        finally:
            stopping.set()
            wake.set()
            done, pending = await asyncio.wait(tasks, timeout=settings.grace)
            for task in pending:
                task.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            counts = queue.counts()
            log.info(json.dumps({"outcome": "stopped", "queued": counts.get("queued", 0),
                                 "unfinished": len(pending)}))

    routes = [
        Route("/webhook", receive, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/", guarded(index), methods=["GET"]),
        Route("/deliveries", guarded(deliveries), methods=["GET"]),
        Route("/deliveries.json", guarded(deliveries), methods=["GET"]),
        Route("/pr/{owner}/{name}/{number}", guarded(investigation), methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for name in ("triage.serve", "triage.github"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO)
        logger.propagate = False


def run(settings: Settings, post: Callable[..., Any]) -> None:
    """Start the server (blocks until SIGINT/SIGTERM)."""
    import uvicorn

    from .auth import describe, from_environment

    if settings.secret is None and not is_loopback(settings.host):
        raise InputError(f"--insecure-no-signature listens on loopback only (127.0.0.1, ::1), not {settings.host}")
    _logging()
    credentials = from_environment()
    app = create_app(settings, credentials, post)
    log.info(json.dumps({"outcome": "listening", "url": f"http://{settings.host}:{settings.port}",
                         "github": describe(credentials), "signatures": settings.secret is not None}))
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning", access_log=False,
                timeout_graceful_shutdown=int(settings.grace), lifespan="on")
