"""The knowledge base's tables for statements of columns, without the table classes.

Defining the 21 table classes of :mod:`triage.kb.models` (SQLModel: pydantic
and SQLAlchemy's declarative mapping of each) costs a command about 50 ms of
CPU, an eighth of what importing its libraries does.  Most commands only read
and write columns (a report, an add-run: a test holds that an add-run maps no
table), which SQLAlchemy's ``Table`` objects are enough for.

``tables.Run`` (any class name of :mod:`triage.kb.models`) is that class's
table.  While the classes are not defined in this process, it is the table of
a copy of their ``MetaData``, kept pickled beside the rule cache
(:mod:`triage.rules.language.kept`, under the code's stamp and SQLAlchemy's
version) and made from the classes the first time.  Once something defines the
classes (a statement of mapped objects, through :data:`models`), it is the
classes' own.  A statement takes all its tables at once, so it never joins a
table with its copy.

``models`` stands for :mod:`triage.kb.models` and defines the classes when
first asked for one: the modules of the knowledge base name it ``m`` as they
named the module.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

_MODELS = "triage.kb.models"
_copy: Optional[dict[str, Any]] = None  # class name -> the table of the pickled copy


def __getattr__(name: str) -> Any:
    """The table of the class ``name`` (see the module's text)."""
    if name.startswith("_"):
        raise AttributeError(name)
    defined = sys.modules.get(_MODELS)
    if defined is not None:
        return getattr(defined, name).__table__
    copy = _tables()
    if name not in copy:
        raise AttributeError(f"no table class {name!r} in {_MODELS}")
    return copy[name]


def metadata() -> Any:
    """The ``MetaData`` of every table (to create them): the classes' own once they are defined,
    else that of the copy, without defining them."""
    defined = sys.modules.get(_MODELS)
    if defined is not None:
        from sqlmodel import SQLModel

        return SQLModel.metadata
    return next(iter(_tables().values())).metadata


def _tables() -> dict[str, Any]:
    global _copy
    if _copy is None:
        import sqlalchemy

        from triage.rules.language import kept

        _copy = kept.validated(f"tables of {_MODELS}, SQLAlchemy {sqlalchemy.__version__}", _classes_tables)
    return _copy


def _classes_tables() -> dict[str, Any]:
    """Each table class's name and a copy of its table (the classes defined to know them),
    with SQLModel's column types replaced by their plain counterparts (:mod:`triage.kb.coltypes`):
    reading the copy back imports neither SQLModel nor pydantic."""
    import importlib

    from sqlalchemy import MetaData

    from triage.kb.coltypes import plain

    module = importlib.import_module(_MODELS)
    classes = {name: cls.__table__ for name, cls in vars(module).items()
               if isinstance(cls, type) and getattr(cls, "__table__", None) is not None and cls.__module__ == _MODELS}
    copy = MetaData(naming_convention=dict(next(iter(classes.values())).metadata.naming_convention))
    out = {}
    for name, table in classes.items():
        out[name] = table.to_metadata(copy)
        for column in out[name].columns:
            column.type = plain(column.type)
    return out


class _Models:
    """:mod:`triage.kb.models`, imported when first asked for a name."""

    def __getattr__(self, name: str) -> Any:
        import importlib

        return getattr(importlib.import_module(_MODELS), name)


models = _Models()
