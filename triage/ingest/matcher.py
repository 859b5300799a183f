"""Known-failure signatures: recognise a failure line in a CI log.

A signature is a known failure line, pasted as it appeared in some log
(``text``), or a regular expression (``regex=True``).  A run whose log
matches one has a known cause (a setup error, an infrastructure problem, a
crash) and therefore never rules a hypothesis out.

Normalisation is :mod:`triage.ingest.normalise`; the anchor words of the
prefilter are chosen by :mod:`triage.ingest.anchors`; a whole log is scanned
by :mod:`triage.ingest.scan`.

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
looked at in Python.  Each literal signature gets one or two *anchor words*
(:mod:`triage.ingest.anchors`).  A line is looked at only if it
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
signatures are always run by RE2 (:mod:`triage.rules.language.userregex`: linear
time; ``\\w``, ``\\d``, ``\\b`` are ASCII there), whatever the engine of the
prefilter; a regex that needs backtracking (look-arounds, back-references)
is refused with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Optional, Sequence

from rapidfuzz import fuzz, process

from triage.errors import InputError
from triage.ingest.anchors import anchor_candidates, choose_anchors, identifier_words
from triage.ingest.logs import Block, LogReader, blocks, hit_lines
from triage.ingest.normalise import fuzzy_form, normalise
from triage.rules.language.userregex import UserRegexError, compile_user

try:  # RE2 runs the prefilter as a DFA; Python's re is the fallback.
    import re2 as _re2

    if not all(hasattr(_re2, a) for a in ("_re2", "Options", "Set")):  # another "re2" module (pyre2)
        _re2 = None
except ImportError:  # pragma: no cover - depends on the environment
    _re2 = None

__all__ = ["SignatureSpec", "Match", "Matcher", "HAVE_RE2"]

HAVE_RE2 = _re2 is not None

#: Lines are normalised and fuzzy-scored on this many leading characters.
MAX_LINE = 16 << 10

_SHAPE = bytes.maketrans(b"0123456789", b"0000000000")
_DIGIT = re.compile(r"\d")


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
    outcome: Optional[str] = None  # what a matched run did (its status), when the signature says


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
    rx: Any  # RE2 (triage.rules.language.userregex)
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


class Grep:
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
        self.then: Optional["Grep"] = None

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

        cands = [anchor_candidates(norm) for _, _, norm in literals]
        for (i, spec, norm), c in zip(literals, cands):
            if not c:
                raise InputError(f"signature {spec.id}: the text has no word to search for: {spec.text!r}")
        self._literals = [
            _Literal(i, spec, norm, fuzzy_form(norm), tuple(a))
            for (i, spec, norm), a in zip(
                literals, choose_anchors(cands, [identifier_words(spec.text) for _, spec, _ in literals])
            )
        ]

        # anchor word -> literal signatures (positions in self._literals)
        self._by_anchor: dict[str, list[int]] = {}
        for k, lit in enumerate(self._literals):
            for a in lit.anchors:
                self._by_anchor.setdefault(a, []).append(k)
        self._anchor_list = list(self._by_anchor)

        self._grep = Grep(self._anchor_list, self._regexes, self.engine)

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
            if shape is not None and _DIGIT.search(norm) is None:
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
        form = fuzzy_form(norm)
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

