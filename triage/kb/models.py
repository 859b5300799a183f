"""The knowledge base: SQLModel tables for the linked triage records.

Definitions (hypotheses, recipes, rules, bisects, signatures, extractors) come
from rule files and keep their whole validated definition in a ``spec`` JSON
column next to the columns that queries use.  Runs come from ``add-run``,
imports and the bot.  Evidence is what the engine derived; rows are retired,
never deleted, so the history of a hypothesis's status stays visible.
"""

from datetime import datetime
from typing import Any, Optional

from sqlalchemy import JSON, BigInteger, Column, Index, LargeBinary, UniqueConstraint, false
from sqlmodel import Field, SQLModel


class _Table(SQLModel):
    # A table's pydantic validator and serializer are built when first used, not
    # when it is defined: a command that only reads and writes rows never uses them
    # (a fifth of defining the tables).
    model_config = {"defer_build": True}  # type: ignore[assignment]


def _json(**kw: Any) -> Any:
    return Field(default_factory=dict, sa_column=Column(JSON, nullable=False), **kw)


def _json_list() -> Any:
    return Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class Meta(_Table, table=True):
    """Key/value facts about the knowledge base itself (``schema_version``: see
    :mod:`triage.kb.migrate`; a change to these tables is a new migration)."""

    key: str = Field(primary_key=True)
    value: str


class RuleSource(_Table, table=True):
    """A rule file as last loaded, so an unchanged file is not loaded again."""

    path: str = Field(primary_key=True)
    sha256: str
    loaded_at: datetime


class Investigation(_Table, table=True):
    __table_args__ = (UniqueConstraint("repo", "pr", name="uq_investigation_repo_pr"),)

    id: str = Field(primary_key=True)
    repo: str = Field(index=True)
    pr: int = Field(index=True)
    title: str
    metric: str
    direction: str = "higher"
    gate: Optional[float] = None
    source: str = ""
    spec: dict = _json()


class Run(_Table, table=True):
    """One CI run (or one leg of it): identity is run id + config."""

    __table_args__ = (
        UniqueConstraint("investigation_id", "run_id", "config", name="uq_run_identity"),
        # a config's runs, and an evaluation's fingerprint of them: count, largest key, newest write,
        # from the index alone (one index: a second over (investigation, config) only slowed writes)
        Index("ix_run_investigation_config_updated", "investigation_id", "config", "updated_at"),
        Index("ix_run_investigation_time", "investigation_id", "time"),  # the newest runs, for the runs table
    )

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id")
    run_id: str
    config: str
    status: str
    metrics: dict = _json()  # name -> {"value": float, "n": int | None}
    provenance: dict = _json()  # free key/values: sha, image, branch, ...
    url: Optional[str] = None
    time: Optional[datetime] = None
    note: Optional[str] = None
    log_excerpt: Optional[str] = None
    signature_id: Optional[str] = None
    signature_line: Optional[str] = None
    excluded: bool = False
    excluded_reason: Optional[str] = None
    created_at: datetime
    updated_at: datetime


class Hypothesis(_Table, table=True):
    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    id: str = Field(primary_key=True)
    title: str
    parent: Optional[str] = None
    position: int = 0
    status: str = "open"  # derived by the engine, stored for queries and history
    spec: dict = _json()


class Recipe(_Table, table=True):
    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    id: str = Field(primary_key=True)
    position: int = 0
    spec: dict = _json()


class Rule(_Table, table=True):
    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    id: str = Field(primary_key=True)
    hypothesis_id: str
    position: int = 0
    spec: dict = _json()


class ManualEvidence(_Table, table=True):
    """Evidence that is no run (a code reading, a config diff), with its author."""

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id", index=True)
    hypothesis_id: str
    verdict: str
    reason: str
    author: Optional[str] = None
    runs: list = _json_list()
    source: str = "rules"  # "rules" (from a rule file) or "cli"
    created_at: datetime


