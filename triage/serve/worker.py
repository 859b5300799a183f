"""One delivery's work: record the run's jobs, evaluate, post; retried on failure.

For each investigation the run feeds (:func:`~triage.serve.webhook.investigations_for`):

1. the run's jobs and logs are fetched (``ingest.fromgithub``, the
   ``--from-github`` path) -- a ``workflow_job`` delivery takes its one job,
   so a long matrix updates as its legs finish;
2. under the investigation's lock (one writer per PR in this process) they
   are recorded (extractors and signatures read each log), and its post is
   marked due in the same transaction;
3. the delivery hands off (:mod:`triage.serve.handoff`): each due post that
   no later delivery of the same PR, on any replica, will make is made now --
   evaluated and the sticky comment created or updated (``post``, the same
   function as ``triage post``; an unchanged body is not written again), in
   the investigation's turn across replicas
   (:func:`~triage.kb.postlock.post_turn`).  A burst of deliveries makes a
   few posts, not one each, and the last shows every run;
4. autopilot (:func:`triage.usecases.autopilot.run_for`) takes one step
   after each post, under the same lock.

A delivery that fails hands off too, once settled: a post left to it is
made, if no other delivery of the PR is to come.

A new comment with ``/triage`` commands (``issue_comment``) is acted on by
:func:`triage.usecases.commands.take` under the lock of the investigation of
its PR, which then posts the comment itself.

A GitHub, network or database failure is retried with backoff (the queue);
a payload that cannot be read fails at once.  Each delivery ends in one
structured log line: event, action, delivery id, investigations, outcome, ms.
"""

from __future__ import annotations

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
from triage.kb.postlock import post_turn

from . import handoff
from .queue import Queue
from .webhook import RunEvent, comment_event, investigations_for, of_repo, run_event

__all__ = ["Locks", "Processor", "log_delivery"]

log = logging.getLogger("triage.serve")


def log_delivery(**fields: Any) -> None:
    """One JSON line: never a payload, a secret or a token."""
    log.info(json.dumps(fields, ensure_ascii=False, sort_keys=False, default=str))


@dataclass
class Slot:
    """An investigation's lock in this process."""

    lock: threading.Lock = field(default_factory=threading.Lock)


