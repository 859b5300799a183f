"""The Jinja environment and the filters that keep user text harmless.

Everything from logs and users passes through ``cell``/``md``/``code`` before
it reaches the comment: it cannot break a table, open or close an HTML
comment (and so never forge or close the hidden marker), inject HTML, or
@-mention people and teams.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any, Iterator, Optional
from urllib.parse import quote

from triage import limits
from triage.errors import InputError
from triage.render.commands import wrap

_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_HTML = str.maketrans({"<": "&lt;", ">": "&gt;", "&": "&amp;"})
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")
# Kept as they are in a link target; everything else is percent-encoded
# (also "@", so that no raw "@name" is left for a mention scanner).
_URL_SAFE = ":/?#!$&*+,;=%-._~"


def template_dirs(extra: Optional[str] = None) -> list[str]:
    """User templates first (``--templates``/``TRIAGE_TEMPLATES``), then ours."""
    import os

    dirs = []
    for d in (extra, os.environ.get("TRIAGE_TEMPLATES")):
        if d:
            dirs.append(d)
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            dirs.append(str(candidate))
    return dirs


def _inert_comments(s: str) -> str:
    """Code spans show text as is, so an HTML comment opener or closer in one
    would still read as the marker to a program scanning the raw body: a
    zero-width space keeps it visible but no longer a comment token."""
    return s.replace("<!--", "<\u200b!--").replace("-->", "--\u200b>")


def md(text: Any) -> str:
    """Inline markdown text: no HTML, no mentions, no markup, one line."""
    s = "" if text is None else str(text)
    s = s.translate(_HTML)
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = _MENTION.sub("@&#8203;", s)
    return " ".join(s.split())


def html(text: Any) -> str:
    """Text inside raw HTML (a fold's ``<summary>``), where markdown is not
    read: entities for ``<``, ``>``, ``&``, no mentions, one line."""
    s = "" if text is None else str(text)
    s = s.translate(_HTML)
    s = _MENTION.sub("@&#8203;", s)
    return " ".join(s.split())


def cell(text: Any) -> str:
    """Text for a table cell: like ``md`` (which already escapes ``|``)."""
    return md(text)


def code(text: Any, cell: bool = True) -> str:
    """An inline code span that survives any content, also inside tables.

    ``cell=False`` (``| code(false)`` in a template) is for a span outside a
    table, where ``\\|`` would show its backslash.
    """
    s = " ".join(("" if text is None else str(text)).split())
    if not s:
        return ""
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    # Inside a table GFM splits cells on | before it reads code spans.
    if cell:
        s = s.replace("|", "\\|")
    # Code spans do not decode entities, so mentions are broken with a
    # zero-width space instead; < and > are inert inside code.
    s = _inert_comments(_MENTION.sub("@\u200b", s))
    return f"{fence}{pad}{s}{pad}{fence}"


def link(text: Any, url: Optional[str], refs: Optional["LinkRefs"] = None) -> str:
    """A markdown link to an http(s) URL, else the escaped text.

    The URL is percent-encoded beyond RFC 3986's own characters: a ``|``
    would end a table cell (GFM splits cells before it reads links), and
    backticks, brackets or backslashes could end the link early.  With
    ``refs`` the link is a reference (``[label][3]``) whose URL is written
    once, at the end of the comment.
    """
    label = md(text)
    if not url or not re.match(r"^https?://[^\s<>()\"']+$", str(url)):
        return label
    target = quote(str(url), safe=_URL_SAFE)
    if refs is not None:
        return f"[{label}][{refs.number(target)}]"
    return f"[{label}]({target})"


class LinkRefs:
    """The URLs of one rendering, each written once as a reference definition.

    A run linked from the summary, the runs table and a bisect point costs its
    URL once; labels are numbers, so no user text reaches a definition.
    """

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}

    def number(self, target: str) -> int:
        return self._numbers.setdefault(target, len(self._numbers) + 1)

    def definitions(self) -> str:
        return "\n".join(f"[{n}]: {target}" for target, n in self._numbers.items())


def _link_filter(context: Any, text: Any, url: Optional[str]) -> str:
    """``| link(url)`` in a template: a reference link when the renderer collects them."""
    refs = context.get("link_refs")
    return link(text, url, refs if isinstance(refs, LinkRefs) else None)


def block(text: Any) -> str:
    """A fenced code block for multi-line text (commands, log excerpts)."""
    s = "" if text is None else str(text)
    longest = max((len(m) for m in re.findall(r"`{3,}", s)), default=2)
    fence = "`" * (longest + 1)
    s = _inert_comments(_MENTION.sub("@\u200b", s))
    return f"{fence}\n{s}\n{fence}"


@lru_cache(maxsize=8)
def environment(extra: Optional[str] = None) -> Any:
    from jinja2 import FileSystemBytecodeCache, FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    try:  # compiled templates are reused across runs (per user, in the temp dir)
        cache = FileSystemBytecodeCache()
    except OSError:  # pragma: no cover - no usable temp dir
        cache = None
    env = SandboxedEnvironment(
        loader=FileSystemLoader(template_dirs(extra)),
        bytecode_cache=cache,
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    from jinja2 import pass_context

    env.filters.update(md=md, cell=cell, html=html, code=code, link=pass_context(_link_filter), block=block,
                       shell=wrap)
    return env


class TemplateLimit(Exception):
    """A rule-file template went past a limit (see :func:`render_string`)."""


def _bounded_sandbox() -> Any:
    """A sandbox that refuses, before computing it, any value bigger than the
    output limit: ``'x' * 3000000000`` is never allocated."""
    from jinja2.sandbox import SandboxedEnvironment

    class Bounded(SandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**", "+", "<<"])

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            cap = limits.get("template_output")
            size = _result_size(operator, left, right)
            if size > cap:
                raise TemplateLimit(f"would make a value of {size:,} characters")
            if operator in ("**", "<<") and isinstance(right, (int, float)) and abs(right) > 64:
                raise TemplateLimit(f"{operator} {right} is too large a power")
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            # str.format comes wrapped by the sandbox: its string is the wrapped method's __self__
            _check_args((getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None), *args), kwargs)
            return super().call(__context, __obj, *args, **kwargs)

    return Bounded


_WIDE = re.compile(r"\d{6,}")  # a width or precision in a format string


def _check_args(args: tuple, kwargs: dict) -> None:
    """Refuse a call whose numbers (or format widths) exceed the output limit:
    ``'x'|center(10**9)`` or ``'%999999999d'|format(1)`` allocate in C."""
    cap = limits.get("template_output")
    for a in (*args, *kwargs.values()):
        if isinstance(a, int) and not isinstance(a, bool) and abs(a) > cap:
            raise TemplateLimit(f"a call with the number {a:,} is refused")
        if isinstance(a, str) and ("%" in a or "{" in a) and any(int(w) > cap for w in _WIDE.findall(a)):
            raise TemplateLimit("a format width over the output limit is refused")


def _bounded_filter(f: Any) -> Any:
    @wraps(f)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_args(args, kwargs)
        return f(*args, **kwargs)

    return bounded


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _result_size(operator: str, left: Any, right: Any) -> int:
    """The length of ``left OPERATOR right`` when it is a sequence, else 0."""
    if operator == "+":
        return _size(left) + _size(right)
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            if _size(seq) and isinstance(times, int):
                return _size(seq) * times
    return 0


@lru_cache(maxsize=1)
def _string_env() -> Any:
    from jinja2 import StrictUndefined

    env = _bounded_sandbox()(undefined=StrictUndefined, autoescape=False)
    env.filters = {name: _bounded_filter(f) for name, f in env.filters.items()}
    return env


def render_string(text: str, values: dict) -> str:
    """Render a small template from a rule file (``because:``), within the
    output and time limits (``TRIAGE_MAX_TEMPLATE_OUTPUT``,
    ``TRIAGE_MAX_TEMPLATE_SECONDS``); past one it is an input error."""
    from jinja2 import TemplateError

    cap = limits.get("template_output")
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
        raise InputError(f"the template {_short(text)}: {e}; TRIAGE_MAX_TEMPLATE_OUTPUT and "
                         "TRIAGE_MAX_TEMPLATE_SECONDS raise the limits") from None
    except TemplateError as e:
        return f"{text} [template error: {e}]"
    except (MemoryError, OverflowError, RecursionError) as e:
        raise InputError(f"the template {_short(text)}: {type(e).__name__}") from None


#: Values like the ones a rule's ``because:`` is rendered with, for a trial render.
_SAMPLE = {"value": "0.500", "gate": "0.900", "ref": {}, "runs": []}


def check_template(text: str) -> None:
    """Render a ``because:`` once with sample values when a rule file is
    loaded, so that a template past a limit is refused with its place in the
    file (ValueError) before anything is written."""
    try:
        render_string(text, _SAMPLE)
    except InputError as e:
        raise ValueError(e.message) from None


def _short(text: str) -> str:
    one = " ".join(text.split())
    return repr(one if len(one) <= 60 else one[:59] + "…")


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Stop the template after ``seconds`` (in the main thread, by a timer signal)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise TemplateLimit(f"took more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
