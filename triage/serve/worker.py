"""One delivery's work: record the run's jobs, evaluate, post; retried on failure.

For each investigation the run feeds (:func:`~triage.serve.webhook.investigations_for`):

1. the run's jobs and logs are fetched (``ingest.fromgithub``, the
   ``--from-github`` path) -- a ``workflow_job`` delivery takes its one job,
   so a long matrix updates as its legs finish;
2. under the investigation's lock (one writer per PR in this process) they
   are recorded (extractors and signatures read each log), then the
   investigation is evaluated and the sticky comment created or updated
   (``post``, the same function as ``triage post``; an unchanged body is not
   written again).  When another delivery for the same investigation is on
   its way (fetching its jobs) or waiting for the lock, the post is left to
   it: its comment shows these runs too, so a burst of deliveries makes a
   few posts, not one each.  A delivery that then records nothing (a job of
   another config, a failure) makes the post left to it, if no other is on
   its way;
3. when ``triage.github.autopilot`` exists, its ``run_for(client, db_url,
   investigation_id)`` runs after each post, under the same lock.

A new comment with ``/triage`` commands (``issue_comment``) is acted on by
:func:`triage.usecases.commands.take` under the lock of the investigation of
its PR, which then posts the comment itself.

A GitHub, network or database failure is retried with backoff (the queue);
a payload that cannot be read fails at once.  Each delivery ends in one
structured log line: event, action, delivery id, investigations, outcome, ms.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from triage.errors import InputError, TriageError
from triage.ingest import fromgithub
from triage.kb import store

from .queue import Queue
from .webhook import RunEvent, comment_event, investigations_for, of_repo, run_event

__all__ = ["Locks", "Processor", "log_delivery"]

log = logging.getLogger("triage.serve")


def log_delivery(**fields: Any) -> None:
    """One JSON line: never a payload, a secret or a token."""
    log.info(json.dumps(fields, ensure_ascii=False, sort_keys=False, default=str))


@dataclass
class Slot:
    """An investigation's lock, how many deliveries for it are on their way (fetching
    from GitHub) or waiting for the lock, and whether runs were recorded that its
    comment does not show yet."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0
    coming: int = 0
    dirty: bool = False


