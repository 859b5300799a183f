"""The ASGI app: the webhook, the dashboard, and the worker pool (Starlette, uvicorn).

Routes:

* ``POST /webhook``: size limit (413), ``X-Hub-Signature-256`` (401, nothing
  stored), JSON (400); ``ping`` 200; a completed ``workflow_run`` or
  ``workflow_job`` is stored in the queue and answered 202 at once (200 for a
  redelivery, which changes nothing, unless that delivery had failed: then it
  is queued again); so is a new comment holding ``/triage`` (``issue_comment``
  / ``created``; an edit is not); anything else 202, ignored.
* ``GET /`` every investigation; ``GET /pr/{owner}/{name}/{n}`` one report as
  HTML, ``…/{n}.json`` as JSON; ``GET /deliveries`` (``.json``) the failed and
  recent deliveries; all read-only, behind ``--auth TOKEN`` when given.
* ``GET /healthz``: 200 while the workers run (answered from memory).

The workers (``--workers N`` threads) take deliveries from the queue in the
knowledge base, each on a lease that a heartbeat renews (``--lease``); at
shutdown each finishes the delivery it holds and the rest stay queued, for
another replica or the next start.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Callable, Optional

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from triage import limits
from triage.errors import InputError, RuntimeFailure, TriageError

from . import dashboard, webhook
from .intake import Intake, Refused
from .queue import Queue
from .worker import Locks, Processor, log_delivery

__all__ = ["Settings", "create_app", "run"]

log = logging.getLogger("triage.serve")
DELIVERY_ID_MAX = 128
MAX_PR = 2**31 - 1
MIN_SECRET = 16


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
    lease: float = 60.0  # how long a claimed delivery stays this replica's without a heartbeat
    bot_login: Optional[str] = None
    open_dashboard: bool = False  # no token though not on loopback: said on purpose
    dashboard_url: Optional[str] = None  # where people reach the dashboard: the check run links there


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _reply(status: int, **body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def create_app(settings: Settings, credentials: Any, post: Optional[Callable[..., Any]] = None) -> Starlette:
    """The app; ``post(client, pr, repo, bot_login=...)`` posts a comment (default: the
    use case :func:`triage.usecases.post.post_report` on ``settings.db_url``)."""
    if post is None:
        from functools import partial

        from triage.usecases.post import post_report

        # As an App, the check run is set with the comment (a plain token may not write one).
        post = partial(post_report, settings.db_url, check_run=getattr(credentials, "kind", "") == "app",
                       dashboard=settings.dashboard_url)
    queue = Queue(settings.db_url, max_attempts=settings.max_attempts, backoff=settings.backoff, lease=settings.lease)
    processor = Processor(settings.db_url, queue, credentials, post, locks=Locks(), bot_login=settings.bot_login)
    intake = Intake(settings.secret, settings.max_body)
    wake = asyncio.Event()
    stopping = asyncio.Event()

    async def receive(request: Request) -> Response:
        started = time.monotonic()
        event = request.headers.get("x-github-event", "")
        delivery = request.headers.get("x-github-delivery", "")
        fields = {"delivery": delivery[:DELIVERY_ID_MAX] or None, "event": event[:64] or None}

        def answer(status: int, outcome: str, action: Optional[str] = None, **body: Any) -> JSONResponse:
            log_delivery(**fields, action=action, investigation=None, outcome=outcome, http=status,
                         ms=round((time.monotonic() - started) * 1000))
            return _reply(status, outcome=outcome, **body)

        body = await intake.read(request)
        if isinstance(body, Refused):
            refused = answer(body.status, body.outcome, **body.extra)
            refused.headers["connection"] = "close"  # the rest of its body is not read, nor waited for
            return refused
        if not event or not delivery or len(delivery) > DELIVERY_ID_MAX or not delivery.isprintable():
            return answer(400, "missing X-GitHub-Event or X-GitHub-Delivery")
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: nested past Python's stack
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
                                         installation_id if isinstance(installation_id, int) else None,
                                         webhook.subject(event, payload))
        if stored == "duplicate":
            return answer(200, "duplicate", action)
        wake.set()
        return answer(202, stored, action, delivery=delivery)

    def authorised(request: Request) -> bool:
        if not settings.auth:
            return True
        scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
        # the scheme is case-insensitive (RFC 9110 11.1), the token is not
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode("utf-8", "replace"), settings.auth.encode("utf-8", "replace"))

    def guarded(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def wrapped(request: Request) -> Response:
            if not authorised(request):
                log.info(json.dumps({"path": request.url.path[:200], "outcome": "authorization required",
                                     "http": 401}))
                return PlainTextResponse("authorization required\n", status_code=401,
                                         headers={"WWW-Authenticate": "Bearer"})
            return await handler(request)
        return wrapped

    async def index(request: Request) -> Response:
        rows = await run_in_threadpool(dashboard.overview, settings.db_url)
        return html_page(request, dashboard.render("index.html.j2", rows=rows))

    async def investigation(request: Request) -> Response:
        p = request.path_params
        number, as_json = p["number"], False
        if number.endswith(".json"):
            number, as_json = number[:-5], True
        if not number.isdigit() or len(number) > 10 or not 1 <= int(number) <= MAX_PR:
            return PlainTextResponse("not found\n", status_code=404)
        found = await run_in_threadpool(dashboard.investigation_page, settings.db_url,
                                        f"{p['owner']}/{p['name']}", int(number))
        if found is None:
            return PlainTextResponse("no such investigation\n", status_code=404)
        model, history, colour, why = found
        if as_json:
            from triage.render.report import to_json

            return Response(to_json(model), media_type="application/json")
        return html_page(request, dashboard.render("page.html.j2", model=model, history=history, colour=colour,
                                                   why=why))

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
        # A worker is stuck when one step (a claim, a delivery) has taken it
        # longer than TRIAGE_MAX_STEP_SECONDS.
        alive = sum(not task.done() for task in tasks)
        now, limit = time.monotonic(), limits.seconds("stuck_seconds")
        stuck = sum(now - since > limit for since in steps.values())
        ok = alive > stuck
        return _reply(200 if ok else 503, ok=ok, workers=alive, stuck=stuck)

    pool = ThreadPoolExecutor(max_workers=max(1, settings.workers), thread_name_prefix="triage-worker")
    tasks: list[asyncio.Task] = []
    steps: dict[int, float] = {}  # worker number -> when its current step began

    async def work(number: int) -> None:
        loop = asyncio.get_running_loop()
        while not stopping.is_set():
            steps[number] = time.monotonic()  # each step starts the clock again
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
            steps[number] = time.monotonic()
            try:
                await loop.run_in_executor(pool, processor.handle, delivery)
            except Exception as e:  # it could not even be settled: it stays running until its lease runs out
                log.error(json.dumps({"delivery": delivery.id, "outcome": "not settled", "error": type(e).__name__}))
                await asyncio.sleep(settings.poll)

    beating = threading.Event()

    def heartbeat() -> None:
        """Renew the leases of the deliveries this replica holds, three times a lease: in a
        thread of its own, so that neither a busy event loop nor a full pool delays it."""
        while not beating.wait(settings.lease / 3):
            try:
                queue.renew()
            except Exception as e:  # the database hiccupped: the next beat tries again
                log.error(json.dumps({"outcome": "lease not renewed", "error": type(e).__name__}))

    @asynccontextmanager
    async def lifespan(app: Starlette):
        recovered = await run_in_threadpool(queue.recover)
        counts = await run_in_threadpool(queue.counts)
        log.info(json.dumps({"outcome": "started", "replica": queue.replica, "workers": settings.workers,
                             "recovered": recovered, "queued": counts.get("queued", 0)}))
        tasks[:] = [asyncio.create_task(work(i)) for i in range(max(1, settings.workers))]
        beat = threading.Thread(target=heartbeat, name="triage-heartbeat", daemon=True)
        beat.start()
        try:
            yield
        finally:
            stopping.set()
            wake.set()
            done, pending = await asyncio.wait(tasks, timeout=settings.grace / 2)
            beating.set()
            for task in pending:
                task.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            counts = queue.counts()
            log.info(json.dumps({"outcome": "stopped", "queued": counts.get("queued", 0),
                                 "unfinished": len(pending)}))

    routes = [
        Route("/webhook", receive, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/live.js", live_script, methods=["GET"]),
        Route("/", guarded(index), methods=["GET"]),
        Route("/deliveries", guarded(deliveries), methods=["GET"]),
        Route("/deliveries.json", guarded(deliveries), methods=["GET"]),
        Route("/pr/{owner}/{name}/{number}", guarded(investigation), methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(SecurityHeaders)],
                    exception_handlers={TriageError: failed})
    app.router.redirect_slashes = False  # a redirect would be built from the Host header
    return app


async def failed(request: Request, e: Exception) -> Response:
    """A page that failed with a triage error (a rule-file template past a
    limit): its one line, logged as one line, not a traceback."""
    log.error(json.dumps({"path": request.url.path[:200], "outcome": "error", "error": str(e)[:500]}))
    return PlainTextResponse(f"Error: {e}\n", status_code=500)


def html_page(request: Request, text: str) -> Response:
    """A dashboard page with its ETag; 304 when the asker has it already (the
    pages poll themselves: an unchanged page costs no body)."""
    import hashlib

    tag = '"' + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32] + '"'
    headers = {"ETag": tag, "Cache-Control": "no-cache"}
    if tag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    return HTMLResponse(text, headers=headers)


async def live_script(request: Request) -> Response:
    """The pages' one script (``templates/dashboard/live.js``): it keeps them current without a reload."""
    return Response(dashboard.render("live.js"), media_type="text/javascript",
                    headers={"Cache-Control": "max-age=300"})


