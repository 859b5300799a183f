"""Import run records: ``triage import`` (a JSON Lines or CSV file of runs), and
export them again: ``triage export`` (what the import reads; the round trip is lossless).

An import is one transaction: every record of the file or none.  Each
investigation it wrote to is evaluated once, after it.  A large one is
evaluated in two processes (:mod:`triage.kb.parallel`) once the runs are
committed, each evaluation then in a transaction of its own.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from triage.settings import Settings


def import_records(url: str, file: str, fmt: str, *, pr: Optional[int] = None, repo: Optional[str] = None,
                   overwrite: bool = False, settings: Settings = Settings(),
                   progress: Optional[Callable[[int, Optional[int]], None]] = None) -> Any:
    """Import ``file`` (``-``: standard input) in the format ``fmt`` (``jsonl`` or ``csv``) into
    the knowledge base at ``url``, then evaluate each investigation it wrote to.

    Records that name no investigation go to ``pr``'s (and ``repo``'s).  A record older than
    the stored run is skipped, unless ``overwrite``.  ``settings.parallel_runs``: from how
    many runs written the evaluation takes two processes.  ``progress(bytes_read, size)``
    hears how far the reading is.  Returns the :class:`~triage.ingest.importer.ImportResult`."""
    from triage.ingest import importer
    from triage.kb import store

    with store.session(url) as s:
        default = store.find_investigation(s, pr, repo).id if pr is not None else None
        writer = store.RunWriter(s, overwrite=overwrite)
        result = importer.import_file(s, file, default_investigation=default, fmt=fmt, progress=progress,
                                      overwrite=overwrite, writer=writer)
        apart = _evaluate_in_place(s, result, settings.parallel_runs)
    if apart is not None:
        _evaluate_apart(url, apart, full=bool(result.updated))
    return result


def _evaluate_in_place(s: Any, result: Any, at: Optional[int]) -> Optional[dict[str, list[str]]]:
    """Evaluate what the import wrote, in its transaction; but for each investigation large
    enough for two processes: the configs of each such investigation, to evaluate once the
    runs are committed (:func:`_evaluate_apart`).

    (A process forked to read the file again and evaluate beside the writes, as an
    import into an investigation without runs once had, cost 10-25 % more CPU time
    for about the same wall time: it parsed the file a second time, then evaluated
    alone while this process waited.)"""
    from triage import views
    from triage.kb import configruns, parallel, store

    # A replaced run may keep its config's count, largest id and newest write
    # (a record older than the config's newest run): re-derive every piece.
    full = bool(result.updated)
    apart: dict[str, list[str]] = {}
    here = list(result.investigations)
    if parallel.worth_it(at or 0, at):  # a helper can be had at all
        # A helper for each investigation whose evaluation reads that many runs again: those of
        # the configs written to (every run, for a whole evaluation).  A few runs into configs
        # of many make it read them all; one of a thousand runs among a thousand such costs more
        # to fork for than it saves.
        for iid in here:
            rows = configruns.stored(s, iid)
            written = result.configs.get(iid, set())
            again = sum(row[2] for row in rows if full or row[0] in written)
            if parallel.worth_it(again, at):
                apart[iid] = [row[0] for row in rows]
        here = [iid for iid in here if iid not in apart]
    with _collected(len(here)) as collect:
        for iid in here:
            views.evaluate(s, store.find_investigation(s, ident=iid), full=full, release=True)
            collect()
    return apart or None


@contextmanager
def _collected(evaluations: int) -> Iterator[Callable[[], None]]:
    """Between the evaluations of several investigations, free what the last one left: a
    command runs without the cyclic collector, and an evaluation's context is a cycle (a
    thousand investigations' would hold gigabytes).  What is alive before them (the
    import's own objects) is set aside first, so that each collection looks at one
    evaluation's objects, not at everything the import made."""
    import gc

    if evaluations < 2:
        yield lambda: None
        return
    gc.freeze()
    try:
        yield lambda: gc.collect(1)
    finally:
        gc.unfreeze()


def _evaluate_apart(url: str, configs: dict[str, list[str]], *, full: bool) -> None:
    """Each investigation's evaluation in two processes, in a transaction of its own."""
    from triage import views
    from triage.kb import parallel, store

    with _collected(len(configs)) as collect:
        for iid, names in configs.items():
            helper = parallel.start(url, iid, names, full=full)
            try:
                with store.session(url) as s:
                    views.evaluate(s, store.find_investigation(s, ident=iid), full=full, helper=helper,
                                   release=True)
            finally:
                if helper is not None:
                    helper.close()
            collect()


def export_records(url: str, pr: int, repo: Optional[str], fmt: str) -> str:
    """``pr``'s (and ``repo``'s) runs as the text of a JSON Lines or CSV file (``fmt``), as
    :func:`import_records` reads it (:func:`export_to`, whole)."""
    pieces: list[str] = []
    export_to(url, pr, repo, fmt, pieces.append)
    return "".join(pieces)


def export_to(url: str, pr: int, repo: Optional[str], fmt: str, write: Callable[[str], Any]) -> None:
    """``pr``'s (and ``repo``'s) runs as JSON Lines or CSV (``fmt``), given to ``write`` a few
    thousand runs at a time as they are read (:func:`triage.kb.runs.records_of`): an export
    holds one batch, however many runs there are.  CSV names every metric and provenance key in
    its header: what the runs name is read first (:func:`triage.kb.runs.named_in`), then the rows."""
    from triage.ingest.records import csv_header, dumps, write_csv
    from triage.kb import store
    from triage.kb.runs import named_in, records_of

    with store.session(url) as s:
        iid = store.find_investigation(s, pr, repo).id
        if fmt != "csv":
            for batch in records_of(s, iid):
                write("".join(dumps(rec) + "\n" for rec in batch))
            return
        header = csv_header(rec for batch in named_in(s, iid) for rec in batch)
        write_csv((rec for batch in records_of(s, iid) for rec in batch), _Stream(write), header=header)


class _Stream:
    """A text stream that hands what is written to ``write``."""

    def __init__(self, write: Callable[[str], Any]) -> None:
        self.write = write
