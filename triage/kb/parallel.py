"""An evaluation in two processes, for the large ones.

A whole evaluation of a large investigation (the one after an import of
100,000 runs) is mostly pieces that need no other (:mod:`triage.rules.engine.memo`):
each bisect, rule, prediction and recipe's confounds, and what each config's
runs say.  :func:`start` forks a helper process; both then work out these
units (:func:`triage.rules.engine.evaluate.ahead_units`), the helper from the first
(the bisects, which rules may read) on, this process from the last (configs'
facts) back, each taking a unit by marking it in memory both share, until
they meet.  A unit that reads a bisect is the helper's.  The helper reads
from a snapshot of its own and sends what it worked out, encoded as stored
pieces are, through a pipe; this process then takes in both its own pieces
and the helper's (:meth:`~triage.rules.engine.memo.Memo.adopt`), and its evaluation
uses each only where what it read holds, like any stored piece: a helper
that read another snapshot, failed or died costs time, never a different
evaluation.

Only where it pays and is safe: Linux (``fork``), two CPUs or more, no other
thread in this process, and at least
:data:`PARALLEL_RUNS` runs written or evaluated (``TRIAGE_PARALLEL_RUNS`` sets the number,
``off`` turns it off: :attr:`triage.settings.Settings.parallel_runs`, passed to :func:`worth_it`).  No connection to the knowledge base crosses the fork:
:func:`start` closes this process's first, and the helper opens its own,
read-only (:func:`~triage.kb.db.read_engine`).
"""

from __future__ import annotations

import mmap
import os
import sys
from typing import Any, Callable, Iterable, Iterator, Optional

from triage.settings import PARALLEL_RUNS  # noqa: F401  (the default threshold, named here too)

_FREE, _MINE, _HELPERS = 0, 1, 2  # whose each unit is, in the shared flags
_MAX_UNITS = 1 << 16  # units shared at most; any after them this process's evaluation works out


def worth_it(runs: int, at: Optional[int]) -> bool:
    """Whether an evaluation of ``runs`` runs (written, or to evaluate whole) is worth a helper:
    ``at`` runs at least (``TRIAGE_PARALLEL_RUNS``, :attr:`triage.settings.Settings.parallel_runs`;
    None: never)."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return False
    if len(os.sched_getaffinity(0)) < 2:
        return False
    import threading

    if threading.active_count() > 1:  # a fork copies the other threads' locks, held or not
        return False
    return at is not None and runs >= at


class _Units:
    """An evaluation's units (:func:`~triage.rules.engine.evaluate.ahead_units`) and, in memory
    both processes share, whose each one is: the helper takes them from the
    first on, this process from the last back, and they meet in the middle.  Two
    that take one unit at the same moment both work it out: time lost, nothing
    else."""

    def __init__(self, inv: Any, configs: list[str], flags: mmap.mmap) -> None:
        from triage.rules.engine.evaluate import ahead_units

        self.units = ahead_units(inv, configs)
        self._index = {name: i for i, (name, _) in enumerate(self.units)}
        self._flags = flags

    def take(self, order: Iterable[int], who: int, *, bisects: bool) -> Iterator[str]:
        """The units not taken yet, in ``order``, taken as they are handed out
        (``bisects``: units that read a bisect too)."""
        flags = self._flags
        for i in order:
            if i < len(flags) and flags[i] == _FREE and (bisects or not self.units[i][1]):
                flags[i] = who
                yield self.units[i][0]

    def claim(self, who: int) -> Callable[[str], None]:
        """For ``memo.claim``: a unit worked out inside another (a config's facts, for a
        rule or a recipe) is taken too."""
        index, flags = self._index, self._flags

        def taken(name: str) -> None:
            i = index.get(name, -1)
            if 0 <= i < len(flags) and flags[i] == _FREE:
                flags[i] = who
        return taken


class Process:
    """A forked process that sends one msgpack message back and exits, as this process sees it."""

    def __init__(self, pid: int, fd: int) -> None:
        self._pid, self._fd = pid, fd
        self.adopted = 0  # pieces of the other process's taken in (for tests and benchmarks)

    def collect(self) -> Optional[list]:
        """Wait for the process: what it sent, if it finished well (None: it failed or died)."""
        if self._pid == 0:
            return None
        try:
            message = self._receive()
        finally:
            status = self._reap()
        if status != 0 or message is None:
            return None
        from msgspec import DecodeError
        from msgspec.msgpack import decode

        try:
            got = decode(message)
        except (DecodeError, ValueError):
            return None
        return got if isinstance(got, list) else None

    def _receive(self) -> Optional[bytearray]:
        """The message: its length, then as many bytes, read into one buffer of that size (a
        wide investigation's pieces are tens of megabytes: read in pieces and joined, they
        were held twice while this process held its own pieces too).  None: it ended short."""
        head = b""
        while len(head) < _LENGTH:
            more = os.read(self._fd, _LENGTH - len(head))
            if not more:
                return None
            head += more
        message = bytearray(int.from_bytes(head, "little"))
        view, got = memoryview(message), 0
        while got < len(message):
            n = os.readv(self._fd, [view[got:]])
            if n == 0:
                return None
            got += n
        return message

    def close(self) -> None:
        """Stop the process if it is still at work (this process's evaluation failed)."""
        if self._pid != 0:
            try:
                os.kill(self._pid, 9)
            except ProcessLookupError:
                pass
            self._reap()

    def _reap(self) -> int:
        pid, self._pid = self._pid, 0
        os.close(self._fd)
        self._closed()
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status)

    def _closed(self) -> None:
        """What else to let go of once the process is gone."""