class Locks:
    """One lock per investigation: its runs, its evaluation and its comment have one writer."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._slots: dict[str, Slot] = {}

    @contextmanager
    def hold(self, key: str) -> Iterator[Slot]:
        with self._guard:
            slot = self._slots.setdefault(key, Slot())
        with slot.lock:
            yield slot


@dataclass
class Outcome:
    state: str  # done | ignored
    text: str
    investigations: list[str] = field(default_factory=list)
    client: Any = None  # the GitHub client it used, for its posts in ``repo``
    repo: str = ""


def _autopilot() -> Optional[Callable[..., Any]]:
    """``step(client, db_url, investigation_id) -> str | None``: one autopilot step
    (``triage.usecases.autopilot.run_for``), said in a few words when it did something."""
    from triage.usecases.autopilot import run_for

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
        """Process one claimed delivery; hand off its posts; settle it; log it; its new state."""
        started = time.monotonic()
        fields = {"delivery": delivery.id, "event": delivery.event, "action": delivery.action}
        try:
            outcome = self.process(delivery)
            outcome.text += self._hand_off(delivery, outcome.investigations, (outcome.repo, outcome.client))
        except InputError as e:  # the payload or a rule says no: retrying will not help
            state, text, invs = "failed", e.message, []
            state = state if self.queue.finish(delivery.id, state, text) else "lost"
            self._hand_off_settled(delivery)
        except Exception as e:  # GitHub, network, database: retry later
            text = e.message if isinstance(e, TriageError) else f"{type(e).__name__}: {' '.join(str(e).split())}"
            text = self._redact(text)
            invs = []
            state = self.queue.retry(delivery.id, delivery.attempts, text)
            state = "retrying" if state == "queued" else state
            self._hand_off_settled(delivery)
        else:
            state, text, invs = outcome.state, outcome.text, outcome.investigations
            state = state if self.queue.finish(delivery.id, state, text) else "lost"
        log_delivery(**fields, investigation=",".join(invs) or None, attempt=delivery.attempts, outcome=state,
                     detail=text, ms=round((time.monotonic() - started) * 1000))
        return state

    def _hand_off(self, delivery: Any, own: list[str], client: tuple = ("", None)) -> str:
        """Make the due posts no later delivery of their PR will make; what was posted."""
        said, made = "", set()
        for iid in handoff.hand_off(self.url, delivery.id, delivery.subject, own):
            said += ((", " if len(own) == 1 and iid in own else f"; {iid}: ")
                     + self._post(delivery.installation_id, iid, client))
            made.add(iid)
        for iid in own:
            if iid not in made and handoff.due(self.url, iid) is not None:
                said += (", " if len(own) == 1 else f"; {iid}: ") + "comment left to a delivery still to come"
        return said

    def _hand_off_settled(self, delivery: Any) -> None:
        """After a failure: the posts left to this delivery, if no other is to come.
        Best effort: a post that fails stays due, for the next delivery of its PR."""
        try:
            for iid in handoff.hand_off(self.url, delivery.id, delivery.subject, settled=True):
                self._post(delivery.installation_id, iid)
        except Exception as e:  # noqa: BLE001 - the delivery's own outcome stands
            log.warning("a comment left to %s was not updated: %s", delivery.id,
                        self._redact(f"{type(e).__name__}: {e}"))

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
        return Outcome("done", "; ".join(texts), [iid for iid, _ in targets], client, ev.repo)

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
        with self.locks.hold(inv.id), post_turn(self.url, inv.id):
            def post() -> None:
                self.post(client, inv.pr, inv.repo, bot_login=self.bot_login or self.credentials.login(client))

            text = take(self.url, client, ev, post=post, bot_login=self.bot_login)
        return Outcome("done", text, [inv.id], client, ev.repo)

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
        try:
            if ev.job is not None:
                items = fromgithub.fetch_job(client, repo, ev.job, pattern=pattern)
            else:
                items = fromgithub.fetch(client, repo, ev.run_id, pattern=pattern)
        except InputError as e:
            if e.message.startswith("nothing to record"):
                return f"{iid}: {e.message}"
            raise
        if not items:
            return f"{iid}: job {ev.job.get('name')!r} is not one of its configs"
        with self.locks.hold(iid):  # fetched outside it: only the writes wait
            with store.session(self.url) as s:
                inv = store.find_investigation(s, ident=iid)
                recorded = fromgithub.record(s, inv, items)
                handoff.mark_due(s, iid)
        return f"{iid}: {len(recorded)} run(s) recorded"

    def _post(self, installation_id: Optional[int], iid: str, made: tuple = ("", None)) -> str:
        """Post ``iid``'s comment in its turn, unless another post made it current meanwhile
        (``made``: the delivery's repository and client, used when they are the investigation's)."""
        with store.session(self.url) as s:
            inv = store.find_investigation(s, ident=iid)
            pr, repo = inv.pr, inv.repo
        client = made[1] if made[1] is not None and made[0].lower() == repo.lower() else None
        if client is None:
            client = self.credentials.client(installation_id, repo)
        with self.locks.hold(iid), post_turn(self.url, iid):
            count = handoff.due(self.url, iid)
            if count is None:
                return "comment current"
            result, _, _ = self.post(client, pr, repo, bot_login=self.bot_login or self.credentials.login(client))
            handoff.posted(self.url, iid, count)
            text = f"comment {result.action}"
            run_for = _autopilot()
            if run_for is not None:
                said = run_for(client, self.url, iid)
                if said:
                    text += f", autopilot: {said}"
        return text
