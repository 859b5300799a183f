"""Known-failure signatures: recognise a failure line in a CI log.

A signature is a known failure line, pasted as it appeared in some log
(``text``), or a regular expression (``regex=True``).  A run whose log
matches one has a known cause (a setup error, an infrastructure problem, a
crash) and therefore never rules a hypothesis out.

Normalisation
-------------
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

Matching
--------
A regex signature matches when RE2 finds it in the raw line.  A
literal signature matches when its normalised text is a substring of the
normalised line (``how="exact"``, score 100), or else when the fuzzy score is
at least ``threshold`` (``how="fuzzy"``).  The fuzzy score is rapidfuzz's
``partial_ratio`` (best alignment of the signature inside the line: a known
failure line usually sits inside a longer log line, after a logger prefix or
an exception chain) when the line is at least as long as the signature, and
the plain ``ratio`` when it is shorter, so that a short line ("Error") cannot
score 100 by being contained in a long signature.  ``token_set_ratio`` was
rejected: it ignores word order and gives 100 to any line that contains the
signature's words anywhere, which is far too lenient for short signatures.

When several signatures match one line, exact and regex matches beat fuzzy
ones; then the higher score, then the longer matched text (the more specific
signature), then the one declared first.

Speed: the prefilter
--------------------
``scan`` must keep up with ``grep`` on 100 MB logs, so almost no line is
looked at in Python.  Each literal signature gets an *anchor word*: a word of
its normalised text outside quotes and placeholders, at least four
characters long and not a stop word.  The best-ranked word is taken, ranked
by: code-like words first (snake_case, CamelCase, with digits, ALLCAPS:
``BlobNotFound``, ``SIGABRT``), words frequent in ordinary CI output last
(``error``, ``model``, ``already``, ...); then the fewest signatures sharing
it; then the longest.  A second anchor is added only when it is code-like and
(nearly) unique to the signature: an anchor that ordinary log lines contain
would make the prefilter pass them all.  A line is looked at only if it
contains an anchor word (case-insensitively, anywhere) or matches a regex
signature; everything else is skipped.

The log is read in 8 MiB blocks (:meth:`LogReader.spans`, no copies) and one
pass of a single combined regex (all anchors plus all regex signatures)
finds the candidate lines.  With RE2 (``google-re2``) installed that pass is
one DFA at about 0.7 GB/s whatever the number of signatures; without it,
Python's ``re`` runs one pass for the anchors and one per regex signature:
the same results, many times slower.  Each candidate line then gets its
shortlist (the signatures whose anchor or regex it contains, from an
``RE2::Set``), is normalised once, and only the shortlist is tried: exact
first, fuzzy (``rapidfuzz.process.extract`` with ``score_cutoff``) second.

The trade-off: a fuzzy match is only found when the line contains the
signature's anchor word spelt exactly.  A variant in which that word changed
(``registered`` misspelt, ``BlobNotFound`` renamed) is missed even if its
overall score would pass; a rule author who expects that writes a regex
signature.  Exact matches are unaffected: a line whose normalised text
contains the signature contains its anchor word too.  Lines longer than
16 KiB are normalised and scored on their first 16 KiB only.  Regex
signatures are always run by RE2 (:mod:`triage.ingest.userregex`: linear
time; ``\\w``, ``\\d``, ``\\b`` are ASCII there), whatever the engine of the
prefilter; a regex that needs backtracking (look-arounds, back-references)
is refused with the reason.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

from rapidfuzz import fuzz, process

from triage.errors import InputError
from triage.ingest.logs import ANSI, Block, LogReader, blocks, hit_lines
from triage.ingest.userregex import UserRegexError, compile_user

try:  # RE2 runs the prefilter as a DFA; Python's re is the fallback.
    import re2 as _re2

    if not all(hasattr(_re2, a) for a in ("_re2", "Options", "Set")):  # another "re2" module (pyre2)
        _re2 = None
except ImportError:  # pragma: no cover - depends on the environment
    _re2 = None

__all__ = [
    "SignatureSpec",
    "Match",
    "Matcher",
    "normalise",
    "readable",
    "candidates",
    "Scan",
    "draft",
    "guess_class",
    "HAVE_RE2",
    "ERROR_WORDS",
]

HAVE_RE2 = _re2 is not None

#: Lines are normalised and fuzzy-scored on this many leading characters.
MAX_LINE = 16 << 10
#: A scan keeps this many matching lines, and stops reading when it has them
#: and its candidates.
MAX_MATCHES = 10_000
#: A scan looks at this many error-looking lines for candidates, at most.
MAX_LOOKED = 100_000
#: Up to this many anchor words per literal signature.
ANCHORS_PER_SIGNATURE = 2

# ---------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class SignatureSpec:
    """A known failure: a log line (literal) or a regex, and what it means."""

    id: str
    text: str
    cls: str
    meaning: str = ""
    remedy: str = ""
    regex: bool = False


@dataclass(frozen=True)
class Match:
    """A log line that matched a signature.

    ``line_no`` is 1-based (0 from :meth:`Matcher.match_line`); ``how`` is
    ``"exact"``, ``"fuzzy"`` or ``"regex"``; ``score`` is 0–100.
    """

    line_no: int
    line: str
    signature_id: str
    score: float
    how: str


# ---------------------------------------------------------------------------
# Normalisation

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


_SHAPE = bytes.maketrans(b"0123456789", b"0000000000")


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


def _fuzzy_form(norm: str) -> str:
    """The normalised text with each quoted span replaced by a short digest."""
    if "'" not in norm and '"' not in norm and "`" not in norm:
        return norm
    return _QUOTED.sub(lambda m: "'" + _digest(m.group(2)) + "'", norm)


# ---------------------------------------------------------------------------
# Anchor words

_STOP = frozenset(
    """about after also been before being between both cannot could does doing down during each from have
    having here into just more most must only other over same should some such than that their them then there
    these they this those through under until very were what when where which while will with would your""".split()
)
#: Words too common in CI logs to make a good anchor: used only when a
#: signature has nothing better.  (Any word that is frequent in ordinary log
#: lines makes the prefilter pass those lines; the list names the usual ones.)
_COMMON = frozenset(
    """error errors exception exceptions warning warnings info debug fatal failed fail failure failures
    traceback recent call last file line python model models server request requests response process
    value values none null true false self main test tests cuda torch time data input output rank worker
    node status code exit already using used found loading loaded load start started starting finished
    done complete completed total size number version install installed installing requirement satisfied
    build building running expected unexpected argument arguments keyword invalid unable please check
    deprecated default instead token tokens batch memory device kernel launch shape type dtype object
    function module import return config param params mode path name result results step steps
    epoch count length index item items list dict string float int tensor tensors thread threads
    while with from into http https local host port address client connection valueerror runtimeerror
    typeerror keyerror indexerror attributeerror assertionerror oserror ioerror importerror
    notimplementederror modulenotfounderror connectionerror timeouterror""".split()
)
_WORD = re.compile(r"\w+")


def _words(norm: str, *, quoted: bool) -> list[str]:
    text = _PLACEHOLDER.sub(" ", norm)
    if not quoted:
        text = _QUOTED.sub(" ", text)
    return [w for w in _WORD.findall(text) if not w.isdigit() and w != "_" * len(w)]


def _identifier_words(text: str) -> set[str]:
    """Words of a signature that look like code, lower-cased: snake_case,
    CamelCase, with digits, or ALLCAPS.  They rarely occur by chance."""
    out = set()
    for w in _words(readable(text), quoted=False):
        if (
            "_" in w.strip("_")
            or any(ch.isdigit() for ch in w)
            or (w[1:] != w[1:].lower() and w != w.upper())
            or (len(w) >= 4 and w.isupper())
        ):
            out.add(w.lower())
    return out


def _anchor_candidates(norm: str) -> list[str]:
    """Words that may anchor a signature; which ones is decided later."""
    seen: dict[str, None] = {}
    for w in _words(norm, quoted=False):
        if len(w) >= 4 and w not in _STOP:
            seen.setdefault(w)
    if not seen:  # short signatures: "OOM", "Killed by OS"
        for w in _words(norm, quoted=False):
            if len(w) >= 2:
                seen.setdefault(w)
    if not seen:  # only quoted text: "'nccl'"
        for w in _words(norm, quoted=True):
            if len(w) >= 2:
                seen.setdefault(w)
    return list(seen)


def _choose_anchors(cands: list[list[str]], idents: list[set[str]]) -> list[list[str]]:
    """Pick each signature's anchor words.

    Ranked by: code-like words first, common log words last; then the fewest
    signatures sharing the word; then the longest.  The best one is always
    taken; a second one only when it is code-like and (nearly) unique to the
    signature, so that extra anchors never let ordinary lines through.
    """
    df: dict[str, int] = {}
    for words in cands:
        for w in words:
            df[w] = df.get(w, 0) + 1
    chosen = []
    for words, ident in zip(cands, idents):

        def tier(w: str) -> int:
            return 0 if w in ident and w not in _COMMON else (2 if w in _COMMON else 1)

        ranked = sorted(range(len(words)), key=lambda i: (tier(words[i]), df[words[i]], -len(words[i]), i))
        picks = [words[ranked[0]]]
        for i in ranked[1:ANCHORS_PER_SIGNATURE]:
            w = words[i]
            if tier(w) == 0 and df[w] <= 2:
                picks.append(w)
        chosen.append(picks)
    return chosen


# ---------------------------------------------------------------------------
# The matcher


@dataclass(frozen=True)
class _Literal:
    index: int
    spec: SignatureSpec
    norm: str
    fuzzy: str
    anchors: tuple[str, ...]


@dataclass(frozen=True)
class _Regex:
    index: int
    spec: SignatureSpec
    rx: Any  # RE2 (triage.ingest.userregex)
    block_rx: Any  # the same with (?m), for block passes over bytes
    in_re2: bool  # part of the combined prefilter


def _re2_options(**kw):
    opts = _re2.Options()
    opts.log_errors = False
    opts.max_mem = 64 << 20
    for k, v in kw.items():
        setattr(opts, k, v)
    return opts


def _prefilter_options():
    # One line at a time (never_nl), no submatches wanted (never_capture), and
    # room for the DFA of a few thousand words: with less, RE2 keeps
    # rebuilding its DFA cache and runs slower.
    return _re2_options(never_nl=True, never_capture=True, max_mem=128 << 20)


_NAMED_GROUP = re.compile(r"(?<!\\)\(\?P<\w+>")


def _trie_pattern(words: Iterable[str]) -> str:
    """One regex for many words, factored by common prefixes.

    Python's ``re`` tries every alternative of a flat ``a|b|c...`` at every
    position; the trie form tries one branch per character, which makes the
    fallback prefilter some thirty times faster with hundreds of words.
    """
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return emit(trie)


class _Grep:
    """Stage one: find the lines of a block that any of a set of patterns hits.

    ``words`` are matched case-insensitively as substrings; ``regexes`` (the
    signatures') and ``extra`` (plain patterns both engines read) as written.
    With RE2 one DFA pass covers all of them; otherwise (or for regexes RE2
    cannot compile) Python's ``re`` runs one pass per pattern.
    """

    def __init__(self, words: Sequence[str], regexes: Sequence[_Regex], engine: str, extra: Sequence[str] = ()):
        self.re2 = None
        self.py_words: re.Pattern | None = None
        self.py_regexes: list[re.Pattern] = []
        self.user_regexes: list[Any] = []  # RE2, run over a block's bytes
        words = sorted(set(words), key=lambda w: (-len(w), w))
        if engine == "re2":
            parts = []
            if words:
                parts.append("(?i:" + "|".join(re.escape(w) for w in words) + ")")
            for r in regexes:
                if r.in_re2:
                    parts.append("(?:" + _NAMED_GROUP.sub("(?:", r.spec.text) + ")")
                else:
                    self.user_regexes.append(r.block_rx)
            parts += ["(?:" + x + ")" for x in extra]
            if parts:
                try:
                    self.re2 = _re2.compile("(?m)" + "|".join(parts), _prefilter_options())
                except _re2.error:  # pragma: no cover - each part compiled alone
                    self.re2 = None
                    engine = "re"
        if engine == "re":
            if words:
                self.py_words = re.compile(_trie_pattern(words))
            self.user_regexes = [r.block_rx for r in regexes]
            self.py_regexes = [re.compile(x, re.MULTILINE) for x in extra]
        self.empty = self.re2 is None and self.py_words is None and not self.py_regexes and not self.user_regexes
        self.fast = self.re2 is not None and self.py_words is None and not self.py_regexes and not self.user_regexes
        #: Another grep to use from the next block on (a scan that has found
        #: what it looked for with ``extra`` narrows its search).
        self.then: Optional["_Grep"] = None

    def lines(self, source: Iterable[str] | str | Block) -> Iterator[tuple[int, str]]:
        """Yield ``(line_no, line)`` for every line hit, in order."""
        if self.empty and self.then is None:
            return
        if isinstance(source, LogReader) and self.fast and (self.then is None or self.then.fast):
            line_no = 1
            for data, end in source.spans():
                line_no = yield from self._fast(data, end, line_no)
            return
        for block in blocks(source):
            g = self.then or self
            if g.empty:
                continue
            if g.fast and block.has_data():
                data = block.data()
                yield from g._fast(data, len(data), block.first)
            else:
                yield from g._general(block)

    def _fast(self, data: bytes, n: int, line_no: int) -> Iterator[tuple[int, str]]:
        """One RE2 pass over ``data[:n]``; returns the next block's first line
        number.  Newlines are counted once, up to each hit and then to the end."""
        idx = start = 0
        for idx, start, stop in hit_lines(self._search, data, b"\n", n):
            yield line_no + idx, data[start:stop].decode("utf-8", "replace")
        return line_no + idx + data.count(b"\n", start, n) + 1

    def _search(self, data: bytes, pos: int, end: int) -> Any:
        """The RE2 search in force: :attr:`then`'s, once set, from the next hit on."""
        rx = self.then.re2 if self.then is not None else self.re2
        return None if rx is None else rx.search(data, pos, end)

    def _general(self, block: Block) -> Iterator[tuple[int, str]]:
        hits: set[int] = set()
        for rx in ([self.re2] if self.re2 is not None else []) + self.user_regexes:
            hits.update(i for i, _, _ in hit_lines(rx.search, block.data(), b"\n"))
        if self.py_words is not None or self.py_regexes:
            text = block.text()
            if self.py_words is not None:
                hits.update(i for i, _, _ in hit_lines(self.py_words.search, text.lower()))
            for rx in self.py_regexes:
                hits.update(i for i, _, _ in hit_lines(rx.search, text))
        if not hits:
            return
        lines = block.lines()
        for i in sorted(hits):
            yield block.first + i, lines[i]


class Matcher:
    """Match log lines against known-failure signatures.

    ``engine`` is ``"auto"`` (RE2 when installed), ``"re2"`` or ``"re"``.
    """

    def __init__(
        self, signatures: Sequence[SignatureSpec], threshold: float = 88.0, engine: str = "auto"
    ) -> None:
        if engine not in ("auto", "re2", "re"):
            raise ValueError(f"engine must be auto, re2 or re, not {engine!r}")
        if engine == "re2" and not HAVE_RE2:
            raise RuntimeError("engine 're2' needs the google-re2 package")
        if not 0 < float(threshold) <= 100:
            raise ValueError(f"threshold must be in (0, 100], not {threshold!r}")
        self.engine = "re2" if engine == "auto" and HAVE_RE2 else ("re" if engine == "auto" else engine)
        self.threshold = float(threshold)
        self.signatures = tuple(signatures)

        literals: list[tuple[int, SignatureSpec, str]] = []
        self._regexes: list[_Regex] = []
        for i, spec in enumerate(self.signatures):
            if spec.regex:
                try:  # a user's pattern: RE2 only (linear time), whatever the engine
                    rx = compile_user(spec.text)
                    block_rx = compile_user(spec.text, multiline=True)
                except UserRegexError as e:
                    raise InputError(f"signature {spec.id}: bad regex: {e}") from None
                if rx.search("") is not None:
                    raise InputError(f"signature {spec.id}: the regex matches an empty line")
                self._regexes.append(_Regex(i, spec, rx, block_rx, self.engine == "re2"))
            else:
                norm = normalise(spec.text)
                if not norm:
                    raise InputError(f"signature {spec.id}: the text is empty once normalised")
                literals.append((i, spec, norm))

        cands = [_anchor_candidates(norm) for _, _, norm in literals]
        for (i, spec, norm), c in zip(literals, cands):
            if not c:
                raise InputError(f"signature {spec.id}: the text has no word to search for: {spec.text!r}")
        self._literals = [
            _Literal(i, spec, norm, _fuzzy_form(norm), tuple(a))
            for (i, spec, norm), a in zip(
                literals, _choose_anchors(cands, [_identifier_words(spec.text) for _, spec, _ in literals])
            )
        ]

        # anchor word -> literal signatures (positions in self._literals)
        self._by_anchor: dict[str, list[int]] = {}
        for k, lit in enumerate(self._literals):
            for a in lit.anchors:
                self._by_anchor.setdefault(a, []).append(k)
        self._anchor_list = list(self._by_anchor)

        self._grep = _Grep(self._anchor_list, self._regexes, self.engine)

        # Stage two: which anchors / regexes a candidate line holds.
        self._set = None
        self._set_kinds: list[tuple[str, object]] = []
        if self.engine == "re2" and (self._anchor_list or any(r.in_re2 for r in self._regexes)):
            s = _re2.Set.SearchSet(_re2_options())
            for a in self._anchor_list:
                s.Add("(?i)" + re.escape(a))
                self._set_kinds.append(("a", a))
            for r in self._regexes:
                if r.in_re2:
                    s.Add(r.spec.text)
                    self._set_kinds.append(("r", r))
            s.Compile()
            self._set = s

    # -- properties -----------------------------------------------------------
    def anchors(self) -> dict[str, tuple[str, ...]]:
        """Signature id -> its anchor words (literal signatures only)."""
        return {lit.spec.id: lit.anchors for lit in self._literals}

    # -- stage two ------------------------------------------------------------
    def _shortlist(self, line: str) -> tuple[set[int], list[_Regex]]:
        lits: set[int] = set()
        rxs: list[_Regex] = []
        if self._set is not None:
            hits = self._set.Match(line.encode("utf-8", "surrogatepass")) or ()
            for h in hits:
                kind, obj = self._set_kinds[h]
                if kind == "a":
                    lits.update(self._by_anchor[obj])  # type: ignore[index]
                else:
                    rxs.append(obj)  # type: ignore[arg-type]
        elif self.engine == "re":
            low = line.lower()
            for a, ks in self._by_anchor.items():
                if a in low:
                    lits.update(ks)
            rxs = list(self._regexes)
        return lits, rxs

    def _best(self, line: str, cache: dict | None = None) -> tuple[float, str, SignatureSpec] | None:
        """``(score, how, spec)`` of the best signature for a line, or None.

        ``cache`` (one per scan) remembers the literal verdict per normalised
        line: logs repeat their failures, once per rank or per retry."""
        lits, rxs = self._shortlist(line)
        if not lits and not rxs:
            return None
        best: tuple | None = None
        for r in rxs:
            m = r.rx.search(line)
            if m is not None:
                key = (2, 100.0, m.end() - m.start(), -r.index)
                if best is None or key > best[0]:
                    best = (key, "regex", r.spec)
        if not lits:
            return None if best is None else (best[0][1], best[1], best[2])
        norm = self._normalised(line, cache)
        if cache is None:
            cached = self._literal_best(norm, lits)
        else:
            ckey = (norm, frozenset(lits))
            cached = cache.get(ckey, False)
            if cached is False:
                cached = self._literal_best(norm, lits)
                if len(cache) >= 4096:
                    cache.clear()
                cache[ckey] = cached
        if cached is not None and (best is None or cached[0] > best[0]):
            best = cached
        return None if best is None else (best[0][1], best[1], best[2])

    @staticmethod
    def _normalised(line: str, cache: dict | None = None) -> str:
        """``normalise(line)``, remembered in ``cache`` (one per scan)."""
        if cache is None:
            return normalise(line[:MAX_LINE])
        # Lines that differ only in their digits (timestamps, ranks, ids)
        # normalise alike when normalising masked every digit: the masking
        # regexes see a digit as a class, never as a value -- except for
        # the "0x" of hex numbers, so such lines are not shared.
        shape = line[:MAX_LINE].encode("utf-8", "surrogatepass").translate(_SHAPE)
        if b"0x" in shape or b"0X" in shape:
            shape = None
        norm = cache.get(shape) if shape is not None else None
        if norm is None:
            norm = normalise(line[:MAX_LINE])
            if shape is not None and _LOWER.digit.search(norm) is None:
                if len(cache) >= 4096:
                    cache.clear()
                cache[shape] = norm
        return norm

    def _literal_best(self, norm: str, lits: set[int]) -> tuple | None:
        best = None
        fuzzy_pool = []
        for k in lits:
            lit = self._literals[k]
            if lit.norm in norm:
                key = (2, 100.0, len(lit.norm), -lit.index)
                if best is None or key > best[0]:
                    best = (key, "exact", lit.spec)
            else:
                fuzzy_pool.append(lit)
        if best is not None or not fuzzy_pool:
            return best
        form = _fuzzy_form(norm)
        shorter = [lit for lit in fuzzy_pool if len(lit.fuzzy) <= len(form)]
        longer = [lit for lit in fuzzy_pool if len(lit.fuzzy) > len(form)]
        for pool, scorer in ((shorter, fuzz.partial_ratio), (longer, fuzz.ratio)):
            if not pool:
                continue
            for _, score, j in process.extract(
                form, [lit.fuzzy for lit in pool], scorer=scorer, score_cutoff=self.threshold, limit=None
            ):
                lit = pool[j]
                key = (1, round(float(score), 2), len(lit.norm), -lit.index)
                if best is None or key > best[0]:
                    best = (key, "fuzzy", lit.spec)
        return best

    # -- public ----------------------------------------------------------------
    def match_line(self, line: str) -> Match | None:
        """The best signature for one line (``line_no`` 0), or None."""
        line = line.rstrip("\r\n")
        found = self._best(line)
        if found is None:
            return None
        score, how, spec = found
        return Match(0, line, spec.id, score, how)

    def prefilter(self, lines: Iterable[str] | str) -> Iterator[tuple[int, str]]:
        """The lines ``scan`` looks at: ``(line_no, line)`` for every line that
        holds an anchor word or matches a regex signature."""
        return self._grep.lines(lines)

    def scan(self, lines: Iterable[str] | str) -> Iterator[Match]:
        """Every matching line of a log, line numbers 1-based.

        ``lines`` is a :class:`~triage.ingest.logs.LogReader` (fastest: read
        in blocks), any iterable of lines, or the whole log as one string.
        """
        cache: dict = {}
        for line_no, line in self._grep.lines(lines):
            found = self._best(line, cache)
            if found is not None:
                score, how, spec = found
                yield Match(line_no, line, spec.id, score, how)

    def first(self, lines: Iterable[str] | str) -> Match | None:
        """The first matching line, or None.  Reading stops at the end of the
        block holding it (8 MiB of a log file, 8192 lines of an iterable)."""
        it = self.scan(lines)
        try:
            return next(it, None)
        finally:
            it.close()


# ---------------------------------------------------------------------------
# Unknown failures and drafts

#: What makes a line look like an error, for :func:`candidates` (``oom`` only
#: at the start of a word, so that "room" and "zoom" do not count).
ERROR_WORDS = (
    "error", "exception", "fail", "fatal", "abort", "traceback", "killed", "oom",
    "timeout", "timed out", "sigsegv", "sigabrt", "segmentation fault", "core dumped", "out of memory",
)  # fmt: skip
_ERROR_RX = r"(?:error|exception|fail|fatal|abort|traceback|killed|\boom|timeout|timed out|sigsegv|sigabrt|segmentation fault|core dumped|out of memory)"
_ERROR_RE = re.compile(_ERROR_RX, re.I)


_ERROR_RX_I = "(?i:" + _ERROR_RX[3:]


class Scan:
    """One pass over a log that finds both the lines matching a signature and
    the error-looking lines that match none (candidates for new signatures).

    Feed it the log (a :class:`~triage.ingest.logs.LogReader`, a
    :class:`~triage.ingest.logs.Block`, lines or a string), all at once or
    block by block in order; ``matches`` and ``candidates`` grow as it reads.
    A single RE2 pass per block covers the signatures' anchors and regexes
    and the error words together, so asking for candidates costs little.
    Candidates are deduplicated by their normalised form (the first
    occurrence kept) and capped at ``limit``; ``matches=False`` looks for
    candidates only, and stops reading once it has ``limit`` of them.
    """

    def __init__(self, matcher: "Matcher", limit: int = 50, *, matches: bool = True) -> None:
        self.matcher = matcher
        self.limit = max(int(limit), 0)
        self.want_matches = matches
        self.matches: list[Match] = []
        self.candidates: list[tuple[int, str]] = []
        self._seen: set[str] = set()
        self._cache: dict = {}
        #: Error-looking lines looked at for candidates, and matches not kept
        #: past :data:`MAX_MATCHES`.
        self._looked = 0
        self.matches_left_out = 0
        extra = [_ERROR_RX_I] if self.limit else []
        if matches:
            self._grep = _Grep(matcher._anchor_list, matcher._regexes, matcher.engine, extra)
        else:
            self._grep = _Grep([], [], matcher.engine, extra)
        self._narrowed = not self.limit  # no candidates wanted

    def _narrow(self) -> None:
        """Stop looking for candidates (enough found, or enough lines looked at)."""
        if not self._narrowed:
            self._narrowed = True
            m = self.matcher
            self._grep.then = _Grep(m._anchor_list if self.want_matches else [],
                                    m._regexes if self.want_matches else [], m.engine)

    @property
    def full(self) -> bool:
        """Whether there is nothing left to look for: candidates all found
        (or looked for long enough) and no matches wanted (or enough kept)."""
        done_candidates = len(self.candidates) >= self.limit or self._looked >= MAX_LOOKED
        return done_candidates and (not self.want_matches or self.matches_left_out > 0)

    def feed(self, source: Iterable[str] | str | Block) -> list[Match]:
        """Scan more of the log; returns the matches found in it."""
        new: list[Match] = []
        if self.full:
            return new
        best, cands, limit = self.matcher._best, self.candidates, self.limit
        for line_no, line in self._grep.lines(source):
            found = best(line, self._cache)
            if found is not None:
                if self.want_matches:
                    if len(self.matches) + len(new) >= MAX_MATCHES:
                        self.matches_left_out += 1
                        if self.full:
                            break
                        continue
                    score, how, spec = found
                    new.append(Match(line_no, line, spec.id, score, how))
                continue
            if self._narrowed or not _ERROR_RE.search(line):  # RE2 folds case more widely than re
                continue
            self._looked += 1
            key = self.matcher._normalised(line, self._cache)
            if key not in self._seen:
                self._seen.add(key)
                cands.append((line_no, line))
            if len(cands) >= limit or self._looked >= MAX_LOOKED:
                self._narrow()
                if self.full:
                    break
        self.matches += new
        return new


def candidates(lines: Iterable[str] | str, matcher: Matcher, limit: int = 50) -> list[tuple[int, str]]:
    """Error-looking lines that match no signature: the makings of new ones.

    A line looks like an error when it contains (case-insensitively) one of
    :data:`ERROR_WORDS`.  Lines are deduplicated by their normalised form,
    the first occurrence kept; at most ``limit`` are returned (reading stops
    there).  :class:`Scan` finds them together with the matches.
    """
    if limit <= 0:
        return []
    scan = Scan(matcher, limit, matches=False)
    scan.feed(lines)
    return scan.candidates


_CLASS_RULES: tuple[tuple[str, re.Pattern], ...] = (
    ("oom", re.compile(r"out of memory|outofmemory|\boom|memoryerror|cannot allocate memory|oom[-_ ]?kill", re.I)),
    (
        "crash",
        re.compile(
            r"sigsegv|sigabrt|sigbus|sigill|sigkill|segmentation fault|core dumped|\baborted\b|fatal python error"
            r"|signal \d+|exit(?:ed)? (?:with )?(?:code|status) -\d+|exit code (?:134|137|139)\b"
            r"|illegal memory access|\bkilled\b|\bcrash",
            re.I,
        ),
    ),
    (
        "setup-error",
        re.compile(
            r"importerror|modulenotfounderror|no module named|undefined symbol|not a registered|is not registered"
            r"|not registered|unrecognized arguments|command not found|no such file or directory|not supported"
            r"|unsupported|version mismatch|requires? .*version|could not find a version",
            re.I,
        ),
    ),
    (
        "infra",
        re.compile(
            r"timeout|timed out|connection (?:refused|reset|aborted|closed)|connectionerror|network|\bdns\b"
            r"|name resolution|could not resolve|temporary failure|blob|resourcenotfound|\b(?:404|429|500|502|503|504)\b"
            r"|not found|rate limit|no space left|disk quota|self-hosted runner|lost communication|http error|ssl"
            r"|unreachable|failed to connect|connect(?:ion)? to \S+ (?:failed|timed out)|address already in use",
            re.I,
        ),
    ),
)


def guess_class(line: str) -> str:
    """A first guess of a failure line's class; ``unknown`` when unsure."""
    for cls, rx in _CLASS_RULES:
        if rx.search(line):
            return cls
    return "unknown"


def _slug(text: str) -> str:
    words = [w for w in _words(text.lower(), quoted=False) if len(w) >= 3 and w not in _STOP]
    picked: list[str] = []
    for w in words:
        if w not in picked:
            picked.append(w)
        if len(picked) == 4:
            break
    slug = "-".join(picked)[:48].strip("-") or "signature"
    slug = re.sub(r"[^A-Za-z0-9_.+-]", "-", slug)
    if not slug[0].isalnum():
        slug = "s" + slug
    return slug


def draft(line: str, id: str | None = None) -> dict:
    """A draft signature for a rule file, from one log line.

    ``text`` is the line with its prefix dropped and its volatile parts
    masked, case kept; it matches the original line exactly once normalised.
    ``class`` is a guess (:func:`guess_class`); ``meaning`` and ``remedy``
    are left for a person to fill in.
    """
    text = readable(line.rstrip("\r\n"))
    return {
        "id": id or _slug(text),
        "text": text,
        "class": guess_class(line),
        "meaning": "",
        "remedy": "",
    }
