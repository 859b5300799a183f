"""The statements a command sends to the knowledge base, as SQLAlchemy hands them to the driver."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional


@contextmanager
def recorded(target: Optional[Any] = None) -> Iterator[list[tuple[str, tuple]]]:
    """(statement, parameters) of each statement sent on ``target`` (an engine; None: every
    engine) while the block runs, in order."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    on = Engine if target is None else target
    seen: list[tuple[str, tuple]] = []

    def listen(conn: Any, cursor: Any, sql: str, params: Any, *_: Any) -> None:
        seen.append((sql, tuple(params or ())))

    event.listen(on, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        event.remove(on, "before_cursor_execute", listen)
