"""A run's log, read once: metrics, status and provenance from the
investigation's extractors, known failures from the signatures, unmatched
error lines, and a short excerpt to keep with the run.

``add-run --log`` calls :func:`read_log_into`; anything that already has the
log's lines (the GitHub fetcher) calls :func:`apply_log` with them.  Both
fill a :class:`~triage.kb.store.RunInput` and return the lines to show the
user.  ``scan`` calls :func:`scan_log` directly.

What ``apply_log`` decides:

* Extractors: the investigation's own, then the shared ones (rule files
  without an investigation).  Only when none is declared anywhere does the
  built-in ``Accuracy: 0.878`` reader (:data:`DEFAULT_EXTRACTORS`, metric
  ``accuracy``) apply: a declared extractor says which metric a line is.
* What the user typed wins: ``--metric``, ``--set`` and ``--status`` override
  the log's metric, provenance key and status of the same name.
* The first line that matches a signature marks the run (``signature``,
  ``signature_line``); a log that matches none clears an earlier mark.
* A known failure whose signature names an ``outcome:`` (timeout, oom,
  infra, ...) gives the run that status, over a status line and over a CI
  conclusion other than a pass (``conclusion=True``: GitHub's ``failure``
  for a job killed at exit code 137); never over ``--status``.
* A new run that neither the user nor a status extractor gave a status gets
  one from the log: ``crashed`` after a known failure of class ``crash`` or
  ``oom``, ``infra`` after any other known failure (setup error, infra: the
  run never measured anything), else ``passed``/``failed`` from the primary
  metric against the gate.  An existing run keeps its status unless the
  user or a status line says otherwise.
* The excerpt: the matched line and the extracted lines, each with
  :data:`CONTEXT` lines around it (or, when nothing was found, the log's last
  lines), at most :data:`EXCERPT_LINES` lines and :data:`EXCERPT_BYTES` bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from triage.ingest.extract import DEFAULT_EXTRACTORS, Extracted, Extraction, Extractor
from triage.ingest.logs import ANSI, Block, LogReader, blocks, open_log
from triage.ingest.matcher import Match, Matcher, SignatureSpec
from triage.ingest.scan import Scan
from triage.errors import InputError
from triage.ingest.runs import metric_scales, proportion_problem
from triage.rules.language.schema import outcome
from triage.kb import store

__all__ = [
    "apply_log",
    "read_log_into",
    "scan_log",
    "LogFindings",
    "extractor_from_spec",
    "signature_from_spec",
    "extractors_of",
    "matcher_of",
    "status_from_log",
    "shown",
]

#: Lines of context kept around each matched or extracted line.
CONTEXT = 2
#: The excerpt's bounds.
EXCERPT_LINES = 40
EXCERPT_BYTES = 4096
#: A longer line is cut (in the excerpt and as the signature line).
LINE_CHARS = 400
#: Lines kept from the end of a log in which nothing was found.
TAIL_LINES = 10
#: Signature classes whose runs crashed (others never measured anything).
CRASH_CLASSES = ("crash", "oom")


# ---------------------------------------------------------------------------
# Definitions from the knowledge base


def extractor_from_spec(d: Mapping[str, Any]) -> Extractor:
    """An extractor as a rule file declares it (``ExtractorSpec``)."""
    status_map = None
    if d.get("metric") is not None:
        kind, name = "metric", d["metric"]
    elif d.get("provenance") is not None:
        kind, name = "provenance", d["provenance"]
    elif isinstance(d.get("status"), Mapping):
        kind, name, status_map = "status", None, dict(d["status"])
    else:
        kind, name = "status", d.get("status")
    return Extractor(id=d["id"], pattern=d["pattern"], kind=kind, name=name, pick=d.get("pick", "last"),
                     status_map=status_map, n=d.get("n"))


def signature_from_spec(d: Mapping[str, Any]) -> SignatureSpec:
    """A signature as a rule file declares it (``class`` is its class)."""
    return SignatureSpec(id=d["id"], text=d["text"], cls=d.get("class", d.get("cls", "")),
                         meaning=d.get("meaning", ""), remedy=d.get("remedy", ""), regex=bool(d.get("regex", False)),
                         outcome=outcome(d["outcome"]) if d.get("outcome") else None)


def extractors_of(s: Any, inv: Any) -> list[Extractor]:
    """The investigation's extractors and the shared ones; the built-in
    accuracy reader only when none is declared."""
    found = [extractor_from_spec(d) for d in store.extractors_for(s, inv) if d.get("pattern")]  # json: read results
    return found or list(DEFAULT_EXTRACTORS)


def matcher_of(s: Any, threshold: float = 88.0) -> Optional[Matcher]:
    """A matcher over every signature in the knowledge base (None: there are none)."""
    specs = [signature_from_spec(d) for d in store.signature_specs(s)]
    return Matcher(specs, threshold=threshold) if specs else None


# ---------------------------------------------------------------------------
# One pass over a log


@dataclass
class LogFindings:
    """What one pass over a log found."""

    extracted: Extracted
    matches: list[Match] = field(default_factory=list)
    candidates: list[tuple[int, str]] = field(default_factory=list)
    excerpt: Optional[str] = None
    #: Matching lines past the number a scan keeps (``scan.MAX_MATCHES``).
    matches_left_out: int = 0


def shown(line: str) -> str:
    """A log line as shown and kept: ANSI codes removed, cut at :data:`LINE_CHARS`."""
    line = ANSI.sub("", line) if "\x1b" in line else line
    line = line.rstrip()
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def _tail(block: Block, k: int) -> list[str]:
    """The last ``k`` lines of a block, without splitting all of it."""
    if block.has_lines():
        return block.lines()[-k:]
    if block.has_data():
        return [x.decode("utf-8", "replace") for x in block.data().rsplit(b"\n", k)[-k:]]
    return block.text().rsplit("\n", k)[-k:]


def _excerpt(windows: Sequence[list[tuple[int, str]]]) -> Optional[str]:
    """Windows of (line number, line), most important first, as one bounded
    text in log order: overlapping windows merged, a gap marked with ``…``.
    A window that no longer fits is left out whole."""
    chosen: dict[int, str] = {}
    # bytes and lines so far, each window counted with a gap marker before
    # it; the first has none, hence the one marker's slack in the bounds
    size = count = 0
    for win in windows:
        new = {no: shown(line) for no, line in win if no not in chosen}
        cost = sum(len(x.encode("utf-8")) + 1 for x in new.values()) + len("…\n".encode("utf-8"))
        if chosen and (count + len(new) + 1 > EXCERPT_LINES + 1 or size + cost > EXCERPT_BYTES + 4):
            break
        chosen.update(new)
        size, count = size + cost, count + len(new) + 1
    out: list[str] = []
    last = None
    for no in sorted(chosen):
        if last is not None and no != last + 1:
            out.append("…")
        out.append(chosen[no])
        last = no
    text = "\n".join(out)
    if len(text.encode("utf-8")) > EXCERPT_BYTES:  # one window alone, too big
        text = text.encode("utf-8")[:EXCERPT_BYTES].decode("utf-8", "ignore")
    return text or None


def scan_log(
    source: "Iterable[str] | str",
    matcher: Optional[Matcher],
    extractors: Sequence[Extractor] = (),
    *,
    candidates: int = 0,
    first_match: bool = False,
    excerpt: bool = False,
    progress: Optional[Callable[[], None]] = None,
) -> LogFindings:
    """Read a log once and apply everything asked of it.

    ``source`` is an open :class:`~triage.ingest.logs.LogReader`, lines, or
    a string.  ``candidates`` caps the unmatched error-looking lines kept;
    ``first_match`` stops matching at the first known failure (extraction
    goes on to the end); ``excerpt`` keeps the lines around what was found;
    ``progress`` is called after each block.
    """
    extraction = Extraction(extractors)
    scan = Scan(matcher, candidates) if matcher is not None else None
    if scan is not None and isinstance(source, LogReader) and not (extraction.compiled or first_match or excerpt):
        # Signatures only (`triage scan`): the reader's blocks go straight to
        # the RE2 pass, with no copy and no line counting of their own.
        source.on_span = progress
        scan.feed(source)
        return LogFindings(extraction.result(), scan.matches, scan.candidates, matches_left_out=scan.matches_left_out)
    windows: dict[str, list[tuple[int, str]]] = {}
    tail: list[str] = []
    for block in blocks(source):
        want: list[tuple[str, int]] = []
        if scan is not None and not (first_match and scan.matches):
            new = scan.feed(block)
            if new and "" not in windows:
                want.append(("", new[0].line_no))
        for ident, line_no in extraction.feed(block):
            want.append((ident, line_no))
        if excerpt:
            if want:
                lines = block.lines()
                for key, line_no in want:
                    i = line_no - block.first
                    lo, hi = max(0, i - CONTEXT), min(len(lines), i + CONTEXT + 1)
                    windows[key] = [(block.first + j, lines[j]) for j in range(lo, hi)]
            tail = (tail + _tail(block, TAIL_LINES))[-TAIL_LINES:]
        if progress is not None:
            progress()
    found = LogFindings(extraction.result())
    if scan is not None:
        found.matches = scan.matches[:1] if first_match else scan.matches
        found.candidates = scan.candidates
        found.matches_left_out = scan.matches_left_out
    if excerpt:
        order = ([windows.pop("")] if "" in windows else []) + sorted(windows.values(), key=lambda w: w[0][0])
        if not order and tail:
            order = [list(enumerate(tail))]  # one window: its numbers only order it
        found.excerpt = _excerpt(order)
    return found


# ---------------------------------------------------------------------------
# Into a run


def status_from_log(inv: Any, metrics: Mapping[str, Mapping], signature: Optional[SignatureSpec]) -> Optional[str]:
    """The status a new run without one gets from its log (module docstring)."""
    if signature is not None:
        return signature.outcome or ("crashed" if signature.cls in CRASH_CLASSES else "infra")
    value = metrics.get(inv.metric, {}).get("value")
    if value is None or inv.gate is None:
        return None
    passed = value <= inv.gate if inv.direction == "lower" else value >= inv.gate
    return "passed" if passed else "failed"


def _signature_outcome(data: store.RunInput, sig: SignatureSpec, users: bool) -> list[str]:
    """A signature's outcome as the run's status, unless the user gave one."""
    if sig.outcome is None or data.status == sig.outcome:
        return []
    if users:
        return [f"log: status {sig.outcome} (from known failure {sig.id}) (not used: --status given)"]
    data.status = sig.outcome
    return [f"log: status {sig.outcome} (from known failure {sig.id})"]


def _metric_text(name: str, v: Mapping) -> str:
    return f"{name}={v['value']:g}" + (f"/{v['n']}" if v.get("n") else "")


def apply_log(session: Any, inv: Any, data: store.RunInput, lines: "Iterable[str] | str", *,
              conclusion: bool = False) -> list[str]:
    """Read a log's lines into ``data`` (see the module docstring); returns
    what was found, one line each, for the user.  ``conclusion``: ``data.status``
    is CI's conclusion, not the user's, and a signature's outcome refines it."""
    extractors = extractors_of(session, inv)
    matcher = matcher_of(session)
    found = scan_log(lines, matcher, extractors, first_match=True, excerpt=True)
    return _apply(session, inv, data, found, matcher, conclusion)


