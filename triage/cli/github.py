"""Commands that talk to GitHub as the bot: post, serve."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from triage.cli.base import (
    FORMAT_OPT,
    PR_OPT,
    REPO_OPT,
    TEMPLATES_OPT,
    _check_format,
    _err,
    _github,
    _json_out,
    _open,
    _templates,
    app,
    state,
)
from triage.errors import InputError


@app.command()
def post(
    pr: PR_OPT,
    repo: REPO_OPT = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the request and the comment it would send; send nothing.")] = False,
    bot_login: Annotated[Optional[str], typer.Option(
        "--bot-login",
        help="The account whose comment is ours [default: the token's own login (GET /user); "
             "github-actions[bot] when GitHub will not say, as for the Actions GITHUB_TOKEN].")] = None,
    offline: Annotated[bool, typer.Option("--offline", help="A --dry-run that asks GitHub nothing (no token, no listing): the comment it would create.")] = False,
    templates: TEMPLATES_OPT = None,
    format: FORMAT_OPT = "text",
    check_run: Annotated[Optional[bool], typer.Option(
        "--check-run/--no-check-run",
        help="Set the 'triage' check run on the PR's head commit too [default: as a GitHub App only].")] = None,
) -> None:
    """Create or update the one sticky comment on the PR.

    Examples:

    \b
      triage post --pr 30433                  # prints e.g. "updated https://github.com/…#issuecomment-…"
      triage post --pr 30433 --dry-run        # the request and the comment, nothing sent
      triage post --pr 30433 --offline        # the same without asking GitHub anything
      triage post --pr 30433 --bot-login my-app[bot]
      triage post --pr 30433 --format json    # {"action": …, "url": …}

    The comment is the markdown report, shortened to GitHub's 65,536-character
    limit if need be (see `triage report --fit`), ending with a hidden marker
    that names the investigation. The comment that carries the marker and was
    written by our account is edited when its body changed and left alone when
    it did not; without one, a comment is created. Comments by anyone else are
    never touched, even when they quote the marker. The repository and PR are
    the investigation's (--repo only picks among investigations).

    The token comes from GITHUB_TOKEN or GH_TOKEN (it is never printed), the API
    from GITHUB_API_URL (default https://api.github.com). With TRIAGE_APP_ID
    and TRIAGE_APP_PRIVATE_KEY (or TRIAGE_APP_PRIVATE_KEY_FILE) it posts as the
    GitHub App, with the installation's token, and sets the 'triage' check run
    on the PR's head commit: the verdict, the comment's first screen, and a link
    to the dashboard's page when TRIAGE_DASHBOARD_URL is set. A token that may
    not write check runs skips it with one line; the comment stands. Rate limits and
    server errors are retried with backoff, within bounds, and a retry never
    posts a second comment. Posts of one investigation take turns (a lock in
    the knowledge base), and a post that raced past it deletes its own
    duplicate: one comment, however many run at once.
    """
    from triage.github.checks import validate_dashboard_url
    from triage.github.comments import validate_login

    _check_format(format, "text", "json")
    if bot_login is not None:
        validate_login(bot_login)
    settings = state.settings
    dashboard = validate_dashboard_url(settings.dashboard_url)
    app = settings.app_id is not None and not offline
    options = dict(dry_run=dry_run or offline, offline=offline, templates=_templates(templates),
                   check_run=app if check_run is None else check_run, dashboard=dashboard)
    if app:
        result, body, inv = _post_as_app(pr, repo, bot_login=bot_login, **options)
    else:
        with _github() as client:  # first: a bad GITHUB_API_URL is bad input
            if not (dry_run or offline) and not client.has_token:
                raise InputError("no GitHub token: set GITHUB_TOKEN or GH_TOKEN (a --dry-run works without one)")
            result, body, inv = _post_report(client, pr, repo, bot_login=bot_login, **options)
    _say_posted(result, body, inv, format)


def _post_as_app(pr: int, repo: Optional[str], **options: Any) -> tuple:
    """:func:`_post_report` with the installation token of the investigation's repository."""
    from triage.serve.auth import from_settings
    from triage.usecases.post import repo_of

    url, _ = _open(writes=not options.get("dry_run"))
    creds = from_settings(state.settings)
    client = creds.client(None, repo_of(url, pr, repo))  # owned by creds: not closed here
    options["bot_login"] = options.get("bot_login") or creds.bot_login
    return _post_report(client, pr, repo, **options)


def _say_posted(result: Any, body: str, inv: dict, format: str) -> None:
    check = result.check
    if format == "json":
        _json_out({"action": result.action, "url": result.url, "repo": inv["repo"], "pr": inv["pr"],
                   "request": result.request, "body": body if result.request is not None else None,
                   **({"check_run": {"action": check.action, "url": check.url, "request": check.request,
                                     "reason": check.reason}} if check is not None else {})})
        return
    where = result.url or f"a new comment on {inv['repo']}#{inv['pr']}"
    typer.echo(f"{result.action} {where}")
    if check is not None and check.reason is None:  # a reason went to stderr already
        typer.echo(check.line())
        if check.request is not None:
            typer.echo(check.request)
    if result.request is not None:
        typer.echo(result.request)
        typer.echo("")
        sys.stdout.write(body)


def _post_report(client: Any, pr: int, repo: Optional[str], **options: Any) -> tuple:
    """:func:`triage.usecases.post.post_report` on the knowledge base the command names."""
    from triage.usecases.post import post_report

    url, _ = _open(writes=not (options.get("dry_run") or options.get("offline")))  # a dry run reads only
    return post_report(url, client, pr, repo, note=_err, **options)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port to listen on.", min=0, max=65535)] = 8080,
    workers: Annotated[int, typer.Option("--workers", help="Deliveries worked on at once.", min=1, max=64)] = 4,
    auth: Annotated[Optional[str], typer.Option(
        "--auth", envvar="TRIAGE_DASHBOARD_TOKEN", metavar="TOKEN",
        help="Require 'Authorization: Bearer TOKEN' for the dashboard pages.")] = None,
    insecure_no_signature: Annotated[bool, typer.Option(
        "--insecure-no-signature", help="Accept unsigned webhooks (no TRIAGE_WEBHOOK_SECRET); loopback only.")] = False,
    bot_login: Annotated[Optional[str], typer.Option(
        "--bot-login", help="The account whose comment is ours [default: the App's <slug>[bot], else the token's login].")] = None,
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1, help="Attempts before a delivery is kept as failed.")] = 5,
    open_dashboard: Annotated[bool, typer.Option(
        "--open-dashboard", help="Show the dashboard without a token on a non-loopback --host (to anyone who can reach it).")] = False,
    grace: Annotated[float, typer.Option(
        "--grace", min=1, max=3600, help="Seconds from SIGTERM to exit: half for open requests, half for deliveries under way.")] = 30.0,
    lease: Annotated[float, typer.Option(
        "--lease", min=1, max=3600, help="Seconds a delivery this server works on stays its own without a heartbeat: "
        "then another replica takes it.")] = 60.0,
) -> None:
    """Run the GitHub App: follow CI by webhook, keep the comments current, show a dashboard.

    Examples:

    \b
      triage serve --insecure-no-signature    # local: the dashboard at http://127.0.0.1:8080/
      triage serve --host 0.0.0.0 --workers 8 # behind TLS, with TRIAGE_WEBHOOK_SECRET, TRIAGE_DASHBOARD_TOKEN and TRIAGE_DB set

    POST /webhook takes GitHub's deliveries, signed with TRIAGE_WEBHOOK_SECRET
    (X-Hub-Signature-256; wrong or missing: 401). Each completed workflow run
    or job that an investigation follows (its PR, or its rule file's match:)
    is queued in the knowledge base, answered at once, then recorded as with
    `add-run --from-github`, evaluated, and posted as with `triage post`; a
    failure is retried with backoff, a redelivery changes nothing. A new PR
    comment with /triage commands (exclude, include, mark, evidence, run,
    refresh, help) is acted on for users with write access. GET / lists
    the investigations, /pr/OWNER/NAME/N shows one (N.json: the JSON report),
    /deliveries the failed deliveries, /healthz says it is up.

    Several servers (replicas) may share one PostgreSQL knowledge base
    (TRIAGE_DB): each claims a delivery on a lease (--lease) that it renews
    while it works, and another takes it when the lease runs out. A SQLite
    knowledge base has one server.

    GitHub access: as a GitHub App with TRIAGE_APP_ID and TRIAGE_APP_PRIVATE_KEY
    (or TRIAGE_APP_PRIVATE_KEY_FILE), needing pip install 'triage[serve]'; else
    with GITHUB_TOKEN. Secrets and tokens are never logged. As an App it also
    sets the 'triage' check run on the PR's head commit, linked to the
    dashboard's page at TRIAGE_DASHBOARD_URL (its public address) when set.
    """

    import gc

    from triage.github.checks import validate_dashboard_url
    from triage.github.comments import validate_login
    from triage.serve.app import Settings, check_settings, run

    gc.enable()  # off for a short command (triage.__main__); a server that stays up collects its cycles
    if bot_login is not None:
        validate_login(bot_login)
    secret = state.settings.webhook_secret
    if secret is None and not insecure_no_signature:
        raise InputError("set TRIAGE_WEBHOOK_SECRET to the webhook's secret "
                         "(or, on a loopback address only, pass --insecure-no-signature)")
    dashboard = validate_dashboard_url(state.settings.dashboard_url)
    settings_check = Settings(db_url="", secret=secret.encode() if secret else None, host=host, auth=auth,
                              open_dashboard=open_dashboard)
    check_settings(settings_check)  # before the knowledge base is opened
    url, _ = _open(create=True)
    run(Settings(db_url=url, secret=secret.encode() if secret else None, host=host, port=port, workers=workers,
                 auth=auth, max_attempts=max_attempts, bot_login=bot_login, open_dashboard=open_dashboard,
                 grace=grace, lease=lease, dashboard_url=dashboard, templates=state.settings.templates),
        environment=state.settings)
