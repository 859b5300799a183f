"""The ASGI app (Starlette, uvicorn): the routes (:mod:`triage.serve.routes`) and
the process's queue, workers and heartbeat (:mod:`triage.serve.service`),
assembled; the settings; and the process itself: bound, started, stopped.

The server's :class:`Settings` are what ``triage serve`` was given; what the
environment configures (GitHub's API and credentials, the limits) comes in
as :class:`triage.settings.Settings`, read by the command (or by
:func:`create_app` when none is given).

A server that cannot bind its port does not touch the queue; SIGINT or SIGTERM
ends it within its grace period (``--grace``), whatever a thread is doing.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from starlette.applications import Starlette
from starlette.middleware import Middleware

from triage import settings as config
from triage.errors import InputError, RuntimeFailure, TriageError

from .routes import ROUTES, SecurityHeaders, failed
from .service import Service

__all__ = ["Settings", "create_app", "run"]

log = logging.getLogger("triage.serve")
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
    templates: Optional[str] = None  # a directory whose templates override ours (TRIAGE_TEMPLATES)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(settings: Settings, credentials: Any, post: Optional[Callable[..., Any]] = None, *,
               environment: Optional[config.Settings] = None) -> Starlette:
    """The app; ``post(client, pr, repo, bot_login=...)`` posts a comment (default: the
    use case :func:`triage.usecases.post.post_report` on ``settings.db_url``).
    ``environment``'s limits are in force from now on (default: the environment's, read now)."""
    from triage import limits

    limits.configure(config.Settings.from_env() if environment is None else environment)
    if post is None:
        from functools import partial

        from triage.usecases.post import post_report

        # As an App, the check run is set with the comment (a plain token may not write one).
        post = partial(post_report, settings.db_url, check_run=getattr(credentials, "kind", "") == "app",
                       dashboard=settings.dashboard_url, templates=settings.templates)
    service = Service(settings, credentials, post)
    app = Starlette(routes=ROUTES, lifespan=service.lifespan, middleware=[Middleware(SecurityHeaders)],
                    exception_handlers={TriageError: failed})
    app.state.service = service
    app.router.redirect_slashes = False  # a redirect would be built from the Host header
    return app


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


def run(settings: Settings, post: Optional[Callable[..., Any]] = None, *,
        environment: Optional[config.Settings] = None) -> None:
    """Start the server (blocks until SIGINT/SIGTERM), as a GitHub App or with a
    token as ``environment`` says (default: the environment's).  Within ``grace``
    seconds of the signal it is gone: connections and the deliveries under
    way get half each, then whatever still runs is left (the queue finds it
    at the next start)."""
    import uvicorn

    from .auth import describe, from_settings

    environment = config.Settings.from_env() if environment is None else environment

    check_settings(settings)
    sock = _bind(settings.host, settings.port)
    # Threads that evaluate (pages, deliveries) hold the GIL for its switch
    # interval at a time: a shorter one lets the event loop store a webhook
    # sooner while they work.
    sys.setswitchinterval(0.001)
    _logging()
    credentials = from_settings(environment)
    app = create_app(settings, credentials, post, environment=environment)
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