class Bisect(_Table, table=True):
    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    id: str = Field(primary_key=True)
    position: int = 0
    spec: dict = _json()


class BisectMark(_Table, table=True):
    """A bisect point judged by hand (``triage bisect mark``), kept when rule files reload."""

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id", index=True)
    bisect_id: str
    point: str
    verdict: str  # good | bad
    reason: str
    author: Optional[str] = None
    created_at: datetime


class Signature(_Table, table=True):
    """A known-failure signature; ``retired_at`` is set when its rule file no
    longer declares it: it matches no log then, and runs it marked keep it."""

    id: str = Field(primary_key=True)
    kind: str  # the signature's class: setup-error, infra, oom, known-bug, crash
    source: str = ""
    spec: dict = _json()
    retired_at: Optional[datetime] = None


class Evidence(_Table, table=True):
    """A verdict the engine derived for a hypothesis from run(s) and a rule.

    ``retired_at`` is set when a later evaluation no longer derives it; the
    row stays, so the report can show how a status came about.
    """

    __table_args__ = (Index("ix_evidence_active", "investigation_id", "retired_at"),)

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id")
    hypothesis_id: str
    rule_id: str
    verdict: str
    reason: str
    runs: list = _json_list()  # ["run_id/config", ...]
    flags: list = _json_list()  # "manual", "confounded", "superseded", ...
    key: str  # stable identity of the derivation, to tell new from unchanged
    created_at: datetime
    retired_at: Optional[datetime] = None


class StatusChange(_Table, table=True):
    """One change of a hypothesis's derived status, as evaluations saw it."""

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id", index=True)
    hypothesis_id: str
    previous: Optional[str] = None
    status: str
    at: datetime


class Post(_Table, table=True):
    """A report posted to GitHub (for ``--since last-post``).

    One row each time ``triage post`` wrote the comment: ``action`` is
    ``created`` or ``updated``; a post that found the comment unchanged, and a
    dry run, add no row.
    """

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id", index=True)
    url: Optional[str] = None
    action: str
    at: datetime
    since: Optional[datetime] = None  # the baseline of the body's "new since" line, if it had one


class RunDeletion(_Table, table=True):
    """A run removed by ``triage runs delete``: the whole record kept, with why."""

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id", index=True)
    run_id: str
    config: str
    because: str
    record: dict = _json()  # the run as `triage export` writes it, so it can be imported back
    at: datetime


class Dispatch(_Table, table=True):
    """A run ``triage autopilot`` started through GitHub's workflow_dispatch.

    ``evaluation`` fingerprints the runs the decision was made on (never two
    dispatches for one); ``done_at`` is set once the run it started is
    recorded (at most one in flight per investigation).
    """

    pk: Optional[int] = Field(default=None, primary_key=True)
    investigation_id: str = Field(foreign_key="investigation.id", index=True)
    suggestion: str  # the recipe id, "bisect:ID", or the missing config
    kind: str  # recipe | bisect | base
    point: Optional[str] = None  # for a bisect: the point
    workflow: str
    ref: str
    inputs: dict = _json()
    cost: float = 1.0
    reason: str = ""  # "it decides the image bisect"
    evaluation: str
    at: datetime
    run_id: Optional[str] = None  # the workflow run it became, when GitHub said
    url: Optional[str] = None
    done_at: Optional[datetime] = None
    note: Optional[str] = None  # e.g. GitHub's answer was lost: it may have started


class CommentCommand(_Table, table=True):
    """A ``/triage`` command from a PR comment, as the server took it: who wrote
    it, where (the comment's URL), the line, and what came of it (``done``,
    ``failed``, ``skipped`` when another line of the comment failed,
    ``malformed``, ``refused`` for want of permission, ``dropped`` past the
    limit of a comment).  One comment is acted on once: its id and the line's
    place in it are unique.
    """

    __table_args__ = (Index("ix_commentcommand_comment", "comment_id", "position", unique=True),)

    pk: Optional[int] = Field(default=None, primary_key=True)
    comment_id: int = Field(sa_column=Column(BigInteger, nullable=False))
    position: int  # the line's place among the comment's commands, from 0
    investigation_id: str = Field(foreign_key="investigation.id", index=True)
    author: str
    url: str
    line: str
    outcome: str
    detail: str = ""
    at: datetime


