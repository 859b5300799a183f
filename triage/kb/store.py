"""The knowledge base's queries, under one name: a facade.

Callers write ``from triage.kb import store`` and ``store.session(...)``;
the code lives in one module per concern, and this one only re-exports
their public names:

- :mod:`triage.kb.db`: engines, sessions and locks (the URL of ``--db``);
- :mod:`triage.kb.sync`: rule files loaded into definitions;
- :mod:`triage.kb.investigations`: an investigation, read back as the
  rule engine's input (and bisect marks set by hand);
- :mod:`triage.kb.runs`: runs recorded, imported, found and deleted;
- :mod:`triage.kb.evaluations`: derived evidence and statuses, with their
  history (and manual evidence);
- :mod:`triage.kb.posts`: reports posted, what changed since, dispatches;
- :mod:`triage.kb.commands`: ``/triage`` commands taken from PR comments.

To replace a function in a test, patch it where it lives (the module that
calls it looks it up there), not here.
"""

from __future__ import annotations

from triage.kb.tables import models as m  # store.m: the table classes, defined when first asked for
from triage.kb.commands import comment_taken, commands_of, record_commands
from triage.kb.db import (
    BUSY_RETRIES,
    BUSY_TIMEOUT,
    DEFAULT_DB,
    discard_new,
    get_engine,
    json_text,
    lock_investigation,
    missing_file,
    now,
    read_session,
    resolve_url,
    session,
    sync_on_open,
)
from triage.kb.evaluations import (
    EVIDENCE_VERSION,
    STORED_RUNS,
    add_manual_evidence,
    evidence_history,
    status_history,
    store_evaluation,
)
from triage.kb.investigations import (
    add_bisect_mark,
    extractors_for,
    find_investigation,
    has_config,
    known_names,
    list_investigations,
    load_bundle,
    run_records,
    signature_specs,
)
from triage.kb.posts import (
    close_dispatches,
    dispatch_rows,
    dispatches,
    last_post,
    last_post_time,
    post_since_view,
    record_dispatch,
    record_post,
    since_view,
)
from triage.kb.runs import (
    RUN_COLUMNS,
    TEXT_FIELDS,
    RunInput,
    RunWriter,
    delete_runs,
    find_runs,
    count_runs,
    listed_records,
    listed_runs,
    run_deletions,
    runs_of,
    upsert_run,
)
from triage.kb.sync import sync_rules

__all__ = [
    "m",
    # db
    "BUSY_RETRIES", "BUSY_TIMEOUT", "DEFAULT_DB", "discard_new", "get_engine", "json_text", "lock_investigation",
    "missing_file", "now", "read_session", "resolve_url", "session", "sync_on_open",
    # sync
    "sync_rules",
    # investigations
    "add_bisect_mark", "extractors_for", "find_investigation", "has_config", "known_names",
    "list_investigations", "load_bundle", "run_records", "signature_specs",
    # runs
    "RUN_COLUMNS", "TEXT_FIELDS", "RunInput", "RunWriter", "delete_runs", "find_runs", "listed_runs", "listed_records",
    "count_runs", "run_deletions", "runs_of", "upsert_run",
    # evaluations
    "EVIDENCE_VERSION", "STORED_RUNS", "add_manual_evidence", "evidence_history", "status_history",
    "store_evaluation",
    # posts
    "close_dispatches", "dispatch_rows", "dispatches", "last_post", "last_post_time", "post_since_view",
    "record_dispatch", "record_post", "since_view",
    # commands
    "comment_taken", "commands_of", "record_commands",
]
