"""Extractors: pull metrics, a status and provenance out of a CI log.

An extractor is a regular expression with named groups, run by RE2 (linear
time; see :mod:`triage.rules.language.userregex` for what it refuses):

* ``kind="metric"``: group ``value`` is the number (``float``), optional group
  ``n`` the sample count (``int``); ``name`` is the metric.  Without a group
  ``n`` (or when it did not take part in the match) the extractor's ``n`` is
  used, if any.
* ``kind="provenance"``: group ``value`` is stored under ``name``.
* ``kind="status"``: with ``status_map``, the text of group ``value`` is looked
  up in it (exactly, then ignoring case) and a text the map does not know is
  no match; without one, a match sets the status ``name``.

Each line is searched (``re.search``) as the program printed it: ANSI colour
codes and a leading CI timestamp column (GitHub Actions prefixes every line
with ``2026-06-26T12:34:56.1234567Z``) are removed first, so that
``^Accuracy: (?P<value>[0-9.]+)`` works on downloaded logs too.  Line
numbers stay those of the log.

``pick`` says which match counts when an extractor matches several lines:
``"last"`` (the default: the final score of an eval that printed progress)
or ``"first"``.  A match whose ``value`` is not a number in range (``triage.numbers``; or, for a
status, not in the map) does not count.  When several extractors give the
same metric or provenance key, or several give a status, the one declared
first wins; ``found`` lists every counted match, for showing the user.

``DEFAULT_EXTRACTORS`` holds only the one line shape that eval scripts print
everywhere, ``Accuracy: 0.878`` / ``accuracy=0.878`` (metric ``accuracy``);
the lines of one investigation (``[gsm8k] accuracy=0.878 threshold=0.92``,
debug counters) are declared in its rule file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from triage.errors import InputError
from triage.ingest.logs import ANSI, Block, blocks, hit_lines
from triage.rules.language.userregex import UserRegexError, compile_user
from triage.numbers import in_range

__all__ = [
    "Extractor",
    "Extracted",
    "CompiledExtractor",
    "compile_extractors",
    "extract",
    "Extraction",
    "DEFAULT_EXTRACTORS",
    "KINDS",
]

KINDS = ("metric", "status", "provenance")


@dataclass(frozen=True)
class Extractor:
    """One thing to read from a log (see the module docstring)."""

    id: str
    pattern: str
    kind: str  # "metric" | "status" | "provenance"
    name: str | None = None  # metric or provenance key; the status when there is no map
    pick: str = "last"  # "first" | "last"
    status_map: dict[str, str] | None = None  # for kind="status": group "value" text -> status
    n: int | None = None  # for kind="metric": the sample count when the line does not give one


@dataclass
class Extracted:
    """What a log gave: ``metrics`` name -> (value, n), the status, provenance,
    and ``found``: (line number, extractor id, matched text) for each match
    that counted, in log order."""

    metrics: dict[str, tuple[float, int | None]] = field(default_factory=dict)
    status: str | None = None
    provenance: dict[str, str] = field(default_factory=dict)
    found: list[tuple[int, str, str]] = field(default_factory=list)
    #: Where each value came from: ``"metric:NAME"``, ``"provenance:KEY"`` or
    #: ``"status"`` -> (line number, extractor id).
    sources: dict[str, tuple[int, str]] = field(default_factory=dict, compare=False)


DEFAULT_EXTRACTORS: tuple[Extractor, ...] = (
    Extractor(
        id="accuracy",
        # Accuracy / accuracy / ACCURACY as a word; written without (?i) and
        # with the word-start test after the first letter, which is several
        # times faster in ``re`` than (?i)\baccuracy.
        pattern=r"[Aa](?<!\w[Aa])(?:ccuracy|CCURACY)\s*[:=]\s*(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?!\w|\.\d)",
        kind="metric",
        name="accuracy",
        pick="last",
    ),
)


@dataclass(frozen=True)
class CompiledExtractor:
    """An extractor checked and compiled: ``rx`` for one line, ``block_rx``
    (``re.MULTILINE``) to find candidate lines in a block at C speed."""

    spec: Extractor
    index: int
    rx: Any  # re.Pattern for ours, an RE2 pattern for a user's
    block_rx: Any
    folded_map: dict[str, str] | None


def _compile_one(spec: Extractor, index: int) -> CompiledExtractor:
    where = f"extractor {spec.id or '#' + str(index + 1)}"
    if not spec.id:
        raise InputError(f"{where}: needs an id")
    if spec.kind not in KINDS:
        raise InputError(f"{where}: kind must be one of {', '.join(KINDS)}, not {spec.kind!r}")
    if spec.pick not in ("first", "last"):
        raise InputError(f"{where}: pick must be first or last, not {spec.pick!r}")
    try:
        if any(spec is d for d in DEFAULT_EXTRACTORS):  # ours, written for Python's re
            rx, block_rx = re.compile(spec.pattern), re.compile(spec.pattern, re.MULTILINE)
        else:  # a user's: RE2, linear in the line whatever the pattern
            rx, block_rx = compile_user(spec.pattern), compile_user(spec.pattern, multiline=True)
    except (re.error, UserRegexError) as e:
        raise InputError(f"{where}: bad pattern: {e}") from None
    groups = rx.groupindex
    folded = None
    if spec.kind in ("metric", "provenance"):
        if not spec.name:
            raise InputError(f"{where}: a {spec.kind} extractor needs a name")
        if "value" not in groups:
            raise InputError(f"{where}: the pattern needs a named group (?P<value>...)")
        if spec.status_map is not None:
            raise InputError(f"{where}: status_map is only for status extractors")
    else:
        if spec.status_map is None and not spec.name:
            raise InputError(f"{where}: a status extractor needs a status name or a status_map")
        if spec.status_map is not None:
            if spec.name:
                raise InputError(f"{where}: give a status name or a status_map, not both")
            if "value" not in groups:
                raise InputError(f"{where}: a status_map needs a named group (?P<value>...)")
            bad = [k for k, v in spec.status_map.items() if not isinstance(v, str) or not v]
            if bad:
                raise InputError(f"{where}: status_map gives no status for {bad[0]!r}")
            folded = {k.casefold(): v for k, v in spec.status_map.items()}
    if spec.n is not None and (spec.kind != "metric" or spec.n < 1):
        raise InputError(f"{where}: n is a sample count (>= 1) for metric extractors")
    return CompiledExtractor(spec, index, rx, block_rx, folded)


def compile_extractors(extractors: Iterable[Extractor | CompiledExtractor]) -> tuple[CompiledExtractor, ...]:
    """Check and compile extractors; raises :class:`~triage.errors.InputError`
    naming the first bad one."""
    out = []
    for i, e in enumerate(extractors):
        out.append(e if isinstance(e, CompiledExtractor) else _compile_one(e, i))
    return tuple(out)


# ---------------------------------------------------------------------------

_TS = r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?[ \t]"
_CI_TIMESTAMP_FIRST = re.compile(_TS)
# Starting with a literal newline lets ``re`` skip ahead at memchr speed
# (a MULTILINE ``^`` would be tried at every position).
_CI_TIMESTAMP_NEXT = re.compile("\n" + _TS)
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")


def _clean(text: str) -> str:
    """Drop ANSI codes and the CI timestamp column; keeps every newline."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    first = _CI_TIMESTAMP_FIRST.match(text)
    if first:
        text = text[first.end() :]
    return _CI_TIMESTAMP_NEXT.sub("\n", text)