class Locks:
    """One lock per investigation: its runs, its evaluation and its comment have one writer."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._slots: dict[str, Slot] = {}

    def arrive(self, key: str) -> Slot:
        """A delivery for ``key`` is on its way: until it holds the lock (or leaves), a
        post can be left to it."""
        with self._guard:
            slot = self._slots.setdefault(key, Slot())
            slot.coming += 1
            return slot

    def leave(self, slot: Slot) -> None:
        """An arrived delivery goes without taking the lock (nothing to record, or a failure)."""
        with self._guard:
            slot.coming -= 1

    @contextmanager
    def hold(self, key: str, *, arrived: bool = False) -> Iterator[Slot]:
        with self._guard:
            slot = self._slots.setdefault(key, Slot())
            slot.waiting += 1
            if arrived:  # no longer on its way: waiting, in one step
                slot.coming -= 1
        with slot.lock:
            with self._guard:
                slot.waiting -= 1
            yield slot

    def waiting(self, slot: Slot) -> int:
        """Deliveries that will hold the lock after this one: waiting for it, or on their way."""
        with self._guard:
            return slot.waiting + slot.coming


@dataclass
class Outcome:
    state: str  # done | ignored
    text: str
    investigations: list[str] = field(default_factory=list)


def _autopilot() -> Optional[Callable[..., Any]]:
    """``step(client, db_url, investigation_id) -> str | None``: one autopilot step
    (``triage.github.autopilot.run_for``), said in a few words when it did something."""
    if importlib.util.find_spec("triage.github.autopilot") is None:
        return None
    module = importlib.import_module("triage.github.autopilot")
    run_for = getattr(module, "run_for", None)
    if run_for is None:
        return None

    def step(client: Any, db_url: str, iid: str) -> Optional[str]:
        from triage.github.client import GitHubError

        try:
            done = run_for(db_url, iid, client)
        except GitHubError as e:  # a refused dispatch is said, not retried: nothing was recorded
            return f"dispatch refused: {e}"
        if done.action in ("started", "uncertain", "budget"):
            return "; ".join(line.strip() for line in done.lines if line.strip()) or done.action
        return None

    return step


class Processor:
    """Does a claimed delivery's work and settles it in the queue.

    ``post(client, pr, repo, bot_login=...)`` evaluates the investigation,
    upserts its comment (the CLI's ``triage post`` path) and returns the
    :class:`~triage.github.comments.PostResult`, the body and the investigation.
    """

    def __init__(self, url: str, queue: Queue, credentials: Any, post: Callable[..., Any], *,
                 locks: Optional[Locks] = None, bot_login: Optional[str] = None) -> None:
        self.url = url
        self.queue = queue
        self.credentials = credentials
        self.post = post
        self.locks = locks or Locks()
        self.bot_login = bot_login

    def handle(self, delivery: Any) -> str:
        """Process one claimed delivery; settle it; log it; its new state."""
        started = time.monotonic()
        fields = {"delivery": delivery.id, "event": delivery.event, "action": delivery.action}
        try:
            outcome = self.process(delivery)
        except InputError as e:  # the payload or a rule says no: retrying will not help
            state, text, invs = "failed", e.message, []
            self.queue.finish(delivery.id, state, text)
        except Exception as e:  # GitHub, network, database: retry later
            text = e.message if isinstance(e, TriageError) else f"{type(e).__name__}: {' '.join(str(e).split())}"
            text = self._redact(text)
            invs = []
            state = self.queue.retry(delivery.id, delivery.attempts, text)
            state = "retrying" if state == "queued" else state
        else:
            state, text, invs = outcome.state, outcome.text, outcome.investigations
            self.queue.finish(delivery.id, state, text)
        log_delivery(**fields, investigation=",".join(invs) or None, attempt=delivery.attempts, outcome=state,
                     detail=text, ms=round((time.monotonic() - started) * 1000))
        return state

    def _redact(self, text: str) -> str:
        from triage.github.client import GitHubClient

        return GitHubClient._static_redact(text)

    def process(self, delivery: Any) -> Outcome:
        if delivery.event == "issue_comment":
            return self._comment(delivery)
        ev = run_event(delivery.event, delivery.payload)
        with store.session(self.url) as s:
            followed = bool(of_repo(s, ev.repo))
        if not followed:  # settled without a token or a call to GitHub
            return Outcome("ignored", f"no investigation follows {ev.repo}")
        client = self.credentials.client(delivery.installation_id, ev.repo)
        if ev.job is not None:
            self._complete_job_event(client, ev)
        with store.session(self.url) as s:
            targets = [(inv.id, dict((inv.spec or {}).get("match") or {})) for inv in investigations_for(s, ev)]
        if not targets:
            return Outcome("ignored", f"no investigation follows {ev.repo} run {ev.run_id}")
        texts = [self._one(client, ev, iid, match) for iid, match in targets]
        return Outcome("done", "; ".join(texts), [iid for iid, _ in targets])

    def _comment(self, delivery: Any) -> Outcome:
        """``/triage`` commands in a new comment, under the lock of its investigation."""
        from triage.usecases.commands import investigation_of, take

        ev = comment_event(delivery.payload)
        with store.session(self.url) as s:
            iid = investigation_of(s, ev.repo, ev.number)
            inv = store.find_investigation(s, ident=iid) if iid is not None else None
        if inv is None:  # settled without a token or a call to GitHub
            return Outcome("ignored", f"no investigation follows {ev.repo}#{ev.number}")
        client = self.credentials.client(delivery.installation_id, ev.repo)
        with self.locks.hold(inv.id) as slot:
            def post() -> None:
                self.post(client, inv.pr, inv.repo, bot_login=self.bot_login or self.credentials.login(client))
                slot.dirty = False

            text = take(self.url, client, ev, post=post, bot_login=self.bot_login)
        return Outcome("done", text, [inv.id])

    @staticmethod
    def _complete_job_event(client: Any, ev: RunEvent) -> None:
        """A job's payload names no PR: its run does."""
        run = client.get_json(f"/repos/{ev.repo}/actions/runs/{ev.run_id}")
        ev.prs = [int(p["number"]) for p in run.get("pull_requests") or [] if isinstance(p, dict) and "number" in p]
        ev.workflow = ev.workflow or str(run.get("name") or "")
        ev.event = str(run.get("event") or "")
        ev.branch = ev.branch or str(run.get("head_branch") or "")

    def _one(self, client: Any, ev: RunEvent, iid: str, match: dict) -> str:
        pattern = fromgithub.config_pattern(match.get("config_from"))
        with store.session(self.url) as s:
            repo = store.find_investigation(s, ident=iid).repo
        # On its way from here: a delivery that records runs meanwhile leaves its post to this one.
        slot = self.locks.arrive(iid)
        try:
            if ev.job is not None:
                items = fromgithub.fetch_job(client, repo, ev.job, pattern=pattern)
            else:
                items = fromgithub.fetch(client, repo, ev.run_id, pattern=pattern)
        except Exception as e:
            self.locks.leave(slot)
            said = self._post_left(client, iid, slot)  # a post left to this delivery, which records nothing
            if isinstance(e, InputError) and e.message.startswith("nothing to record"):
                return f"{iid}: {e.message}" + said
            raise
        except BaseException:  # the process is stopping
            self.locks.leave(slot)
            raise
        if not items:
            self.locks.leave(slot)
            return f"{iid}: job {ev.job.get('name')!r} is not one of its configs" + self._post_left(client, iid, slot)
        text = f"{iid}: nothing recorded"
        with self.locks.hold(iid, arrived=True) as slot:  # fetched outside it: only the writes wait
            try:
                with store.session(self.url) as s:
                    inv = store.find_investigation(s, ident=iid)
                    recorded = fromgithub.record(s, inv, items)
                    pr, repo = inv.pr, inv.repo
                slot.dirty = True
                text = f"{iid}: {len(recorded)} run(s) recorded"
            finally:
                # A worker waiting for this investigation posts after its own
                # runs, showing these too: one post for a burst, not one each.
                if slot.dirty and self.locks.waiting(slot) == 0:
                    text += ", " + self._post(client, iid, slot)
                elif slot.dirty:
                    text += ", comment left to the next delivery"
        return text

    def _post_left(self, client: Any, iid: str, slot: Slot) -> str:
        """The post another delivery left to this one, when no other is on its way to make it.
        Best effort: a failure leaves the runs to the next delivery's post."""
        if not slot.dirty or self.locks.waiting(slot):
            return ""
        try:
            with self.locks.hold(iid) as held:
                if held.dirty and self.locks.waiting(held) == 0:
                    return ", " + self._post(client, iid, held)
        except Exception as e:  # noqa: BLE001 - the delivery's own outcome stands
            log.warning("the comment of %s was not updated: %s", iid, self._redact(f"{type(e).__name__}: {e}"))
        return ""

    def _post(self, client: Any, iid: str, slot: Slot) -> str:
        with store.session(self.url) as s:
            inv = store.find_investigation(s, ident=iid)
            pr, repo = inv.pr, inv.repo
        result, _, _ = self.post(client, pr, repo, bot_login=self.bot_login or self.credentials.login(client))
        slot.dirty = False
        text = f"comment {result.action}"
        run_for = _autopilot()
        if run_for is not None:
            said = run_for(client, self.url, iid)
            if said:
                text += f", autopilot: {said}"
        return text
