"""``/triage`` commands in a PR comment, acted on as the CLI acts on the same words.

:func:`take` reads one new comment (``issue_comment`` / ``created``) and:

1. ignores comments by bots (our own replies included), comments with no
   command, comments on a PR no investigation follows, and a comment whose
   commands were taken before (a redelivery, a second hook): nothing changes;
2. reacts 👀 (``eyes``): taken;
3. asks GitHub for the author's permission: only write, maintain or admin
   act, and those the investigation's ``commands: {allow: [...]}`` names,
   never those its ``deny:`` names; anyone else gets one short reply saying
   why (and 😕);
4. acts on the comment as a whole: when a line cannot be read, or a command
   fails (no such run, bisect point or hypothesis), nothing of the comment is
   written; the runs' exclusions, bisect marks and evidence go in one
   transaction with the record of the comment (``commentcommand``), and the
   investigation is evaluated once.  ``/triage run`` then starts the top
   suggestion (or the best of the recipes it names) as ``triage autopilot``
   does, within the investigation's budget;
5. updates the sticky comment when something changed (or on ``refresh``),
   reacts 👍 (``+1``) or 😕 (``confused``), and for an error or ``help``
   replies once, quoting the line it could not read or act on.

Each command is the use case of the CLI command of the same meaning:
:mod:`triage.usecases.runs`, :mod:`triage.usecases.byhand`,
``triage.usecases.autopilot.run_for``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from triage.errors import InputError
from triage.github import issues
from triage.github.client import GitHubError
from triage.render.env import code, md

from .comments import LIMIT, USAGE, Command, Malformed, Read, parse

__all__ = ["CommentEvent", "HELP", "take"]

WRITES = ("exclude", "include", "mark", "evidence")


@dataclass(frozen=True)
class CommentEvent:
    """A new comment on an issue or PR, as the webhook names it."""

    repo: str
    number: int
    comment_id: int
    author: str
    author_type: str  # User | Bot | Organization
    body: str
    url: str  # the comment's html_url


@dataclass
class Acted:
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # (line, outcome, detail) per line
    changed: bool = False  # something the comment shows changed: post it
    said: list[str] = field(default_factory=list)  # the reply's paragraphs

    @property
    def failed(self) -> bool:
        return any(outcome != "done" for _, outcome, _ in self.rows)


HELP = "\n".join(["`/triage` commands (one a line; write access to the repository needed):", "",
                  "```", *USAGE.values(), "```", "",
                  "exclude: the run stays in the report but decides nothing; include: undo it. "
                  "mark: a bisect point judged by hand. evidence: a reading that rules a hypothesis out, "
                  "supports or confirms it. run: start the next suggested experiment (or the best of the "
                  "recipes named) within the autopilot budget. refresh: update the comment now. "
                  f"At most {LIMIT} commands a comment; lines in code blocks and quotes are not read."])


class _Failed(Exception):
    def __init__(self, command: Command, message: str) -> None:
        super().__init__(message)
        self.command, self.message = command, message


def take(url: str, client: Any, ev: CommentEvent, *, post: Callable[[], Any],
         bot_login: Optional[str] = None, limit: int = LIMIT) -> str:
    """Act on the commands of one new comment; what was done, in a few words (for the log).

    ``post()`` updates the investigation's sticky comment.  A GitHub failure
    before anything is recorded is raised (the delivery is tried again);
    after, it is said in the answer, never repeated.
    """
    from triage.kb import store

    if ev.author_type == "Bot" or (bot_login and ev.author.lower() == bot_login.lower()):
        return "a comment by a bot: ignored"
    read = parse(ev.body, limit)
    if not read.items:
        return "no /triage command in the comment"
    with store.session(url) as s:
        iid = investigation_of(s, ev.repo, ev.number)
        if iid is not None and store.comment_taken(s, ev.comment_id):
            return f"comment {ev.comment_id}: taken already, nothing done"
    if iid is None:
        return f"no investigation follows {ev.repo}#{ev.number}"
    issues.react(client, ev.repo, ev.comment_id, "eyes")
    refused = _refusal(url, client, iid, ev)
    if refused is not None:
        acted = Acted([(x.line, "refused", refused[0]) for x in read.items])
        acted.said.append(refused[1])
        if not _record(url, iid, ev, acted.rows):
            return f"comment {ev.comment_id}: taken already, nothing done"
        return "refused: " + _answer(client, ev, acted, None, read)
    acted = _act(url, client, iid, ev, read)
    if acted is None:
        return f"comment {ev.comment_id}: taken already, nothing done"
    return _answer(client, ev, acted, post if acted.changed else None, read)


def _refusal(url: str, client: Any, iid: str, ev: CommentEvent) -> Optional[tuple[str, str]]:
    """Why the author may not act (for the record, for the reply), or None when they may:
    write access or more, else the investigation's ``commands: {allow: [...]}``; never
    one its ``deny:`` names."""
    from triage.kb import store

    with store.session(url) as s:
        spec = (store.find_investigation(s, ident=iid).spec or {}).get("commands") or {}
    author = ev.author.lower()
    if author in {x.lower() for x in spec.get("deny") or []}:
        return (f"{ev.author} is denied by the rule file",
                f"{code(ev.author, cell=False)} may not give `/triage` commands here (the investigation's "
                "`commands: deny:`), so nothing was done.")
    if author in {x.lower() for x in spec.get("allow") or []}:
        return None
    base, role = issues.permission(client, ev.repo, ev.author)
    if issues.may_act(base, role):
        return None
    return (f"{ev.author} has {role or base}",
            f"`/triage` commands need write access to {md(ev.repo)}: {code(ev.author, cell=False)} "
            f"has {md(role or base)}, so nothing was done.")


def investigation_of(s: Any, repo: str, number: int) -> Optional[str]:
    """The investigation of ``repo#number`` (the first by id when several share it), or None."""
    from sqlalchemy import func, select

    from triage.kb import models as m

    q = select(m.Investigation.id).where(func.lower(m.Investigation.repo) == repo.lower(),
                                         m.Investigation.pr == number).order_by(m.Investigation.id).limit(1)
    return s.execute(q).scalar()


