"""An investigation's view, as ``triage report`` shows it and ``triage post`` posts it."""

from __future__ import annotations

from typing import Any, Callable, Optional

from triage.errors import InputError
from triage.render.report import DEFAULT_RUNS
from triage.settings import Settings


def view(url: str, pr: int, repo: Optional[str], since: Optional[str] = None, *,
         runs: Optional[int] = DEFAULT_RUNS, full: bool = False,
         emit: Optional[Callable[[dict], None]] = None, settings: Settings = Settings(), json: bool = False) -> dict:
    """Evaluate one investigation; its view model.

    ``since`` adds the "new since" line: ``last-post``, a time or an age;
    ``post``: the line the posted comment carries (``store.post_since_view``).
    ``runs``: the newest runs the runs table shows (None: all).  When nothing
    the evaluation depends on changed since the last one, the stored
    evaluation is read instead (``full`` evaluates all the same, a large
    investigation in two processes, from ``settings.parallel_runs`` runs on, as does the first
    evaluation after its rule files or the code changed).  ``emit(model)`` runs before the
    commit: when it fails (the output names a directory, the disk is full)
    nothing is written.  ``json``: ``emit`` prints the JSON report alone
    (:func:`triage.render.report.to_json`): the one kept with the stored view is given, without
    the view's long lists (:func:`triage.views.model`).
    """
    from triage.kb import store

    helper = evaluation_helper(url, pr, repo, settings.parallel_runs, full=full)
    try:
        with store.session(url) as s:
            model = view_in(s, pr, repo, since, runs, full, helper, json=json)
            if emit is not None:
                emit(model)
            return model
    finally:
        if helper is not None:
            helper.close()


def evaluation_helper(url: str, pr: int, repo: Optional[str], at: Optional[int], *, full: bool = False) -> Any:
    """A process working out half of the evaluation about to begin (:mod:`triage.kb.parallel`),
    forked before this one opens its session, for a whole evaluation of a large investigation:
    ``full``, or the first since its definitions changed (the code, or a rule file edited).
    None when the stored view stands or the stored pieces will do, below the threshold ``at``,
    or where there is no second CPU."""
    from triage.kb import configruns, parallel, snapshot, store

    with store.session(url) as s:
        iid = store.find_investigation(s, pr, repo).id
        kept = configruns.stored(s, iid)
        if not parallel.worth_it(sum(row[2] for row in kept), at):
            return None
        if not full and (snapshot.stands(s, iid) or snapshot.evaluated_under(s, iid) == snapshot.definitions(s)):
            return None
    return parallel.start(url, iid, [row[0] for row in kept], full=full)


def view_in(s: Any, pr: int, repo: Optional[str], since: Optional[str], runs: Optional[int], full: bool,
            helper: Any, *, json: bool = False) -> dict:
    """:func:`view` in the session ``s``."""
    from triage import views
    from triage.kb import store

    inv = store.find_investigation(s, pr, repo)
    model = views.model(s, inv, runs=runs, full=full, helper=helper, json=json and since is None)
    model["since"] = store.post_since_view(s, inv) if since == "post" else since_view(s, inv, since)
    return model


def since_view(s: Any, inv: Any, since: Optional[str]) -> Optional[dict]:
    """The "new since" line for ``since``: ``last-post``, an ISO 8601 time or an age (None: no line)."""
    if since is None:  # the usual report: none of the imports below (ingest's rule schema with them)
        return None
    from triage.ingest.runs import parse_since
    from triage.kb import store

    if since == "last-post":
        at = store.last_post_time(s, inv.id)
        if at is None:
            raise InputError(f"--since last-post: {inv.repo}#{inv.pr} has no posted report yet; "
                             "give a time (2026-06-26T12:00Z) or an age (2d)")
        label = f"the last report ({at:%Y-%m-%d %H:%M} UTC)"
    else:
        at = parse_since(since, store.now())
        label = f"{at:%Y-%m-%d %H:%M} UTC"
    return store.since_view(s, inv, at, label)