def _number(text: str) -> float | None:
    t = text.strip().replace("_", "")
    if _THOUSANDS.fullmatch(t):
        t = t.replace(",", "")
    try:
        v = float(t)
    except ValueError:
        return None
    return v if in_range(v) else None


def _count(text: str | None) -> int | None:
    if text is None:
        return None
    t = text.strip().replace("_", "").replace(",", "")
    try:
        v = int(t)
    except ValueError:
        return None
    return v if v >= 1 else None


def _reading(ce: CompiledExtractor, m: Any):
    """What a match says, or None when it does not count."""
    spec = ce.spec
    if spec.kind == "metric":
        value = _number(m.group("value") or "")
        if value is None:
            return None
        n = _count(m.group("n")) if "n" in ce.rx.groupindex else None
        return (value, n if n is not None else spec.n)
    if spec.kind == "provenance":
        value = (m.group("value") or "").strip()
        return value or None
    if spec.status_map is None:
        return spec.name
    key = m.group("value")
    if key is None:
        return None
    key = key.strip()
    if key in spec.status_map:
        return spec.status_map[key]
    return ce.folded_map.get(key.casefold())  # type: ignore[union-attr]


def _hits(ce: CompiledExtractor, text: str, data: Callable[[], bytes]) -> Iterator[tuple[int, Any, object]]:
    """``(line index in text, match, reading)`` for each line that counts.

    A user's RE2 pattern runs over the block's UTF-8 bytes (``data()``):
    RE2 would encode a ``str`` again at every call."""
    if isinstance(ce.rx, re.Pattern):
        found = ((idx, text[ls:le]) for idx, ls, le in hit_lines(ce.block_rx.search, text))
    else:
        raw = data()
        found = ((idx, raw[ls:le].decode("utf-8", "surrogatepass"))
                 for idx, ls, le in hit_lines(ce.block_rx.search, raw, b"\n"))
    for idx, line in found:
        m = ce.rx.search(line)  # the line alone decides
        if m is not None:
            reading = _reading(ce, m)
            if reading is not None:
                yield idx, m, reading