def _record(url: str, iid: str, ev: CommentEvent, rows: list[tuple[str, str, str]]) -> bool:
    """Record the comment's lines on their own; False when another delivery recorded it first."""
    from sqlalchemy.exc import IntegrityError

    from triage.kb import store

    try:
        with store.session(url) as s:
            store.record_commands(s, iid, ev.comment_id, ev.author, ev.url, rows)
    except IntegrityError:
        return False
    return True


def _act(url: str, client: Any, iid: str, ev: CommentEvent, read: Read) -> Optional[Acted]:
    """Act on a permitted comment; None when another delivery took it first."""
    from sqlalchemy.exc import IntegrityError

    from triage.kb import store

    if read.malformed:
        acted = _not_acted(read, None, "")
        return acted if _record(url, iid, ev, acted.rows) else None
    acted = Acted()
    try:
        with store.session(url) as s:
            details = _commands(s, client, iid, ev, read.commands, acted)
            acted.rows = [(c.line, *details[i]) for i, c in enumerate(read.commands)] + _dropped(read)
            store.record_commands(s, iid, ev.comment_id, ev.author, ev.url, acted.rows)
    except IntegrityError:
        return None
    except _Failed as e:
        acted = _not_acted(read, e.command, e.message)
        return acted if _record(url, iid, ev, acted.rows) else None
    return acted


