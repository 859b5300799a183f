"""The Jinja environment and the filters that keep user text harmless.

Everything from logs and users passes through ``cell``/``md``/``code`` before
it reaches the comment: it cannot break a table, open or close an HTML
comment (and so never forge or close the hidden marker), inject HTML, or
@-mention people and teams.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional, Sequence, Union
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
    if not url or not re.match(r"^https?://[^\s<>()\"']+\Z", str(url)):
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
def environment(extra: Union[str, tuple[str, ...], None] = None) -> Any:
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
