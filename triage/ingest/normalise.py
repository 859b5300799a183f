"""Normalising log lines: the form in which a signature and a line are compared.

Logs of the same failure differ in timestamps, ranks, addresses, paths and
numbers.  Like Kubernetes test-infra's triage and LUCI Analysis, both sides
are normalised before they are compared (:func:`normalise`):

* ANSI colour codes are removed;
* timestamps anywhere become ``<ts>``; UUIDs ``<uuid>``; ``0x…`` values,
  memory addresses and hex runs of 8+ characters with a digit (SHAs)
  ``<hex>``; IPv4 addresses with an optional port ``<ip>``;
* the directories of a file path become ``<path>`` (the basename stays:
  ``/usr/lib/python3.11/site-packages/x/registry.py`` → ``<path>/registry.py``);
* ranks and worker ids (``rank 3``, ``[TP0]``, ``tp_rank=2``, ``DP1``,
  ``worker-7``, ``cuda:0``, ``GPU 3``) become ``<rank>``;
* standalone numbers, floats and signed numbers become ``<num>`` (digits
  glued to letters stay: ``KimiK25``, ``gsm8k``, ``python3``);
* the log prefix is dropped: leading timestamps, GitHub Actions ``##[error]``
  markers and bracketed prefixes holding only timestamps, ranks or log levels
  (``[2026-07-01 03:14:15 TP3]``, ``[12:34:56]``, ``[rank0]:``);
* whitespace is collapsed and the text lower-cased.

Quoted names (``'KimiK25ForConditionalGeneration'``) are *not* masked: the
name often is the failure.  Instead, fuzzy scoring compares every quoted span
as a short three-letter digest of its content, so a different name costs
about as much as one changed short word: ``'DeepseekV4ForCausalLM' is not a
registered model`` still matches the Kimi signature (score ≈ 93), while
``KeyError: 'foo'`` does not match ``KeyError: 'bar'`` (the quoted value is
most of that message).
"""

from __future__ import annotations

import re
import zlib

from triage.ingest.logs import ANSI

__all__ = ["normalise", "readable", "fuzzy_form", "words"]

# ---------------------------------------------------------------------------
# Masking


