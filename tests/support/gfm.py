"""Markdown as GitHub parses it, and the checks every rendered comment must pass.

The comment is rendered with cmark-gfm (GFM tables, autolinks,
strikethrough) with raw HTML *allowed* and without GitHub's tag filter, so
an escape that fails shows up as an element instead of being quietly
dropped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser


def gfm(text: str) -> str:
    """GFM as GitHub parses it, but with raw HTML passed through (strict)."""
    from cmarkgfm.cmark import Options, markdown_to_html_with_extensions

    return markdown_to_html_with_extensions(
        text,
        options=Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_GITHUB_PRE_LANG,
        extensions=["table", "autolink", "strikethrough"],
    )


class Html(HTMLParser):
    """Elements, attributes, comments, tables (rows of cell texts) and texts."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.comments: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.blocks: list[str] = []  # text of each p, li, h*, pre
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._block: list[str] | None = None
        self._row: list[str] | None = None
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag in ("p", "li", "h2", "h3", "pre", "summary"):
            self._block = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None
        elif tag in ("p", "li", "h2", "h3", "pre", "summary") and self._block is not None:
            self.blocks.append("".join(self._block))
            self._block = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for part in (self._cell, self._block):
            if part is not None:
                part.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


ALLOWED = {
    "h2": set(), "h3": set(), "p": set(), "strong": set(), "em": set(), "code": set(), "pre": {"lang"},  # ```mermaid fences: <pre lang="mermaid">
    "a": {"href"}, "br": set(), "ul": set(), "ol": set(), "li": set(), "blockquote": set(),
    "table": set(), "thead": set(), "tbody": set(), "tr": set(), "th": {"align"}, "td": {"align"},
    "details": set(), "summary": set(),
}
MAY_BE_EMPTY = {"change vs base", "evidence"}  # a run of no recipe, an untested bisect point
MENTION = re.compile(r"(?<![A-Za-z0-9_`])@[A-Za-z0-9]")


def check_comment(body: str, marker: str, *, tables: int | None = None) -> Html:
    """The structural checks every hostile rendering must pass."""
    # the marker: once, last line, and the raw body opens/closes no other comment
    assert body.count(marker) == 1
    assert body.rstrip("\n").splitlines()[-1] == marker
    # (Mermaid's own arrows, `-->`, sit in fenced blocks before the only opener)
    assert body.count("<!--") == 1 and body.index("<!--") == body.index(marker)
    assert body[body.index(marker):].count("-->") == 1
    assert MENTION.search(body) is None, MENTION.search(body)

    doc = Html(gfm(body))
    assert doc.comments == [marker[4:-3]], doc.comments
    for tag, attrs in doc.tags:
        assert tag in ALLOWED, f"<{tag}> in the rendered comment"
        assert set(attrs) <= ALLOWED[tag], (tag, attrs)
        if tag == "a":
            assert re.match(r"^(https?://|mailto:)", attrs["href"]), attrs
    names = [t for t, _ in doc.tags]
    # only the comment's own folds: user text can never open one
    assert names.count("details") == body.count("\n<details><summary>") + body.startswith("<details><summary>")
    assert names.count("summary") == names.count("details")
    if tables is not None:
        assert len(doc.tables) == tables
    for rows in doc.tables:
        header = rows[0]
        assert len(header) >= 2
        for row in rows:
            assert len(row) == len(header), row
            for name, value in zip(header, row):
                # a split cell leaves an empty one behind (only these may be empty anyway)
                assert value.strip() or name in MAY_BE_EMPTY, f"an empty {name!r} cell: {row}"
    for text in doc.text:
        assert MENTION.search(text) is None, f"a live mention in {text!r}"
    return doc
