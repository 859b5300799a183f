"""One pass over a log: the lines matching a signature and the error-looking
lines that match none (the makings of new signatures)."""

from __future__ import annotations

import re
from typing import Iterable

from triage.ingest.logs import Block
from triage.ingest.matcher import Grep, Match, Matcher

__all__ = ["Scan", "candidates", "ERROR_WORDS", "MAX_MATCHES", "MAX_LOOKED"]

#: A scan keeps this many matching lines, and stops reading when it has them
#: and its candidates.
MAX_MATCHES = 10_000
#: A scan looks at this many error-looking lines for candidates, at most.
MAX_LOOKED = 100_000

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
            self._grep = Grep(matcher._anchor_list, matcher._regexes, matcher.engine, extra)
        else:
            self._grep = Grep([], [], matcher.engine, extra)
        self._narrowed = not self.limit  # no candidates wanted

    def _narrow(self) -> None:
        """Stop looking for candidates (enough found, or enough lines looked at)."""
        if not self._narrowed:
            self._narrowed = True
            m = self.matcher
            self._grep.then = Grep(m._anchor_list if self.want_matches else [],
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