#: Bytes of the length that goes before a process's message.
_LENGTH = 8


def fork(work: Callable[[], Any]) -> Optional[tuple[int, int]]:
    """Run ``work()`` in a forked process, which sends what it returns (msgpack) through a
    pipe and exits, never returning to the caller: ``(pid, the pipe's end to read)``,
    or None when the fork fails.  The process must not use any connection this one has."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:
        code = 1
        try:
            os.close(r)
            from msgspec.msgpack import encode

            encoded = encode(work())
            for data in (memoryview(len(encoded).to_bytes(_LENGTH, "little")), memoryview(encoded)):
                while data:
                    data = data[os.write(w, data):]
            code = 0
        except BaseException:  # noqa: BLE001 - the evaluation does the work itself
            pass
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def pieces_of(got: list) -> tuple[str, dict]:
    key, pieces = got[0], got[1]
    return key, {name: (reads, data) for name, (reads, data) in pieces.items()}


class Helper(Process):
    """The helper process of one evaluation, as this process sees it."""

    def __init__(self, pid: int, fd: int, flags: mmap.mmap, configs: list[str]) -> None:
        super().__init__(pid, fd)
        self._flags, self._configs = flags, configs

    def help(self, s: Any, inv: Any, memo: Any, meanwhile: Optional[Callable[[], None]] = None) -> None:
        """Before ``memo``'s evaluation of ``inv``: work out the units the helper has
        not taken, from the last back, then take in what both worked out.  ``meanwhile``:
        work to do while the helper is still at its last units, if it is."""
        from triage.rules.engine.evaluate import letting_go, work_ahead

        units = _Units(inv, self._configs, self._flags)
        memo.claim = units.claim(_MINE)
        try:  # a config's runs let go once its units here are worked out
            taken = units.take(range(len(units.units) - 1, -1, -1), _MINE, bisects=False)
            work_ahead(inv, memo, letting_go(taken, inv.source.forget))
        finally:
            memo.claim = None
        if meanwhile is not None and not self._sent():
            meanwhile()
        key = memo.key
        got = self.collect()
        memo.adopt_own()
        if got is not None:
            theirs, pieces = pieces_of(got)
            if theirs == key:
                memo.adopt(key, pieces)
                self.adopted = len(pieces)

    def _sent(self) -> bool:
        """Whether the helper has begun to send what it worked out (or is gone)."""
        import select

        return self._pid == 0 or bool(select.select([self._fd], [], [], 0)[0])

    def _closed(self) -> None:
        self._flags.close()


def start(url: str, iid: str, configs: list[str], *, full: bool = False) -> Optional[Helper]:
    """Fork a helper for the evaluation of ``iid`` about to begin (``configs``: the
    investigation's configs, as its runs source lists them).  This process's connections
    are closed first.  None when the fork fails."""
    from triage.kb.db import dispose_engines

    _ready()
    dispose_engines()
    flags = mmap.mmap(-1, _MAX_UNITS)  # shared with the helper, all _FREE
    forked = fork(lambda: _work(url, iid, configs, flags, full))
    if forked is None:
        flags.close()
        return None
    return Helper(*forked, flags, configs)


#: The modules both processes evaluate with: imported before the fork, once, rather than by
#: each process after it (a tenth of a second of the helper's time, a fifth of its share).
SHARED_MODULES = ("sqlalchemy.orm", "triage.kb.db", "triage.kb.investigations", "triage.kb.pieces",
                  "triage.kb.runsource", "triage.kb.snapshot", "triage.rules.engine.evaluate",
                  "triage.rules.engine.bisect", "triage.rules.engine.confounds", "triage.rules.engine.evidence",
                  "triage.rules.engine.facts", "triage.rules.engine.pools", "triage.rules.next.discriminate",
                  "triage.rules.next.suggest",
                  "triage.rules.decisions.conditions", "triage.rules.decisions.readings",
                  "triage.rules.language.configcheck")


def _ready() -> None:
    """Import :data:`SHARED_MODULES` (those already imported cost a lookup)."""
    import importlib

    for name in SHARED_MODULES:
        importlib.import_module(name)


def _work(url: str, iid: str, configs: list[str], flags: mmap.mmap, full: bool) -> list:
    """The helper's part: work ahead from a read-only snapshot; the pieces worked out."""
    from sqlalchemy.orm import Session

    from triage.kb import pieces, snapshot
    from triage.kb.db import read_engine
    from triage.kb.investigations import find_investigation, load_bundle
    from triage.kb.runsource import DbSource
    from triage.rules.engine.evaluate import letting_go, work_ahead

    with Session(read_engine(url)) as s:  # the investigation's row read as columns, as this process's is
        bundle = load_bundle(s, find_investigation(s, ident=iid), runs=False)
        bundle.source = DbSource(s, iid)
        memo = pieces.load(s, iid, snapshot.code_stamp(), full=full)
        units = _Units(bundle, configs, flags)
        memo.claim = units.claim(_HELPERS)
        taken = units.take(range(len(units.units)), _HELPERS, bisects=True)
        work_ahead(bundle, memo, letting_go(taken, bundle.source.forget))
        # in the session that read the pieces: their long texts left unread are read in it
        return [memo.key, {name: pieces.plain(name, memo.pieces[name]) for name in memo.worked}]