class SecurityHeaders:
    """Every answer: no framing, no sniffing, no referrer; the pages load
    nothing from anywhere else (inline styles and SVG, one script of their own,
    ``/live.js``, which may only ask this server for the page again)."""

    HEADERS = [(b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
                b"script-src 'self'; connect-src 'self'; "
                b"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
               (b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", b"no-referrer")]

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + self.HEADERS
            await send(message)

        await self.app(scope, receive, with_headers)


def _logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    for name in ("triage.serve", "triage.github"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.INFO)
        logger.propagate = False


def check_settings(settings: Settings) -> None:
    """Refuse settings that would expose the server: no secret off loopback,
    a short secret, an open dashboard off loopback."""
    if settings.secret is None and not is_loopback(settings.host):
        raise InputError(f"--insecure-no-signature listens on loopback only (127.0.0.1, ::1), not {settings.host}")
    if settings.secret is not None and len(settings.secret.strip()) < MIN_SECRET:
        raise InputError(f"TRIAGE_WEBHOOK_SECRET must hold at least {MIN_SECRET} characters")
    if not settings.auth and not settings.open_dashboard and not is_loopback(settings.host):
        raise InputError(f"--host {settings.host} shows the dashboard to the network: set TRIAGE_DASHBOARD_TOKEN "
                         "(or --auth TOKEN), or pass --open-dashboard to show it to anyone")


def _bind(host: str, port: int) -> Any:
    """The listening socket, before anything else: a server that cannot bind
    must not take over the queue of the one that did."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise RuntimeFailure(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run(settings: Settings, post: Optional[Callable[..., Any]] = None) -> None:
    """Start the server (blocks until SIGINT/SIGTERM).  Within ``grace``
    seconds of the signal it is gone: connections and the deliveries under
    way get half each, then whatever still runs is left (the queue finds it
    at the next start)."""
    import uvicorn

    from .auth import describe, from_environment

    check_settings(settings)
    sock = _bind(settings.host, settings.port)
    # Threads that evaluate (pages, deliveries) hold the GIL for its switch
    # interval at a time: a shorter one lets the event loop store a webhook
    # sooner while they work.
    sys.setswitchinterval(0.001)
    _logging()
    credentials = from_environment()
    app = create_app(settings, credentials, post)
    log.info(json.dumps({"outcome": "listening", "url": f"http://{settings.host}:{settings.port}",
                         "github": describe(credentials), "signatures": settings.secret is not None}))
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=max(1, int(settings.grace / 2)))

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            _stop_within(settings.grace)
            super().handle_exit(sig, frame)

    Server(config).run(sockets=[sock])


def _stop_within(grace: float) -> None:
    """A backstop: end the process ``grace`` seconds after the first signal
    even if a thread is stuck (a network call, a lock)."""
    import os
    import threading

    if getattr(_stop_within, "armed", False):
        return
    _stop_within.armed = True  # type: ignore[attr-defined]

    def stop() -> None:
        time.sleep(grace)
        log.info(json.dumps({"outcome": "stopped", "forced": True, "after_seconds": grace}))
        logging.shutdown()
        os._exit(1)

    threading.Thread(target=stop, name="triage-stop", daemon=True).start()