class Delivery(_Table, table=True):
    """A webhook delivery received by ``triage serve``: the durable work queue.

    Keyed by GitHub's ``X-GitHub-Delivery`` id, so a redelivery is recognised
    and changes nothing.  ``state`` is ``queued`` (waiting, or waiting for its
    retry at ``next_at``), ``running``, ``done``, ``ignored`` (nothing to do)
    or ``failed`` (retries exhausted; listed at ``/deliveries``).

    A ``running`` delivery is leased: ``holder`` (the server replica working
    on it) holds it until ``lease_until``, renewed while it works; a lease that
    ran out is taken again.  ``subject`` is the PR it is about
    (``owner/name#N``, lower case) or only its repository when the payload
    names no one PR; ``posting``: its runs are recorded, so no other delivery
    leaves the comment to it.
    """

    __table_args__ = (Index("ix_delivery_state_next", "state", "next_at"),
                      Index("ix_delivery_subject_state", "subject", "state"))

    id: str = Field(primary_key=True)
    event: str
    action: Optional[str] = None
    payload: dict = _json()
    installation_id: Optional[int] = None
    state: str = "queued"
    attempts: int = 0
    next_at: datetime
    received_at: datetime
    finished_at: Optional[datetime] = None
    outcome: Optional[str] = None  # what the last attempt did, or why it failed
    holder: Optional[str] = None
    lease_until: Optional[datetime] = None
    subject: Optional[str] = None
    posting: bool = Field(default=False, sa_column_kwargs={"server_default": false()})


class Snapshot(_Table, table=True):
    """An investigation's last evaluation, as the report shows it, with the
    fingerprint of what it was derived from (rule files, runs, manual evidence,
    the engine's code): a report whose inputs have the same fingerprint reads
    this instead of evaluating again."""

    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    fingerprint: str
    at: datetime
    data: str  # JSON text
    others: Optional[str] = None  # the evidence version "Seen elsewhere" was computed at
    similar: Optional[str] = None  # "Seen elsewhere", JSON text


class SnapshotPart(_Table, table=True):
    """One of a stored view's long lists (its hypotheses, experiments, bisects, warnings),
    kept apart from the rest of it (``Snapshot.data``), which names it by ``digest``: a
    view that differs from the stored one in its headline and run count alone writes its
    small part again, not megabytes (SQLite writes a row whole, however little changed)."""

    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    name: str = Field(primary_key=True)
    digest: str
    data: str  # JSON text


class EvaluationPiece(_Table, table=True):
    """A piece of an investigation's last evaluation (a rule's evidence, a bisect's
    state, what one config's runs say), with what it read and the fingerprints of
    that as it was: the next evaluation reuses it while they hold.  The piece named
    "" holds what every piece rests on (see ``triage.rules.engine.memo``)."""

    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    name: str = Field(primary_key=True)
    reads: str  # JSON text: [[kind, name, fingerprint], ...]
    # msgpack: texts as they are (a piece names thousands of runs, and JSON escaped
    # the separator between each two), read back four times faster than JSON
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class ConfigRuns(_Table, table=True):
    """Each config's runs in numbers, kept by every writer of runs (see
    :mod:`triage.kb.configruns`): what an evaluation reads to tell which
    configs changed, without an index entry per run."""

    investigation_id: str = Field(foreign_key="investigation.id", primary_key=True)
    config: str = Field(primary_key=True)
    first_pk: int
    count: int
    max_pk: int
    max_updated: datetime
    times: int = Field(sa_column=Column(BigInteger, nullable=False))  # the sum of write times, in milliseconds
