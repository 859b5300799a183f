"""The sticky comment: evaluate, render, fit to GitHub's limit, and create or edit it.

``triage post`` and the server's workers both post through :func:`post_report`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

Templates = Union[str, tuple[str, ...], None]


def fitted(model: dict, templates: Templates = None) -> tuple[str, Optional[str]]:
    """The comment as posted, shortened to GitHub's limit, and what was left out (None: nothing);
    ``templates``: a directory (or several, the first wins) whose templates override ours."""
    from triage.render.fit import fit

    done = fit(model, templates=templates)
    return done.body, done.note or None


def repo_of(url: str, pr: int, repo: Optional[str]) -> str:
    """The repository of the investigation that ``pr`` (and ``repo``) name."""
    from triage.kb import store

    with store.read_session(url) as s:
        return store.find_investigation(s, pr, repo).repo


def post_report(url: str, client: Any, pr: int, repo: Optional[str], *, bot_login: Optional[str] = None,
                dry_run: bool = False, offline: bool = False, templates: Templates = None,
                note: Optional[Callable[[str], None]] = None, check_run: bool = False,
                dashboard: Optional[str] = None) -> tuple:
    """Evaluate, render and upsert the sticky comment of ``repo#pr``; record the write.

    ``note(text)`` hears that the comment was shortened to fit.  Returns the
    PostResult, the body and the investigation's view.  A dry run or an
    offline one writes nothing.  With ``check_run`` the ``triage`` check run
    on the PR's head commit is set too, after the comment (see
    :func:`set_check_run`); its result is the PostResult's ``check``.
    """
    from datetime import datetime

    from triage.github import upsert_comment
    from triage.github.comments import own_login
    from triage.kb import store
    from triage.kb.postlock import post_lock
    from triage.usecases.report import view

    model = view(url, pr, repo, "post")
    body, left_out = fitted(model, templates)
    if left_out and note is not None:
        note(f"shortened to fit GitHub's comment limit: {left_out}")
    inv = model["investigation"]
    if dry_run or offline:  # writes nothing: no turn to wait for
        result = upsert_comment(client, inv["repo"], inv["pr"], body, model["marker"],
                                bot_login=bot_login, dry_run=dry_run, offline=offline)
        if check_run:
            result.check = set_check_run(client, model, body, dashboard=dashboard, bot_login=bot_login,
                                         dry_run=dry_run, offline=offline, note=note)
        return result, body, inv
    login = own_login(client, bot_login)
    # One post of an investigation at a time, across processes, around list -> create/edit only:
    # the evaluation and the rendering above, and other writers of the knowledge base, do not wait.
    with post_lock(url, inv["id"]):
        result = upsert_comment(client, inv["repo"], inv["pr"], body, model["marker"], bot_login=login)
        if result.action in ("created", "updated"):
            since = model["since"]["at"] if model["since"] else None
            with store.session(url) as s:
                store.record_post(s, inv["id"], result.url, result.action,
                                  datetime.fromisoformat(since) if since else None)
        if check_run:  # within the turn: two posts never race to create it
            result.check = set_check_run(client, model, body, dashboard=dashboard, bot_login=login, note=note)
    return result, body, inv


def set_check_run(client: Any, model: dict, body: str, *, dashboard: Optional[str] = None,
                  bot_login: Optional[str] = None, dry_run: bool = False, offline: bool = False,
                  note: Optional[Callable[[str], None]] = None) -> Any:
    """The ``triage`` check run for the comment ``body`` just posted: the verdict
    as its title, the comment's first screen as its summary, the dashboard's page
    as its link.  It never undoes the comment: a failure is the result
    ``failed``, said to ``note`` and the log, as a refusal (``skipped``) is."""
    import logging

    from triage.github.checks import CheckResult, dashboard_link, upsert_check_run
    from triage.github.client import GitHubClient, GitHubError
    from triage.render.digest import first_screen

    inv = model["investigation"]
    title = (model.get("verdict") or ["No verdict yet: nothing is confirmed or ruled out."])[0]
    summary = first_screen(body).replace(model["marker"], "").strip() + "\n"
    slug = bot_login[:-5] if bot_login and bot_login.endswith("[bot]") else None
    try:
        check = upsert_check_run(client, inv["repo"], inv["pr"], title=title, summary=summary,
                                 details_url=dashboard_link(dashboard, inv["repo"], inv["pr"]),
                                 external_id=inv["id"], app_slug=slug, dry_run=dry_run, offline=offline)
    except GitHubError as e:
        text = GitHubClient._static_redact(e.message)
        check = CheckResult("failed", None, reason=f"check run not set (the comment is posted): {text}")
    if check.reason:
        logging.getLogger("triage.github.checks").warning("%s#%s: %s", inv["repo"], inv["pr"], check.reason)
        if note is not None:
            note(check.reason)
    return check