class Extraction:
    """Extractors applied to a log block by block, for callers that read the
    log once and hand each block to several scanners (``add-run --log``,
    ``scan``).  :func:`extract` is the one-call form."""

    def __init__(self, extractors: Sequence[Extractor | CompiledExtractor]) -> None:
        self.compiled = compile_extractors(extractors)
        # extractor index -> (line_no, matched text, reading)
        self._chosen: dict[int, tuple[int, str, object]] = {}

    def feed(self, block: Block) -> list[tuple[str, int]]:
        """Apply every extractor to one block (blocks in log order); returns
        ``(extractor id, line number)`` for each line chosen in it, so that a
        caller can keep its context."""
        if not self.compiled:
            return []
        text = _clean(block.text())
        encoded: list[bytes] = []

        def data() -> bytes:
            if not encoded:
                encoded.append(text.encode("utf-8", "surrogatepass"))
            return encoded[0]

        chosen = self._chosen
        picked = []
        for ce in self.compiled:
            first = ce.spec.pick == "first"
            if first and ce.index in chosen:
                continue
            got = None
            for idx, m, reading in _hits(ce, text, data):
                got = (block.first + idx, m.group(0), reading)
                if first:
                    break
            if got is not None:
                chosen[ce.index] = got
                picked.append((ce.spec.id, got[0]))
        return picked

    def result(self) -> Extracted:
        """What the blocks fed so far gave (see :class:`Extracted`)."""
        out = Extracted()
        for ce in self.compiled:
            got = self._chosen.get(ce.index)
            if got is None:
                continue
            line_no, matched, reading = got
            out.found.append((line_no, ce.spec.id, matched))
            spec = ce.spec
            key = "status" if spec.kind == "status" else f"{spec.kind}:{spec.name}"
            if key in out.sources:  # an extractor declared earlier gave it
                continue
            out.sources[key] = (line_no, spec.id)
            if spec.kind == "metric":
                out.metrics[spec.name] = reading  # type: ignore[index,assignment]
            elif spec.kind == "provenance":
                out.provenance[spec.name] = reading  # type: ignore[index,assignment]
            else:
                out.status = reading  # type: ignore[assignment]
        out.found.sort(key=lambda f: f[0])
        return out


def extract(lines: Iterable[str] | str, extractors: Sequence[Extractor | CompiledExtractor]) -> Extracted:
    """Run extractors over a log and merge what they found.

    ``lines`` is a :class:`~triage.ingest.logs.LogReader` (read in blocks),
    any iterable of lines, or the whole log as one string.
    """
    extraction = Extraction(extractors)
    if extraction.compiled:
        for block in blocks(lines):
            extraction.feed(block)
    return extraction.result()
