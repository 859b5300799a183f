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
    from triage.kb import migrate, store
    from triage.kb.db import _safe

    url = store.resolve_url(state.db)
    where = _safe(url)
    url = _readable(url, writes=False)
    engine = store.get_engine(url, upgrade=False)
    try:
        found = migrate.prepare(engine, where, upgrade=False)
    finally:
        engine.dispose()
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
    from triage.kb import migrate, store
    from triage.kb.db import _safe

    url = _readable(store.resolve_url(state.db), writes=True)
    engine = store.get_engine(url, upgrade=False)
    try:
        found = migrate.prepare(engine, _safe(url), notify=typer.echo)
    finally:
        engine.dispose()
    if found.state == "empty":
        typer.echo(f"created the knowledge base at schema version {found.head}")
    elif found.state == "current":
        typer.echo(f"schema version {found.head}: up to date, nothing to do")
