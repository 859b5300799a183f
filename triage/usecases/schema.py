"""The knowledge base's schema: its version (``triage db status``), and upgrading it
(``triage db upgrade``; any command upgrades an older one as it opens it).
"""

from __future__ import annotations

from typing import Any, Callable, Optional


def status(url: str, shown: Optional[str] = None) -> Any:
    """The schema state of the knowledge base at ``url`` (``empty``, ``older`` or ``current``,
    with its version and this triage's), changing nothing; ``shown``: how messages name it
    (default: ``url`` without its password)."""
    return _prepare(url, shown, upgrade=False)


def upgrade(url: str, notify: Optional[Callable[[str], None]] = None) -> Any:
    """Upgrade the knowledge base at ``url`` to this triage's schema version, in one transaction
    (a SQLite file copied next to itself first); ``notify(text)`` hears each step.  Its state before."""
    return _prepare(url, None, notify=notify)


def _prepare(url: str, shown: Optional[str], **options: Any) -> Any:
    from triage.kb import migrate, store
    from triage.kb.db import _safe

    engine = store.get_engine(url, upgrade=False)
    try:
        return migrate.prepare(engine, shown or _safe(url), **options)
    finally:
        engine.dispose()