def read_log_into(session: Any, inv: Any, data: store.RunInput, path: str) -> list[str]:
    """:func:`apply_log` on a log file (plain or gzip; ``-`` is standard input)."""
    with open_log(path) as log:
        said = apply_log(session, inv, data, log)
        if log.lines_cut:
            said.append(cut_note(log))
        return said


def cut_note(log: LogReader) -> str:
    """The line that says how many lines of a log were cut."""
    return (f"log: {log.lines_cut:,} line(s) longer than {log.max_line:,} bytes were cut to that length "
            "(TRIAGE_MAX_LOG_LINE raises the limit)")


def _apply(session: Any, inv: Any, data: store.RunInput, found: LogFindings, matcher: Optional[Matcher],
           conclusion: bool = False) -> list[str]:
    said: list[str] = []
    # the user's --status: nothing in the log overrides it (CI's conclusion, other than a pass, a signature may refine)
    users = data.status is not None and not (conclusion and data.status != "passed")
    ex = found.extracted

    def where(key: str) -> str:
        line_no, ident = ex.sources[key]
        return f"line {line_no}, {ident}"

    metrics = {k: {"value": v} | ({"n": n} if n is not None else {}) for k, (v, n) in ex.metrics.items()}
    scales = metric_scales(inv.spec)  # a percentage with its n is on 100
    for name, v in sorted(metrics.items()):
        problem = proportion_problem(v["value"], v.get("n"), scales.get(name, 1.0))
        if problem:
            raise InputError(f"log: {_metric_text(name, v)} ({where('metric:' + name)}): {problem}")
    given_metrics = data.metrics or {}
    for name, v in sorted(metrics.items()):
        note = f" (not used: --metric {name} given)" if name in given_metrics else ""
        said.append(f"log: {_metric_text(name, v)} ({where('metric:' + name)}){note}")
    if metrics:
        data.metrics = {**metrics, **given_metrics}

    given_prov = data.provenance or {}
    for key, value in sorted(ex.provenance.items()):
        note = f" (not used: --set {key} given)" if key in given_prov else ""
        said.append(f"log: {key}={value} ({where('provenance:' + key)}){note}")
    if ex.provenance:
        data.provenance = {**ex.provenance, **given_prov}

    if ex.status is not None:
        note = " (not used: --status given)" if data.status is not None else ""
        said.append(f"log: status {ex.status} ({where('status')}){note}")
        if data.status is None:
            data.status = outcome(ex.status)

    sig = None
    if found.matches:
        m = found.matches[0]
        sig = next(x for x in matcher.signatures if x.id == m.signature_id)  # type: ignore[union-attr]
        data.signature_id, data.signature_line = m.signature_id, shown(m.line)
        said.append(f"log: known failure {m.signature_id} ({sig.cls}) at line {m.line_no}, "
                    f"score {m.score:.0f} ({m.how})" + (f": {sig.meaning}" if sig.meaning else ""))
        said.extend(_signature_outcome(data, sig, users))
    else:
        data.signature_id = data.signature_line = ""  # a new log without one clears an old mark

    if data.status is None and not store.find_runs(session, inv.id, data.run_id, data.config):
        merged = data.metrics or {}
        inferred = status_from_log(inv, merged, sig)
        if inferred is not None:
            data.status = inferred
            why = f"known failure {sig.id}" if sig is not None else f"{inv.metric} against the gate {inv.gate:g}"
            said.append(f"log: status {inferred} (from {why})")

    if found.excerpt is not None:
        data.log_excerpt = found.excerpt
    if not said:
        said.append("log: no metric, status or known failure found")
    return said
