"""The routes, each a handler of its own; what they share (the queue, the intake,
the settings) is the app's :class:`~triage.serve.service.Service`, at
``request.app.state.service``.

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
* ``GET /live.js``: the pages' one script, which keeps them current.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from typing import Any, Callable, Optional

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from . import dashboard, webhook
from .intake import Refused
from .service import Service
from .worker import log_delivery

__all__ = ["ROUTES", "SecurityHeaders", "failed"]

log = logging.getLogger("triage.serve")
DELIVERY_ID_MAX = 128
MAX_PR = 2**31 - 1


def _service(request: Request) -> Service:
    return request.app.state.service


def _reply(status: int, **body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=status)


async def receive(request: Request) -> Response:
    """A webhook delivery: checked, read, and stored in the queue for a worker."""
    service, started = _service(request), time.monotonic()
    event = request.headers.get("x-github-event", "")
    delivery = request.headers.get("x-github-delivery", "")
    fields = {"delivery": delivery[:DELIVERY_ID_MAX] or None, "event": event[:64] or None}

    def answer(status: int, outcome: str, action: Optional[str] = None, **body: Any) -> JSONResponse:
        log_delivery(**fields, action=action, investigation=None, outcome=outcome, http=status,
                     ms=round((time.monotonic() - started) * 1000))
        return _reply(status, outcome=outcome, **body)

    body = await service.intake.read(request)
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
    stored = await run_in_threadpool(service.queue.put, delivery, event, action, payload,
                                     installation_id if isinstance(installation_id, int) else None,
                                     webhook.subject(event, payload))
    if stored == "duplicate":
        return answer(200, "duplicate", action)
    service.wake.set()
    return answer(202, stored, action, delivery=delivery)


def _authorised(request: Request) -> bool:
    auth = _service(request).settings.auth
    if not auth:
        return True
    scheme, _, given = request.headers.get("authorization", "").strip().partition(" ")
    # the scheme is case-insensitive (RFC 9110 11.1), the token is not
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode("utf-8", "replace"), auth.encode("utf-8", "replace"))


def guarded(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
    """The handler behind the dashboard's token, when the server has one (``--auth``)."""
    async def wrapped(request: Request) -> Response:
        if not _authorised(request):
            log.info(json.dumps({"path": request.url.path[:200], "outcome": "authorization required",
                                 "http": 401}))
            return PlainTextResponse("authorization required\n", status_code=401,
                                     headers={"WWW-Authenticate": "Bearer"})
        return await handler(request)
    return wrapped


async def index(request: Request) -> Response:
    rows = await run_in_threadpool(dashboard.overview, _service(request).settings.db_url)
    return html_page(request, _page(request, "index.html.j2", rows=rows))


async def investigation(request: Request) -> Response:
    p = request.path_params
    number, as_json = p["number"], False
    if number.endswith(".json"):
        number, as_json = number[:-5], True
    if not number.isdigit() or len(number) > 10 or not 1 <= int(number) <= MAX_PR:
        return PlainTextResponse("not found\n", status_code=404)
    found = await run_in_threadpool(dashboard.investigation_page, _service(request).settings.db_url,
                                    f"{p['owner']}/{p['name']}", int(number))
    if found is None:
        return PlainTextResponse("no such investigation\n", status_code=404)
    model, history, colour, why = found
    if as_json:
        from triage.render.report import to_json

        return Response(to_json(model), media_type="application/json")
    return html_page(request, _page(request, "page.html.j2", model=model, history=history, colour=colour, why=why))


async def deliveries(request: Request) -> Response:
    queue = _service(request).queue
    counts = await run_in_threadpool(queue.counts)
    failed = await run_in_threadpool(queue.listing, "failed")
    recent = await run_in_threadpool(queue.listing, None, 50)
    if request.url.path.endswith(".json"):
        keep = ("id", "event", "action", "state", "attempts", "received_at", "finished_at", "outcome")
        return _reply(200, counts=counts, failed=[{k: str(getattr(d, k)) for k in keep} for d in failed])
    return HTMLResponse(_page(request, "deliveries.html.j2", counts=counts, failed=failed, recent=recent))


async def healthz(request: Request) -> Response:
    # From memory, on the event loop: it answers while the workers and the
    # knowledge base are busy (the queue's counts are at /deliveries.json).
    ok, alive, stuck = _service(request).health()
    return _reply(200 if ok else 503, ok=ok, workers=alive, stuck=stuck)


async def live_script(request: Request) -> Response:
    """The pages' one script (``templates/dashboard/live.js``): it keeps them current without a reload."""
    return Response(_page(request, "live.js"), media_type="text/javascript",
                    headers={"Cache-Control": "max-age=300"})


def _page(request: Request, name: str, **context: Any) -> str:
    """The dashboard's template ``name``, with the server's own templates first (``TRIAGE_TEMPLATES``)."""
    return dashboard.render(name, overrides=_service(request).settings.templates, **context)


def html_page(request: Request, text: str) -> Response:
    """A dashboard page with its ETag; 304 when the asker has it already (the
    pages poll themselves: an unchanged page costs no body)."""
    tag = '"' + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32] + '"'
    headers = {"ETag": tag, "Cache-Control": "no-cache"}
    if tag in [t.strip() for t in request.headers.get("if-none-match", "").split(",")]:
        return Response(status_code=304, headers=headers)
    return HTMLResponse(text, headers=headers)


async def failed(request: Request, e: Exception) -> Response:
    """A page that failed with a triage error (a rule-file template past a
    limit): its one line, logged as one line, not a traceback."""
    log.error(json.dumps({"path": request.url.path[:200], "outcome": "error", "error": str(e)[:500]}))
    return PlainTextResponse(f"Error: {e}\n", status_code=500)


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


ROUTES = [
    Route("/webhook", receive, methods=["POST"]),
    Route("/healthz", healthz, methods=["GET"]),
    Route("/live.js", live_script, methods=["GET"]),
    Route("/", guarded(index), methods=["GET"]),
    Route("/deliveries", guarded(deliveries), methods=["GET"]),
    Route("/deliveries.json", guarded(deliveries), methods=["GET"]),
    Route("/pr/{owner}/{name}/{number}", guarded(investigation), methods=["GET"]),
]
