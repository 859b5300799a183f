"""The sandbox that renders rule-file templates (``because:``), bounded in
time and memory in any process and any thread.

* Time: a trace function on the template's own frames looks at the clock on
  every line it runs, so a loop stops at ``TRIAGE_MAX_TEMPLATE_SECONDS`` in
  the server's threads as in the command line (a timer signal only reaches
  the main thread).  The error unwinds through the caller, whose transaction
  rolls back and lets its locks go.
* Memory: every operation a template can reach that makes a value bigger
  than its operands (``*``, ``**``, ``<<``, ``+``, ``~``, ``%``,
  ``str.format``, ``join``, ``replace``, ``expandtabs``, ``translate``,
  ``center``…, ``indent``, ``wordwrap``) is refused before it runs when its
  result would exceed ``TRIAGE_MAX_TEMPLATE_OUTPUT`` characters; every value
  made counts against a budget of ten times that per rendering; lists and
  dicts cannot be changed in place, and only ``range``, ``dict`` and
  ``namespace`` are global.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from contextlib import contextmanager
from functools import lru_cache, wraps
from typing import Any, Iterator

from triage import limits
from triage.errors import InputError

__all__ = ["TemplateLimit", "render_string", "check_template"]

BUDGET_TIMES = 10  # the characters one rendering may make in all, in output limits
MAX_BITS = 4096 * 3  # a whole number's size (Python prints no more than 4,300 digits)


class TemplateLimit(Exception):
    """A rule-file template went past a limit (see :func:`render_string`)."""


class _Budget:
    """What one rendering has made so far, in characters (or items)."""

    def __init__(self) -> None:
        self.cap = limits.get("template_output")
        self.left = self.cap * BUDGET_TIMES

    def admit(self, size: int) -> None:
        if size > self.cap:
            raise TemplateLimit(f"would make a value of {size:,} characters")
        self.left -= size
        if self.left < 0:
            raise TemplateLimit(f"made more than {self.cap * BUDGET_TIMES:,} characters of values in all")


_local = threading.local()  # the budget of the rendering under way in this thread


def _current() -> _Budget:
    budget = getattr(_local, "budget", None)
    return budget if budget is not None else _Budget()


def _size(value: Any) -> int:
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3
    return 0


def _total(items: Any) -> int:
    """The sizes of ``items`` added up (in C for texts: no Python call per item)."""
    try:
        return sum(map(len, items))
    except TypeError:  # not all of them have a length
        return sum(_size(x) for x in items)


def _binop_size(operator: str, left: Any, right: Any) -> int:
    """The size of ``left OPERATOR right`` before it is computed."""
    ints = all(isinstance(x, int) and not isinstance(x, bool) for x in (left, right))
    if operator in ("**", "<<") and isinstance(right, (int, float)) and abs(right) > 64:
        raise TemplateLimit(f"{operator} {right} is too large a power")
    if ints and operator in ("**", "<<", "*"):
        bits = {"**": left.bit_length() * abs(right), "<<": left.bit_length() + abs(right),
                "*": left.bit_length() + right.bit_length()}[operator]
        if bits > MAX_BITS:
            raise TemplateLimit(f"would make a number of more than {MAX_BITS:,} bits")
        return bits // 3
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            if _size(seq) and isinstance(times, int):
                return _size(seq) * times
    if operator == "%" and isinstance(left, str):
        _check_format(left, right if isinstance(right, tuple) else (right,))
        return len(left) + sum(_size(x) for x in (right if isinstance(right, tuple) else (right,)))
    if operator == "+":
        return _size(left) + _size(right)
    return 0


_WIDE = re.compile(r"\d{6,}")  # a width or precision in a format string


def _check_format(fmt: str, args: tuple) -> None:
    """``'%0999999999d' % 1`` and ``'%*d' % (10**9, 1)`` allocate in C: refused."""
    cap = _current().cap
    if any(int(w) > cap for w in _WIDE.findall(fmt)):
        raise TemplateLimit("a format width over the output limit is refused")
    if "*" in fmt and any(isinstance(a, int) and abs(a) > cap for a in args):
        raise TemplateLimit("a format width over the output limit is refused")


def _method_size(obj: Any, args: tuple, kwargs: dict) -> int:
    """The size of a ``str`` method's result before it runs (0: not one that grows)."""
    self, name = getattr(obj, "__self__", None), getattr(obj, "__name__", "")
    if not isinstance(self, str):
        return 0
    if name == "join" and args:
        items = list(args[0]) if not isinstance(args[0], (str, list, tuple)) else args[0]
        return len(self) * max(0, len(items) - 1) + _total(items)
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        old, new = args[0], args[1]
        times = len(self) + 1 if old == "" else self.count(old)
        return len(self) + times * max(0, len(new) - len(old))
    if name == "expandtabs":
        size = args[0] if args else kwargs.get("tabsize", 8)
        return len(self) + self.count("\t") * (size if isinstance(size, int) else 8)
    if name in ("center", "ljust", "rjust", "zfill") and args and isinstance(args[0], int):
        return max(len(self), args[0])
    if name == "translate" and args and isinstance(args[0], dict):
        longest = max((_size(v) for v in args[0].values()), default=1)
        return len(self) * max(1, longest)
    return 0


