"""A log read against the known failures: ``triage scan`` (the known failures it holds, the
error lines no signature knows, what the investigation's extractors take from it),
``triage signatures suggest`` (drafts from those lines) and ``signatures list``.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Callable, ContextManager, Optional

from triage.errors import InputError

#: ``progress(size)``: a context around the reading of a log of ``size`` bytes (None: unknown),
#: yielding ``update(bytes_read)`` or None.
Progress = Callable[[Optional[int]], ContextManager[Optional[Callable[[int], None]]]]


def check_threshold(threshold: float) -> None:
    if not 0 < threshold <= 100:
        raise InputError(f"--threshold {threshold:g}: expected a score above 0 and at most 100")


def scan(url: str, path: str, *, pr: Optional[int] = None, repo: Optional[str] = None, threshold: float = 88.0,
         candidates: int = 50, note: Callable[[str], None] = lambda _: None,
         progress: Optional[Progress] = None) -> tuple[Any, Any]:
    """Scan the log ``path`` (``-``: standard input) against the knowledge base's signatures,
    fuzzy matches scoring ``threshold`` or more, keeping at most ``candidates`` unmatched error
    lines; with ``pr`` (and ``repo``) the investigation's extractors read it too.  ``note(text)``
    hears what was cut or left out.  Returns the matcher and what was found."""
    from triage.ingest import logread
    from triage.ingest.logs import open_log
    from triage.kb import store

    check_threshold(threshold)
    with store.session(url) as s:
        matcher = logread.matcher_of(s, threshold)
        extractors = logread.extractors_of(s, store.find_investigation(s, pr, repo)) if pr is not None else []
    if matcher is None:
        raise InputError("no signatures in the knowledge base: declare some under `signatures:` in a rule file")
    with open_log(path) as log, (progress or (lambda _: nullcontext()))(log.progress()[1]) as update:
        tick = (lambda: update(log.progress()[0])) if update is not None else None
        found = logread.scan_log(log, matcher, extractors, candidates=candidates, progress=tick)
    if log.lines_cut:
        note(logread.cut_note(log))
    if found.matches_left_out:
        note(f"scan: {len(found.matches):,} matching lines kept; reading stopped there")
    return matcher, found


def drafts(found: Any) -> list[tuple[int, dict]]:
    """A draft signature (:func:`triage.ingest.draft.draft`) for each unmatched error line of a
    scan, with its line number; each draft's id made unique (``-2``, ``-3`` …)."""
    from triage.ingest.draft import draft

    out, ids = [], set()
    for no, line in found.candidates:
        d = draft(line)
        base, k = d["id"], 2
        while d["id"] in ids:
            d["id"], k = f"{base}-{k}", k + 1
        ids.add(d["id"])
        out.append((no, d))
    return out


def signatures(url: str) -> list:
    """The knowledge base's known-failure signatures."""
    from triage.ingest.logread import signature_from_spec
    from triage.kb import store

    with store.session(url) as s:
        specs = store.signature_specs(s)
    return [signature_from_spec(d) for d in specs]