def _commands(s: Any, client: Any, iid: str, ev: CommentEvent, commands: list[Command],
              acted: Acted) -> dict[int, tuple[str, str]]:
    """Each command's outcome and detail, by its place: the writes first, evaluated once, then the rest."""
    from triage import views
    from triage.kb import store

    inv = store.find_investigation(s, ident=iid)
    details: dict[int, tuple[str, str]] = {}
    for i, c in enumerate(commands):
        if c.verb in WRITES:
            try:
                details[i] = ("done", _write(s, inv, c, ev.author))
            except InputError as e:
                raise _Failed(c, e.message) from None
    if details:
        views.evaluate(s, inv)
        acted.changed = True
    for i, c in enumerate(commands):
        if c.verb == "run":
            details[i] = _run(s, client, iid, c, acted)
        elif c.verb == "refresh":
            acted.changed, details[i] = True, ("done", "the comment is updated")
        elif c.verb == "help":
            acted.said.append(HELP)
            details[i] = ("done", "the commands were listed")
    return details


def _write(s: Any, inv: Any, c: Command, author: str) -> str:
    from . import byhand
    from .runs import set_excluded_in

    if c.verb in ("exclude", "include"):
        legs = set_excluded_in(s, inv, c.args[0], None, c.verb == "exclude", c.because)
        word = "excluded" if c.verb == "exclude" else "included again"
        return "; ".join(f"{word}: {run} ({config})" for run, config in legs)
    if c.verb == "mark":
        return byhand.mark_in(s, inv.id, *c.args, c.because or "", author)
    return byhand.evidence_in(s, inv.id, c.args[0], c.args[1], c.because or "", author, source="comment")


def _run(s: Any, client: Any, iid: str, c: Command, acted: Acted) -> tuple[str, str]:
    """``/triage run [RECIPE …]``: one autopilot step, within its budget."""
    from triage.usecases.autopilot import run_for

    try:
        step = run_for(s, iid, client, only=list(c.args) or None)
    except GitHubError as e:
        said = e.message
    else:
        said = " ".join(line.strip() for line in step.lines if line.strip()) or step.action
        if step.action in ("started", "uncertain"):
            acted.changed = True
            return "done", said
    acted.said.append(f"{code(c.line, cell=False)} started nothing: {md(said)}")
    return "failed", said


def _not_acted(read: Read, failed: Optional[Command], message: str) -> Acted:
    """The record of a comment of which nothing was done: a line could not be read, or a command failed."""
    acted = Acted()
    for x in read.items:
        if isinstance(x, Malformed):
            acted.rows.append((x.line, "malformed", x.why))
            acted.said.append(f"Could not read {code(x.line, cell=False)}: {md(x.why)}")
        elif x is failed:
            acted.rows.append((x.line, "failed", message))
            acted.said.append(f"{code(x.line, cell=False)} failed: {md(message)}")
        else:
            acted.rows.append((x.line, "skipped", "another line of the comment was not done"))
    acted.rows += _dropped(read)
    acted.said.append("Nothing in this comment was done; `/triage help` lists the commands.")
    return acted


def _dropped(read: Read) -> list[tuple[str, str, str]]:
    if not read.dropped:
        return []
    return [("…", "dropped", f"{read.dropped} more command line(s) past the limit of {LIMIT} a comment")]


def _answer(client: Any, ev: CommentEvent, acted: Acted, post: Optional[Callable[[], Any]], read: Read) -> str:
    """Post the comment, react, reply: best effort, since the commands are recorded."""
    done = [f"{sum(o == 'done' for _, o, _ in acted.rows)} of {len(acted.rows)} command(s) done"]
    if read.dropped:
        acted.said.append(f"Only the first {LIMIT} commands of a comment are read; "
                          f"{read.dropped} more were not.")
    steps: list[tuple[str, Callable[[], Any]]] = []
    if post is not None:
        steps.append(("comment updated", post))
    steps.append(("reacted", lambda: issues.react(client, ev.repo, ev.comment_id,
                                                  "confused" if acted.failed or read.dropped else "+1")))
    if acted.said:
        steps.append(("replied", lambda: issues.reply(client, ev.repo, ev.number, "\n\n".join(acted.said))))
    for what, step in steps:
        try:
            step()
            done.append(what)
        except (GitHubError, InputError) as e:
            done.append(f"not {what}: {e.message}")
    return ", ".join(done)