class _Patterns:
    """The masking regexes, written for lower-case text.

    ``normalise`` lower-cases first and uses them case-sensitively (much
    faster in ``re``); ``readable`` keeps the case and compiles them with
    ``re.IGNORECASE``.
    """

    def __init__(self, flags: int) -> None:
        c = lambda p: re.compile(p, flags)  # noqa: E731
        self.digit = c(r"\d")
        # 2026-06-26t12:34:56.789z, 2026-07-01 03:14:15, 2026/07/01 (with a zone),
        # 12:34:56 and 12:34:56.789
        self.ts = c(
            r"\d(?:\d{3}[-/]\d{2}[-/]\d{2}(?:[t ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?(?:\s?(?:z|utc|[+-]\d{2}:?\d{2})\b)?"
            r"|\d?:\d{2}:\d{2}(?:[.,]\d+)?(?:\s?(?:z|utc|[ap]m)\b)?)"
        )
        # jul  1 03:14:15 (syslog), at the start of a line
        self.syslog = c(
            r"^\s*(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+(?:\d{4}\s+)?"
            r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"
        )
        self.uuid = c(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
        self.unix_dirs = c(
            # /abs/dir/, ./rel/dir/, ~/dir/, //host/dir/ (URLs) before a basename
            r"(?<![\w<>/.~-])(?:[a-z]:)?(?:~|\.{1,2})?(?:/+[\w.@%+-]+)+/(?=[\w.@%+-])"
            # rel/dir/sub/ (two slashes or more) before a basename
            r"|(?<![\w<>/.~-])[\w.@%+-]+(?:/[\w.@%+-]+)+/(?=[\w.@%+-])"
        )
        self.win_dirs = c(r"(?<![\w<>])[a-z]:\\(?:[^\\\s\"'<>|]+\\)+")
        # the callback checks the edges (no version number 1.2.3.4.5)
        self.ip = c(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?::\d{1,5})?")
        self.hex0x = c(r"\b0x[0-9a-f]+\b")
        # a whole word of 8+ hex digits with a digit and a letter (SHAs,
        # addresses); the callback checks the word edges
        self.hexrun = c(r"[0-9a-f]{8,}")
        # rank 3, rank=3, tp_rank=2, tp3, dp1, worker-7, cuda:0, gpu 3; the
        # callback checks that the word starts there ("step 3" is no rank)
        self.rank = c(r"(?:tp_?rank|dp_?rank|pp_?rank|ep_?rank|tp|dp|pp|ep|rank|worker|gpu|cuda|device)(?:\s*[=:#_-]?\s*)\d+\b(?!\.\d)")
        self.num = c(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?")
        levels = r"(?:trace|debug|info|notice|warn|warning|error|err|critical|crit|fatal|severe)"
        self.prefix = c(
            r"^(?:\s*(?:<ts>|<rank>(?=\s*[:|])|##\[[a-z-]+\]|\[(?:\s|<(?:ts|rank|num|ip|hex|uuid)>|[-:,.|/@]|\b[iwef]\d{3,4}\b|"
            + levels
            + r")*\])(?:\s*[:|]|\s+-(?=\s))?)+\s*"
        )


_LOWER = _Patterns(0)
_ANYCASE = _Patterns(re.IGNORECASE)
_MONTHS = frozenset("jan feb mar apr may jun jul aug sep oct nov dec".split())
_RANK_KEYS = ("tp", "dp", "pp", "ep", "rank", "worker", "gpu", "cuda", "device")
_PLACEHOLDER = re.compile(r"<(?:ts|uuid|path|ip|hex|rank|num)>")
_QUOTED = re.compile(r"""(?<!\w)(['"`])([^'"`\n]{1,200}?)\1(?!\w)""")


def _word_edge(m: re.Match) -> bool:
    """Whether the match starts and ends at word edges."""
    s, i, j = m.string, m.start(), m.end()
    return (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_")) and (
        j == len(s) or not (s[j].isalnum() or s[j] == "_")
    )


def _hexrun(m: re.Match) -> str:
    t = m.group()
    if t.isdigit() or t.isalpha() or not _word_edge(m):
        return t
    return "<hex>"


def _ip(m: re.Match) -> str:
    s, i, j = m.string, m.start(), m.end()
    if (i and (s[i - 1].isalnum() or s[i - 1] in "._")) or (j < len(s) and (s[j].isalnum() or s[j] in "._")):
        return m.group()
    return "<ip>"


def _rank(m: re.Match) -> str:
    s, i = m.string, m.start()
    if i and s[i - 1].isalnum():
        return m.group()
    return "<rank>"


def _mask(s: str, p: _Patterns) -> str:
    """Mask the volatile parts of ``s`` and drop its log prefix.

    Each regex runs only when a cheap test says it can match: normalising is
    the main cost of looking at a candidate line.
    """
    if "\x1b" in s:
        s = ANSI.sub("", s)
    low = s if p is _LOWER else s.lower()
    digit = p.digit.search(s) is not None
    if digit:
        if low.lstrip()[:3] in _MONTHS:
            s = p.syslog.sub("<ts>", s, count=1)
        s = p.ts.sub("<ts>", s)
        if s.count("-") >= 4:
            s = p.uuid.sub("<uuid>", s)
    if "/" in s:
        parts = s.split(" ")
        for i, part in enumerate(parts):
            if "/" in part:
                parts[i] = p.unix_dirs.sub("<path>/", part)
        s = " ".join(parts)
    if "\\" in s:
        s = p.win_dirs.sub(r"<path>\\", s)
    if digit:
        if s.count(".") >= 3:
            s = p.ip.sub(_ip, s)
        if "0x" in low:
            s = p.hex0x.sub("<hex>", s)
        s = p.hexrun.sub(_hexrun, s)
        if any(k in low for k in _RANK_KEYS):
            s = p.rank.sub(_rank, s)
        s = p.num.sub("<num>", s)
    if s[:1] in ("<", "#", "[", " ", "\t"):
        s = p.prefix.sub("", s, count=1)
    return " ".join(s.split())


def normalise(line: str) -> str:
    """The comparable form of a log line (see the module docstring).

    >>> normalise("[2026-07-01 03:14:15 TP3] ValueError: 'M' at 0x7f3a in /a/b/c.py")
    "valueerror: 'm' at <hex> in <path>/c.py"
    """
    return _mask(line.lower(), _LOWER)


def readable(line: str) -> str:
    """The normalised form with the original case kept (for drafts)."""
    return _mask(line, _ANYCASE)


def _digest(text: str) -> str:
    h = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    return chr(97 + h % 26) + chr(97 + (h >> 8) % 26) + chr(97 + (h >> 16) % 26)


def fuzzy_form(norm: str) -> str:
    """The normalised text with each quoted span replaced by a short digest."""
    if "'" not in norm and '"' not in norm and "`" not in norm:
        return norm
    return _QUOTED.sub(lambda m: "'" + _digest(m.group(2)) + "'", norm)


_WORD = re.compile(r"\w+")


def words(norm: str, *, quoted: bool) -> list[str]:
    """The words of a normalised text: no placeholders, no numbers, and no
    quoted spans unless ``quoted``."""
    text = _PLACEHOLDER.sub(" ", norm)
    if not quoted:
        text = _QUOTED.sub(" ", text)
    return [w for w in _WORD.findall(text) if not w.isdigit() and w != "_" * len(w)]
