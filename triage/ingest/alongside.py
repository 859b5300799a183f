"""An import's evaluation worked out alongside its writes, in a forked process.

An import into an investigation without runs knows, before it writes
anything, what the knowledge base will hold afterwards: the file's records,
in the file's order, keyed from the run table's next key on (SQLite gives a
new row the largest key plus one, and the import holds the write lock
throughout).  :func:`begin` forks a process that reads the file itself,
puts every record in its stored form as the writer does
(:meth:`~triage.kb.runs.RunWriter.stored`), reads runs from those rows as
the knowledge base gives them back (:func:`~triage.kb.investigations.runs_of_rows`)
and works out every unit of the evaluation
(:func:`~triage.rules.engine.evaluate.work_ahead`), while this process writes.

When the writes are done, :meth:`Alongside.help` checks that the knowledge
base holds exactly those runs (every record new, the same count, the keys
the process gave them, the file unchanged); only then are the pieces taken
in, each read stamped with the knowledge base's own fingerprint of it.  The
evaluation uses them where what they read holds, like stored pieces; any
doubt, a failure or a death of the process costs time, never a different
evaluation.  The process touches no connection: it runs beside this one's
open transaction.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

from triage.kb.parallel import Process, fork, pieces_of, worth_it
from triage.rules.engine.source import ListSource, Token

#: Bytes read from the start of a file to judge how many records it holds.
_SAMPLE = 1 << 16


class _Written(ListSource):
    """The runs an import is about to write, in the order of their keys.  What each
    read is fingerprinted with is a stand-in ("" for no runs, as everywhere): the
    knowledge base's own fingerprints replace them once the runs are written."""

    def __init__(self, runs: list) -> None:
        super().__init__(runs, places=False)  # a run's place is its key

    def order(self, run: Any) -> int:
        return run.seq

    def fingerprint(self, token: Token) -> str:
        return "written" if self.runs_of(token) else ""


class Alongside(Process):
    def __init__(self, pid: int, fd: int, iid: str, base: int, path: str, stat: tuple) -> None:
        super().__init__(pid, fd)
        self.iid, self._base, self._path, self._stat = iid, base, path, stat
        self._result: Any = None

    def written(self, result: Any) -> None:
        """What the import did (an :class:`~triage.ingest.importer.ImportResult`)."""
        self._result = result

    def help(self, s: Any, inv: Any, memo: Any) -> None:
        """Before ``memo``'s evaluation of ``inv``: take in what the process worked out,
        if the knowledge base holds the runs it read."""
        got = self.collect()
        if got is None or len(got) != 3 or not self._holds(s, got[2]):
            return
        key, pieces = pieces_of(got)
        source = inv.source
        stamped = {name: ([[kind, what, fp if kind in ("b", "v") else source.fingerprint((kind, what))]
                           for kind, what, fp in reads], data)
                   for name, (reads, data) in pieces.items()}
        memo.adopt(key, stamped)
        self.adopted = len(stamped)

    def _holds(self, s: Any, count: int) -> bool:
        from triage.kb import configruns

        r = self._result
        if r is None or r.investigations != [self.iid] or not r.total == r.created == count:
            return False
        if _stat(self._path) != self._stat:
            return False
        rows = configruns.stored(s, self.iid)  # (config, first key, count, largest key, ...)
        return (bool(rows) and sum(row[2] for row in rows) == count and min(row[1] for row in rows) == self._base
                and max(row[3] for row in rows) == self._base + count - 1)


def begin(s: Any, path: str, fmt: str, default: Optional[str], writer: Any,
          at: Optional[int]) -> Optional[Alongside]:
    """Fork the process for an import of ``path`` about to be written by ``writer`` in
    session ``s``, when it pays and the knowledge base's keys for the file's runs
    are known: a JSON Lines file of enough records (``at`` at least,
    :func:`~triage.kb.parallel.worth_it`) for one SQLite investigation without runs
    (its first record's, else ``default``).  None otherwise."""
    from sqlalchemy import func, select

    from triage.kb import configruns, snapshot
    from triage.kb import models as m
    from triage.kb.investigations import load_bundle

    if fmt != "jsonl" or path == "-" or not os.path.isfile(path) or s.get_bind().dialect.name != "sqlite":
        return None
    stat = _stat(path)
    if not stat:
        return None
    first, estimate = _first_record(path, stat[0])
    if first is None or not worth_it(estimate, at):
        return None
    iid = first.get("investigation") or default
    inv = s.get(m.Investigation, iid) if isinstance(iid, str) else None
    if inv is None or configruns.stored(s, iid):
        return None
    base = (s.execute(select(func.max(m.Run.pk))).scalar() or 0) + 1
    bundle = load_bundle(s, inv, runs=False)
    code = snapshot.code_stamp()
    forked = fork(lambda: _work(path, iid, default, writer, bundle, base, code, stat))
    return Alongside(*forked, iid, base, path, stat) if forked is not None else None


def _stat(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return ()
    return st.st_size, st.st_mtime_ns, st.st_ino


def _first_record(path: str, size: int) -> tuple[Optional[dict], int]:
    """The file's first record, and about how many records it holds (from its first bytes)."""
    try:
        with open(path, "rb") as fh:
            sample = fh.read(_SAMPLE)
    except OSError:  # the import says what is wrong with the file
        return None, 0
    lines = sample.split(b"\n")
    whole = lines[:-1] if len(sample) == _SAMPLE else lines
    whole = [x for x in whole if x.strip()]
    if not whole:
        return None, 0
    try:
        first = json.loads(whole[0])
    except (ValueError, RecursionError):  # the import says what is wrong with the line
        return None, 0
    return (first if isinstance(first, dict) else None), size * len(whole) // max(1, sum(map(len, whole)))


def _work(path: str, iid: str, default: Optional[str], writer: Any, bundle: Any, base: int, code: str,
          stat: tuple) -> list:
    """The process's part: the file's runs as they will be stored, and every piece of their evaluation."""
    from operator import itemgetter

    from triage.ingest.importer import _jsonl_batches
    from triage.kb.investigations import READ_COLUMNS, runs_of_rows
    from triage.kb.runs import STORED_COLUMNS
    from triage.rules.engine.evaluate import ahead_units, work_ahead
    from triage.rules.engine.memo import Memo

    count = 0
    scales = {name: spec.scale for name, spec in bundle.spec.metrics.items() if spec.scale}
    read = itemgetter(*(STORED_COLUMNS.index(c) for c in READ_COLUMNS))  # a stored row as it is read back

    def batches() -> Any:  # a batch at a time, as the writer puts them: never all the rows at once
        nonlocal count
        with open(path, "rb") as fh:
            for _, records in _jsonl_batches(fh, path, lambda _: scales):
                if any(r[0] is None for r in records):
                    records = [r if r[0] else (default,) + tuple(r[1:]) for r in records]
                if {r[0] for r in records} != {iid}:
                    raise ValueError("runs of another investigation")  # their keys are not known
                start = base + count
                yield [(*read(v), start + i) for i, v in enumerate(writer.stored(records))]
                count += len(records)

    # A run twice in the file (the import then updates, keeping the first key) shows as
    # fewer runs created than records: help() checks that.
    source = _Written(runs_of_rows(batches()))
    if _stat(path) != stat:
        raise ValueError("the file changed while it was read")
    bundle.source = source
    memo = Memo()
    memo.code = code
    work_ahead(bundle, memo, [name for name, _ in ahead_units(bundle, source.configs())])
    return [memo.key, {name: memo.pieces[name] for name in memo.worked}, count]
