"""The column types of the tables' kept copy (:mod:`triage.kb.tables`), without SQLModel.

The table classes (:mod:`triage.kb.models`) declare their texts and times with SQLModel's
``AutoString`` and ``UTCDateTime``.  A copy of their tables that held those types would
import SQLModel, and with it pydantic, in every command that reads the copy back (a tenth
of a second, where a report of an unchanged knowledge base needs neither).  The copy holds
these instead: the same SQL, the same values bound and read (``tests/kb/test_tables.py``
holds them to it)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Optional

from sqlalchemy import types


class Text(types.TypeDecorator):
    """A text column as ``AutoString`` is: a ``VARCHAR``, 255 long on MySQL when no length is given."""

    impl = types.String
    cache_ok = True

    def load_dialect_impl(self, dialect: Any) -> Any:
        if self.impl.length is None and dialect.name in ("mysql", "mariadb"):  # type: ignore[attr-defined]
            return dialect.type_descriptor(types.String(255))
        return super().load_dialect_impl(dialect)


class UTCTime(types.TypeDecorator):
    """An aware time, stored and read back in UTC, as ``UTCDateTime`` is (a naive one is refused)."""

    impl = types.DateTime
    cache_ok = True

    def __init__(self) -> None:
        super().__init__(timezone=True)

    def coerce_compared_value(self, op: Any, value: Any) -> Any:
        return types.Interval() if isinstance(value, timedelta) else self

    def process_bind_param(self, value: Optional[datetime], dialect: Any) -> Optional[datetime]:
        if value is None:
            return None
        if value.utcoffset() is None:
            raise ValueError("a time without a time zone cannot be stored: give it one (UTC)")
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: Optional[datetime], dialect: Any) -> Optional[datetime]:
        if value is None:
            return None
        if value.utcoffset() is None:  # a database without time zones keeps UTC without an offset
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def plain(column_type: Any) -> Any:
    """``column_type`` as the copy holds it: SQLModel's text and time types replaced by these."""
    kind = type(column_type)
    if not kind.__module__.startswith("sqlmodel"):
        return column_type
    if kind.__name__ == "AutoString":
        made: types.TypeDecorator = Text(column_type.impl.length)
    elif kind.__name__ == "UTCDateTime":
        made = UTCTime()
    else:
        raise TypeError(f"a column type of SQLModel's with no plain counterpart: {kind.__name__}")
    # Worked out now, so that it is pickled with the type: unpickled, the type would work it
    # out before its ``impl`` is set again, from the class's (a class, not a type).
    made.impl_instance  # noqa: B018
    return made