def _filter_size(name: str, args: tuple, kwargs: dict) -> int:
    """The size of a growing filter's result before it runs."""
    values = list(args) + list(kwargs.values())
    text = next((v for v in values if isinstance(v, str)), "")
    if name == "join" and values:
        seq = next((v for v in values if isinstance(v, (list, tuple, str))), ())
        sep = next((v for v in values[1:] if isinstance(v, str)), "")
        return len(sep) * max(0, len(seq) - 1) + _total(seq)
    if name == "replace" and len(args) >= 3:
        return _method_size(str(args[0]).replace, tuple(args[1:3]), {})
    if name in ("indent", "wordwrap"):  # a prefix per line; a wrap string per character at most
        widest = max((_size(v) if isinstance(v, str) else v for v in values[1:]
                      if isinstance(v, (str, int)) and not isinstance(v, bool)), default=0)
        pieces = text.count("\n") + 1 if name == "indent" else len(text) + 1
        return len(text) + pieces * widest
    return 0


def _check_args(args: tuple, kwargs: dict) -> None:
    """Refuse a call whose numbers (or format widths) exceed the output limit:
    ``'x'|center(10**9)`` or ``'%999999999d'|format(1)`` allocate in C."""
    cap = _current().cap
    for a in (*args, *kwargs.values()):
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > cap:
            raise TemplateLimit(f"a call with the number {a:,} is refused")
        if isinstance(a, str) and ("%" in a or "{" in a):
            _check_format(a, ())


def _sized(args: tuple) -> tuple:
    """Iterators (``map``, generators) as lists, so that a result's size can be
    told before the call; what a template iterates is bounded (``range``)."""
    if not any(hasattr(a, "__next__") for a in args):
        return args
    return tuple(list(a) if hasattr(a, "__next__") else a for a in args)


def _bounded_sandbox() -> Any:
    from jinja2.compiler import CodeGenerator
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter

    class Concat(CodeGenerator):
        """``a ~ b`` goes through the environment, which counts what it makes."""

        def visit_Concat(self, node: Any, frame: Any) -> None:
            self.write("environment.bounded_concat((")
            for arg in node.nodes:
                self.visit(arg, frame)
                self.write(", ")
            self.write("))")

    class Formatter(SandboxedFormatter):
        def format_field(self, value: Any, format_spec: str) -> Any:
            _check_format(format_spec, ())
            return super().format_field(value, format_spec)

    class Bounded(ImmutableSandboxedEnvironment):
        code_generator_class = Concat
        intercepted_binops = frozenset(["*", "**", "+", "<<", "%"])

        def bounded_concat(self, parts: tuple) -> str:
            texts = [str(p) for p in parts]
            _current().admit(sum(map(len, texts)))
            return "".join(texts)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _current().admit(_binop_size(operator, left, right))
            return super().call_binop(context, operator, left, right)

        def wrap_str_format(self, value: Any) -> Any:
            """``str.format``/``format_map`` with every field's width checked first."""
            if super().wrap_str_format(value) is None:
                return None
            text, as_map = value.__self__, value.__name__ == "format_map"

            def formatted(*args: Any, **kwargs: Any) -> str:
                if as_map:
                    args, kwargs = (), (args[0] if len(args) == 1 and not kwargs else {})
                _check_args(args, kwargs)
                out = str(Formatter(self).vformat(text, args, kwargs))
                _current().admit(len(out))
                return out

            return wraps(value)(formatted)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            args = _sized(args)
            # str.format comes wrapped by the sandbox: its string is the wrapped method's __self__
            _check_args((getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None), *args), kwargs)
            _current().admit(_method_size(__obj, args, kwargs))
            out = super().call(__context, __obj, *args, **kwargs)
            _current().admit(_size(out))
            return out

    return Bounded


