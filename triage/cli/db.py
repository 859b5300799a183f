"""Commands about the knowledge base's schema: db status|upgrade."""

from __future__ import annotations

import typer

from triage.cli.base import (
    _readable,
    db_app,
    state,
)


@db_app.command("status")
def db_status() -> None:
    """Show the knowledge base's schema version and whether it needs an upgrade.

    Example:

    \b
      triage db status

    Changes nothing. A knowledge base with no version, or one this triage
    does not know, is an error (exit 1) that says what to do.
    """
    from triage.kb import store
    from triage.kb.db import _safe
    from triage.usecases.schema import status

    url = store.resolve_url(state.db)
    where = _safe(url)  # named as given, though read from a private copy
    found = status(_readable(url, writes=False), where)
    if found.state == "empty":
        typer.echo(f"schema version: none yet (empty); the first command creates it at version {found.head}")
    elif found.state == "older":
        typer.echo(f"schema version {found.version}, this triage writes {found.head}: "
                   "`triage db upgrade` upgrades it (so does any other command)")
    else:
        typer.echo(f"schema version {found.version}: up to date")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Upgrade the knowledge base to this triage's schema version.

    Example:

    \b
      triage db upgrade

    All migrations run in one transaction; a SQLite file is first copied
    next to itself (kb.sqlite.v1.bak). Any command upgrades an older
    knowledge base the same way when it opens it.
    """
    from triage.kb import store
    from triage.usecases.schema import upgrade

    found = upgrade(_readable(store.resolve_url(state.db), writes=True), notify=typer.echo)
    if found.state == "empty":
        typer.echo(f"created the knowledge base at schema version {found.head}")
    elif found.state == "current":
        typer.echo(f"schema version {found.head}: up to date, nothing to do")
