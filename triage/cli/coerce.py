"""Command-line values turned into their types without building a pydantic validator each.

typer (0.29) coerces every parameter of the command it runs, given or not, with a pydantic
``TypeAdapter`` it builds for the parameter: the first one imports pydantic's validators
(about 0.1 s where nothing else needs pydantic, a report of an unchanged knowledge base) and
each one builds a schema.  Here, a parameter of any kind not given is None (or ``()``), as
typer's coercion makes it before it looks at the type; and of texts, lists of texts and
whole numbers, the plain values are taken as the adapter takes them: a text is itself, a
list of texts a list, a number of plain digits within its bounds that number.  Any other
value (a number out of range or written otherwise, a value of another type, any value of
another kind of parameter) goes to typer's own coercion, built when first needed: its
errors and its readings stay typer's.  ``tests/cli/test_coerce.py`` holds the two to the
same result on every value.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional

#: A whole number written the plainest way: what ``int`` and the adapter read alike.
_PLAIN_INT = re.compile(r"-?[0-9]{1,18}")
#: Returned by :meth:`Quick.quick` for a value it leaves to typer.
_NOT_HERE = object()


class Quick:
    """A parameter's coercion (typer's ``RuntimeParam``, as ``process_value`` calls it): the
    plain values here, every other one by typer's own, built when first needed."""

    __slots__ = ("descriptor", "kind", "low", "high", "_full")

    def __init__(self, descriptor: Any, kind: str, low: Optional[int] = None, high: Optional[int] = None) -> None:
        self.descriptor, self.kind, self.low, self.high = descriptor, kind, low, high
        self._full: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multiple = param.multiple or param.nargs == -1
        if value is None:
            return () if multiple else None
        got = self.quick(value, multiple)
        if got is not _NOT_HERE:
            return got
        return self.full().coerce(value, param=param, ctx=ctx)

    def quick(self, value: Any, multiple: bool) -> Any:
        """``value`` as the adapter gives it back, or :data:`_NOT_HERE`."""
        if self.kind == "other":
            return _NOT_HERE
        if self.kind == "texts":
            if multiple and type(value) in (list, tuple) and all(type(v) is str for v in value):
                return list(value)
            return _NOT_HERE
        if multiple:
            return _NOT_HERE
        if self.kind == "text":
            return value if type(value) is str else _NOT_HERE
        if type(value) is str:  # "int"
            if _PLAIN_INT.fullmatch(value) is None:
                return _NOT_HERE
            value = int(value)
        elif type(value) is not int:
            return _NOT_HERE
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return _NOT_HERE  # typer's says how it is out of range
        return value

    def full(self) -> Any:
        if self._full is None:
            from typer._coercion import build_runtime_param

            self._full = build_runtime_param(self.descriptor)
        return self._full


def quick_for(descriptor: Any) -> Quick:
    """The coercion of a parameter: of a plain value here, if the parameter is of a kind
    taken here, else typer's (``other``); of no value here, whatever its kind."""
    info = descriptor.parameter_info
    if (getattr(info, "parser", None) is not None or descriptor.is_file or descriptor.is_choice
            or getattr(info, "clamp", False)):
        return Quick(descriptor, "other")
    annotation = descriptor.annotation
    if annotation is str:
        return Quick(descriptor, "text")
    if annotation == List[str] or annotation == list[str]:
        return Quick(descriptor, "texts")
    if annotation is int and _bound(info.min) and _bound(info.max):
        return Quick(descriptor, "int", info.min, info.max)
    return Quick(descriptor, "other")


def _bound(value: Any) -> bool:
    return value is None or type(value) is int


def install() -> None:
    """Have typer's parameters take their plain values here (once per process)."""
    from typer.core import _TyperParameter

    if getattr(_TyperParameter, "_triage_quick", False):
        return
    built = _TyperParameter.get_runtime_param

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            self._runtime_param = quick_for(self.type_descriptor)
        return built(self)

    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
    _TyperParameter._triage_quick = True  # type: ignore[attr-defined]
