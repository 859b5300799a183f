"""The Jinja environment and the filters that keep user text harmless.

Everything from logs and users passes through ``cell``/``md``/``code`` before
it reaches the comment: it cannot break a table, open or close an HTML
comment (and so never forge or close the hidden marker), inject HTML, or
@-mention people and teams.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union
from urllib.parse import quote

from triage.render.commands import wrap

_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_HTML = str.maketrans({"<": "&lt;", ">": "&gt;", "&": "&amp;"})
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")
# Kept as they are in a link target; everything else is percent-encoded
# (also "@", so that no raw "@name" is left for a mention scanner).
_URL_SAFE = ":/?#!$&*+,;=%-._~"


def template_dirs(extra: Union[str, Sequence[str], None] = None) -> list[str]:
    """User templates first (a directory or several, the first wins: ``--templates``,
    then ``TRIAGE_TEMPLATES``), then ours."""
    dirs = [d for d in ((extra,) if isinstance(extra, str) else extra or ()) if d]
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
    if s.isalnum():  # a run id, a word: nothing to escape (a view has 20,000 run ids)
        return s
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
    target = _target(str(url)) if url else None
    if target is None:
        return label
    if refs is not None:
        return f"[{label}][{refs.number(target)}]"
    return f"[{label}]({target})"


@lru_cache(maxsize=4096)
def _target(url: str) -> Optional[str]:
    """The link target of ``url``: None unless http(s); each URL worked out once (a view links a
    run from its summary, its recipe's row, the runs table and the warnings)."""
    if not _LINKABLE.match(url):
        return None
    return quote(url, safe=_URL_SAFE)


_LINKABLE = re.compile(r"^https?://[^\s<>()\"']+\Z")


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


def _runlink_filter(context: Any, run: Any) -> str:
    """``| runlink`` in a template: a run's id, linked to its URL (the ``runlink`` macro of
    ``_macros.md.j2`` as a filter: a wide view links 20,000 runs, and a macro call costs
    more than the link)."""
    get = context.environment.getattr  # as ``run.run_id`` reads it: a run without one is undefined
    return _link_filter(context, get(run, "run_id"), get(run, "url"))


def block(text: Any) -> str:
    """A fenced code block for multi-line text (commands, log excerpts)."""
    s = "" if text is None else str(text)
    longest = max((len(m) for m in re.findall(r"`{3,}", s)), default=2)
    fence = "`" * (longest + 1)
    s = _inert_comments(_MENTION.sub("@\u200b", s))
    return f"{fence}\n{s}\n{fence}"


@lru_cache(maxsize=8)
def environment(extra: Union[str, tuple[str, ...], None] = None) -> Any:
    """The environment of the comment's templates: ours alone are our code, rendered as they
    are; with a user's (``extra``), sandboxed, since a user's template may be anyone's text.
    The sandbox checks every attribute a template reads: a wide investigation's comment read
    110,000 of them, a third of its rendering."""
    from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    dirs = template_dirs(extra)
    sandboxed = dirs != template_dirs(None)
    try:  # compiled templates are reused across runs (per user, in the temp dir), each kind of
        # environment its own: code compiled for the sandbox calls what it checks, and code
        # compiled without it would call the unchecked in the sandbox
        cache = FileSystemBytecodeCache(pattern=f"__triage_{'sandboxed' if sandboxed else 'ours'}_%s.cache")
    except OSError:  # pragma: no cover - no usable temp dir
        cache = None
    env = (SandboxedEnvironment if sandboxed else Environment)(
        loader=FileSystemLoader(dirs),
        bytecode_cache=cache,
        undefined=StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    from jinja2 import pass_context

    env.filters.update(md=md, cell=cell, html=html, code=code, link=pass_context(_link_filter), block=block,
                       runlink=pass_context(_runlink_filter),
                       shell=wrap)
    return env


@contextmanager
def users_templates(extra: Union[str, tuple[str, ...], None]) -> Iterator[None]:
    """Within it, a template of the user's (``extra``) that does not parse, reads what is not
    there or what the sandbox keeps from it is an input error, ``path:line: what``; an
    error in ours alone is ours, and raised as it is."""
    from jinja2 import TemplateError, TemplateSyntaxError

    from triage.errors import InputError

    try:
        yield
    except TemplateError as e:
        dirs = template_dirs(extra)
        if dirs == template_dirs(None):
            raise
        if isinstance(e, TemplateSyntaxError) and e.filename:
            where = f"{e.filename}:{e.lineno}"
        else:  # the template's line is in the traceback, as Jinja rewrites it
            import traceback

            lines = [f for f in traceback.extract_tb(e.__traceback__)
                     if any(f.filename.startswith(d.rstrip("/") + "/") for d in dirs)]
            where = f"{lines[-1].filename}:{lines[-1].lineno}" if lines else "a comment template"
        raise InputError(f"{where}: {e.message or type(e).__name__} (a comment template)") from None