GROWING_FILTERS = frozenset(["join", "replace", "indent", "wordwrap"])


def _bounded_filter(name: str, f: Any) -> Any:
    grows = name in GROWING_FILTERS

    @wraps(f)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        budget = _current()
        if grows:
            args = _sized(args)
            plain = tuple(a for a in args if not hasattr(a, "environment"))  # not the eval context
            budget.admit(_filter_size(name, plain, kwargs))
        _check_args(args, kwargs)
        out = f(*args, **kwargs)
        budget.admit(_size(out))
        return out

    return bounded


@lru_cache(maxsize=1)
def _string_env() -> Any:
    from jinja2 import StrictUndefined

    env = _bounded_sandbox()(undefined=StrictUndefined, autoescape=False)
    env.filters = {name: _bounded_filter(name, f) for name, f in env.filters.items()}
    env.globals = {k: v for k, v in env.globals.items() if k in ("range", "dict", "namespace")}
    return env


def render_string(text: str, values: dict, *, trial: bool = False) -> str:
    """Render a small template from a rule file (``because:``), within the
    output and time limits (``TRIAGE_MAX_TEMPLATE_OUTPUT``,
    ``TRIAGE_MAX_TEMPLATE_SECONDS``); past one it is an input error, and
    the template is refused at once afterwards in this process (not after a
    ``trial``, whose sample values say nothing of the real ones)."""
    from jinja2 import TemplateError

    cap = limits.get("template_output")
    key = (text, cap, limits.seconds("template_seconds"))
    if key in _tripped and not trial:  # past these limits before, in this process: refused at once
        raise InputError(_tripped[key])
    _local.budget = _Budget()
    try:
        with _deadline(limits.seconds("template_seconds")):
            out: list[str] = []
            size = 0
            for piece in _string_env().from_string(text).generate(**values):
                size += len(piece)
                if size > cap:
                    raise TemplateLimit(f"renders more than {cap:,} characters")
                out.append(piece)
            return "".join(out)
    except TemplateLimit as e:
        message = (f"the template {_short(text)}: {e}; TRIAGE_MAX_TEMPLATE_OUTPUT and "
                   "TRIAGE_MAX_TEMPLATE_SECONDS raise the limits")
        if len(_tripped) < 1000 and not trial:
            _tripped[key] = message
        raise InputError(message) from None
    except TemplateError as e:
        return f"{text} [template error: {e}]"
    except (MemoryError, OverflowError, RecursionError, ValueError) as e:
        raise InputError(f"the template {_short(text)}: {type(e).__name__}") from None
    finally:
        _local.budget = None


#: Templates that went past a limit, with the message: a server that renders
#: one again and again (every page, every delivery) spends its time limit once,
#: not each time while holding the knowledge base's write lock.
_tripped: dict[tuple, str] = {}


#: Values like the ones a rule's ``because:`` is rendered with, for a trial render.
_SAMPLE = {"value": "0.500", "gate": "0.900", "ref": {}, "runs": []}


def check_template(text: str) -> None:
    """Render a ``because:`` once with sample values when a rule file is
    loaded, so that a template past a limit is refused with its place in the
    file (ValueError) before anything is written."""
    try:
        render_string(text, _SAMPLE, trial=True)
    except InputError as e:
        raise ValueError(e.message) from None


def _short(text: str) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= 60 else one[:59] + "…")


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Stop the template after ``seconds``, in any thread: a trace function
    on the template's frames (compiled from ``<template>``) checks the clock
    at each line, and its error unwinds the rendering."""
    end = time.monotonic() + seconds

    def line(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > end:
            raise TemplateLimit(f"took more than {seconds:g} s")
        return line

    def calls(frame: Any, event: str, arg: Any) -> Any:
        return line if frame.f_code.co_filename == "<template>" else None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        yield
    finally:
        sys.settrace(previous)
