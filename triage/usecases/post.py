"""The sticky comment: evaluate, render, fit to GitHub's limit, and create or edit it.

``triage post`` and the server's workers both post through :func:`post_report`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional


def fitted(model: dict, templates: Optional[str] = None) -> tuple[str, Optional[str]]:
    """The comment as posted, shortened to GitHub's limit, and what was left out (None: nothing)."""
    from triage.render.fit import fit
    from triage.render.report import to_markdown

    done = fit(model, render=lambda m: to_markdown(m, templates))
    return done.body, done.note or None


def post_report(url: str, client: Any, pr: int, repo: Optional[str], *, bot_login: Optional[str] = None,
                dry_run: bool = False, offline: bool = False, templates: Optional[str] = None,
                note: Optional[Callable[[str], None]] = None) -> tuple:
    """Evaluate, render and upsert the sticky comment of ``repo#pr``; record the write.

    ``note(text)`` hears that the comment was shortened to fit.  Returns the
    PostResult, the body and the investigation's view.  A dry run or an
    offline one writes nothing.
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
    return result, body, inv
