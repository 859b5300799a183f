"""Runs for the engine from the knowledge base, a config at a time (see ``triage.rules.engine.source``).

Each config's fingerprint is its runs' count, largest key, newest write and
the sum of their write times (``updated_at``, which every write of a run
sets), as every writer of runs keeps them (:mod:`triage.kb.configruns`):
one small read gives them all, without an index entry per run.  The sum
sees a run written with an earlier time than the newest (a runner whose
clock is behind, an older record imported), which the newest write alone
would not.
"""

from __future__ import annotations

import heapq
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator, Optional

from sqlalchemy import and_, func, select, tuple_
from sqlalchemy.orm import Session

from triage.kb import configruns
from triage.kb import tables
from triage.kb.investigations import (MARKS, READ_SQL_COLUMNS, ReadShared, plain_reads, read_columns, run_records,
                                      runs_of_rows)
from triage.rules.engine.records import RunRec
from triage.rules.engine.source import Token, config_and_keys, digest


#: Runs read by their keys (:meth:`DbSource.newest`) in one statement at most.
KEYS_A_STATEMENT = 10_000
#: Configs asked what was added to them, from which the runs recorded since the stored pieces
#: are read once for all (:meth:`DbSource.recorded_since`), and how many such runs at most.
RECENT_AFTER, RECENT_MOST = 8, 20_000


class DbSource:
    def __init__(self, s: Session, iid: str) -> None:
        self._s, self._iid = s, iid
        # the run table once, for every statement of this source: one expression kept (``_times``)
        # and the table of a later statement are then always the same table (triage.kb.tables)
        self._t = tables.Run
        self._times = configruns.times_sum(s, self._t.c.updated_at)
        rows = configruns.stored(s, iid)  # by each config's first run
        self._configs = [config for config, *_ in rows]
        self._fps = {config: f"{n}:{top}:{newest}:{times!r}" for config, _, n, top, newest, times in rows}
        self._now = {config: (n, times) for config, _, n, _, _, times in rows}  # count and sum of write times
        self._tops: dict[tuple[str, str], Optional[int]] = {}  # (config, fingerprint) -> _since
        self._last: Optional[int] = None  # the largest key of any run (SQLite's, for _above)
        self._stored_fps: Optional[Callable[[], Iterable[str]]] = None  # what the stored pieces read (recorded_since)
        self._floor: Optional[int] = None  # the largest key among them, worked out when first needed
        self._asked = 0  # configs asked what was added to them
        # the runs recorded after the floor, by config: each one's key and write time in ms (None:
        # not read yet; False: more than RECENT_MOST), and those runs whole, read when asked for
        self._recent: Any = None
        self._recent_runs: Optional[dict[str, list[RunRec]]] = None
        self._from_recent: set[tuple[str, str]] = set()  # (config, fingerprint) told by them
        self._by_config: dict[str, list[RunRec]] = {}
        self._keyed: dict[str, dict[str, RunRec]] = {}  # a config read whole: its runs by run id
        self._by_id: dict[str, list[RunRec]] = {}
        self._id_fps: dict[str, str] = {}
        self._all_by_id: Optional[dict[str, list[RunRec]]] = None  # the runs of _all by run id
        self._all: Optional[list[RunRec]] = None
        # what its reads decoded, shared by the runs of the next ones (an evaluation that lets each
        # config's runs go too: the runs of a nightly's matrix share a provenance across configs)
        self._shared = ReadShared()

    def all(self) -> list[RunRec]:
        if self._all is None:
            if all(c in self._by_config for c in self._configs):  # every config read already: the same runs
                self._all = list(heapq.merge(*(self._by_config[c] for c in self._configs), key=self.order))
            else:
                self._all = run_records(self._s, self._iid, shared=self._shared)
                grouped: dict[str, list[RunRec]] = {}
                for r in self._all:
                    grouped.setdefault(r.config, []).append(r)
                self._by_config = grouped  # the same runs, whichever way they are asked for
        return self._all

    def release(self) -> None:
        """Let go of every run read so far (a later question reads them again): an
        evaluation whose caller builds nothing more from them stores its pieces
        without holding a hundred thousand runs as well."""
        self._by_config, self._keyed, self._by_id = {}, {}, {}
        self._all_by_id = self._all = self._recent_runs = None
        self._shared = ReadShared()

    def forget(self, config: str) -> None:
        """Let go of a config's runs (asked for again, they are read again)."""
        self._by_config.pop(config, None)
        self._keyed.pop(config, None)

    def config(self, name: str) -> list[RunRec]:
        runs = self._by_config.get(name)
        if runs is None:
            runs = run_records(self._s, self._iid, config=name, shared=self._shared) if name in self._fps else []
            self._by_config[name] = runs
        return runs

    def read_ahead(self, configs: list[str]) -> None:
        """Read the runs of these configs (those not read yet), for the pieces about to ask
        for them one config at a time: a statement a config where :func:`run_records` writes
        its own (a config's runs are then read by its index, and made one after another in
        memory, where the pieces go through them), else one for many configs."""
        wanted = sorted({c for c in configs if c in self._fps and c not in self._by_config})
        if len(wanted) < 2:
            return
        if plain_reads(self._s):
            for config in wanted:
                self._by_config[config] = run_records(self._s, self._iid, config=config, shared=self._shared)
            return
        grouped: dict[str, list[RunRec]] = {c: [] for c in wanted}
        for i in range(0, len(wanted), 500):  # 500 parameters a query
            chunk = wanted[i:i + 500]
            for r in run_records(self._s, self._iid, where=lambda t: t.c.config.in_(chunk), shared=self._shared):
                grouped[r.config].append(r)  # in the order recorded, as each config's own read
        self._by_config.update(grouped)

    def run_id(self, run_id: str) -> list[RunRec]:
        runs = self._by_id.get(run_id)
        if runs is None:
            if self._all is not None:  # every run at hand: index them by run id, once
                if self._all_by_id is None:
                    self._all_by_id = {}
                    for r in self._all:
                        self._all_by_id.setdefault(r.run_id, []).append(r)
                return self._all_by_id.get(run_id, [])
            runs = run_records(self._s, self._iid, run_id=run_id, shared=self._shared)
            self._by_id[run_id] = runs
        return runs

    def configs(self) -> list[str]:
        return self._configs

    # -- for a view that shows a few runs of many -------------------------
    def by_keys(self, pairs: list[tuple[str, str]]) -> list[RunRec]:
        """The runs of these (run id, config) pairs, in the order recorded.  Each pair is
        asked for as it is, not every run of its run id (the runs of a matrix share one
        and would be read and decoded only to be left out)."""
        wanted, out = self._at_hand(sorted(set(pairs)))
        for rows in self._pairs_rows(wanted, READ_SQL_COLUMNS, read_columns):
            out += runs_of_rows(rows, self._shared)
        return sorted(out, key=self.order)

    def refs_by_keys(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str, Optional[str]]]:
        """(run id, config, URL) of the runs of these pairs, in the order recorded (as
        :meth:`by_keys` gives them): what a view names a run by, without reading and decoding
        the rest of it (a report names the first runs behind each of thousands of pieces of
        evidence)."""
        wanted, found = self._at_hand(sorted(set(pairs)))
        out = [(r.seq, r.run_id, r.config, r.url) for r in found]
        for rows in self._pairs_rows(wanted, "pk, run_id, config, url",
                                     lambda t: [t.c.pk, t.c.run_id, t.c.config, t.c.url]):
            for batch in rows:
                out += batch
        out.sort(key=itemgetter(0))  # in the order recorded
        return [(run_id, config, url) for _, run_id, config, url in out]

    def _pairs_rows(self, wanted: list[tuple[str, str]], columns: str, cols: Any) -> Iterator[Any]:
        """For each chunk of (run id, config) pairs, the rows of their runs with ``columns``
        (``cols(table)``: the same as SQLAlchemy columns), in batches of plain tuples."""
        conn = self._s.connection()
        mark = MARKS.get(conn.dialect.paramstyle)
        for i in range(0, len(wanted), 2000):  # through the unique index; 6,000 parameters a query at most
            chunk = wanted[i:i + 2000]
            if mark is None:  # a driver of another parameter style: as SQLAlchemy writes it
                ids = sorted({run_id for run_id, _ in chunk})
                t = self._t
                q = select(*cols(t)).where(t.c.investigation_id == self._iid, t.c.run_id.in_(ids),
                                           tuple_(t.c.run_id, t.c.config).in_(chunk))
                yield [[tuple(row) for row in self._s.execute(q)]]
                continue
            # The statement written here: SQLAlchemy would spell out 6,000 parameters of
            # an expanding IN in Python, each time (a third of the time this takes).
            result = conn.exec_driver_sql(*_pairs_statement(conn.dialect.name, mark, columns, self._iid, chunk))
            try:
                cursor = result.cursor
                yield iter(lambda: cursor.fetchmany(10_000), [])
            finally:
                result.close()

    def _at_hand(self, pairs: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[RunRec]]:
        """The pairs of configs not read whole yet, and the runs of those that were (an
        evaluation that worked pieces out again read their configs): no query for them."""
        rest: list[tuple[str, str]] = []
        found: list[RunRec] = []
        for run_id, config in pairs:
            runs = self._by_config.get(config)
            if runs is None:
                rest.append((run_id, config))
                continue
            by_id = self._keyed.get(config)
            if by_id is None:  # a run id is one run of a config (the run table's identity)
                by_id = self._keyed[config] = {r.run_id: r for r in runs}
            run = by_id.get(run_id)
            if run is not None:
                found.append(run)
        return rest, found

    def newest(self, limit: int) -> list[RunRec]:
        """The newest ``limit`` runs by time (none first, then as recorded), oldest first."""
        # newest first through the (investigation, time) index, then runs without a time
        conn = self._s.connection()
        mark = MARKS.get(conn.dialect.paramstyle)
        pks: list[int] = []
        for timed in (True, False):  # asked even when none are wanted: as many statements either way
            rest = max(0, int(limit) - len(pks))
            if mark is not None:  # written here: SQLAlchemy's building of the three took ten times their reading
                sql = (f"SELECT pk FROM run WHERE investigation_id = {mark} AND time IS NOT NULL"
                       f" ORDER BY time DESC, pk DESC LIMIT {rest}" if timed else
                       f"SELECT pk FROM run WHERE investigation_id = {mark} AND time IS NULL"
                       f" ORDER BY pk DESC LIMIT {rest}")
                pks += [pk for pk, in conn.exec_driver_sql(sql, (self._iid,))]
                continue
            t = self._t
            q = select(t.c.pk).where(t.c.investigation_id == self._iid,
                                     t.c.time.isnot(None) if timed else t.c.time.is_(None))
            q = q.order_by(t.c.time.desc(), t.c.pk.desc()) if timed else q.order_by(t.c.pk.desc())
            pks += [pk for pk, in self._s.execute(q.limit(rest))]
        # a statement per KEYS_A_STATEMENT keys: a drivers' limit on parameters (PostgreSQL's 65,535)
        # is no limit on how many runs a view shows
        runs = [r for i in range(0, len(pks), KEYS_A_STATEMENT)
                for r in run_records(self._s, self._iid, pks=pks[i:i + KEYS_A_STATEMENT], shared=self._shared)]
        order = {pk: i for i, pk in enumerate(reversed(pks))}
        return sorted(runs, key=lambda r: order[r.seq])

    def appended(self, config: str, fingerprint: str) -> Optional[list[RunRec]]:
        """The runs recorded since the config's runs had ``fingerprint``: those with a
        larger key, when no run before them was written again or deleted."""
        top = self._since(config, fingerprint)
        if top is None:
            return None
        if (config, fingerprint) in self._from_recent:  # every run of the config recorded since
            if self._recent_runs is None:
                self._recent_runs = {}
                for r in run_records(self._s, self._iid, where=lambda t: and_(*self._after(self._floor, t)),
                                     shared=self._shared, owned=True):
                    self._recent_runs.setdefault(r.config, []).append(r)
            return list(self._recent_runs.get(config, ()))
        return run_records(self._s, self._iid, where=lambda t: and_(*self._above(config, top, t)),
                           shared=self._shared, owned=True)

    def recorded_since(self, fingerprints: Callable[[], Iterable[str]]) -> None:
        """The fingerprints of the configs the stored pieces read (``fingerprints()``, asked for
        when needed): the runs recorded after the largest key among them (every run written
        since those pieces) are read in one statement, once :data:`RECENT_AFTER` configs were
        asked what was added to them (after an import of a nightly's runs over hundreds of
        configs, each config's own statement went through every run recorded since: the
        product of the two)."""
        self._stored_fps = fingerprints

    def _since(self, config: str, fingerprint: str) -> Optional[int]:
        """The largest key of the config's runs when they had ``fingerprint``
        (``count:largest key:newest write:sum of write times``), if the runs since
        are only new ones: the runs with a larger key make up the count and the sum
        of write times; else None."""
        if config not in self._fps:
            return None
        if (config, fingerprint) in self._tops:
            return self._tops[config, fingerprint]
        self._tops[config, fingerprint] = top = self._work_out_since(config, fingerprint)
        return top

    def _work_out_since(self, config: str, fingerprint: str) -> Optional[int]:
        count, top, was = 0, 0, 0
        if fingerprint:
            head, _, times = fingerprint.rpartition(":")
            count_text, top_text, _ = head.split(":", 2)
            count, top, was = int(count_text), int(top_text), int(times)
        now_count, now_times = self._now[config]
        self._asked += 1
        recent = self._recent_runs_read()
        if recent and top <= self._floor:  # the runs recorded since the pieces: this config's, if all it was added
            mine = recent.get(config, ())
            if count + len(mine) == now_count and was + sum(ms for _, ms in mine) == now_times:
                self._from_recent.add((config, fingerprint))
                return top
        q = select(func.count(), self._times).where(*self._above(config, top))
        added, added_times = self._s.execute(q).one()
        # whole milliseconds: an int, or PostgreSQL's numeric of one (an exact int())
        if count + added != now_count or was + int(added_times or 0) != now_times:
            return None
        return top

    def _recent_runs_read(self) -> Optional[dict[str, list[tuple[int, int]]]]:
        """The runs recorded after the floor (:meth:`recorded_since`), by config, as their keys and
        write times in milliseconds, once :data:`RECENT_AFTER` configs were asked about (None:
        not yet, or more than :data:`RECENT_MOST` runs)."""
        if self._recent is None and self._asked >= RECENT_AFTER and self._stored_fps is not None:
            self._floor = max((int(fp.split(":", 2)[1]) for fp in self._stored_fps() if fp), default=None)
            if self._floor is None:
                self._recent = False
                return None
            t = self._t
            q = select(t.c.pk, t.c.config, configruns.millis(self._s, t.c.updated_at)).where(*self._after(self._floor))
            rows = self._s.execute(q.order_by(t.c.pk).limit(RECENT_MOST + 1)).all()
            self._recent = False
            if len(rows) <= RECENT_MOST:
                self._recent = {}
                for pk, config, ms in rows:  # whole milliseconds: an int, or PostgreSQL's numeric of one
                    self._recent.setdefault(config, []).append((pk, int(ms)))
        return self._recent or None

    def _after(self, top: Any, t: Any = None) -> list:
        """The conditions that select the investigation's runs with a key above ``top``, by key (on
        SQLite, through an index of the investigation's, every run would be gone through)."""
        t = self._t if t is None else t
        if self._s.get_bind().dialect.name == "sqlite":
            return [t.c.pk > top, t.c.investigation_id + "" == self._iid]
        return [t.c.investigation_id == self._iid, t.c.pk > top]

    def _above(self, config: str, top: int, t: Any = None) -> list:
        """The conditions that select the config's runs with a key above ``top`` (those recorded
        since).  The config's index, (investigation, config, write time), cannot range over the
        keys: through it, each of the config's runs is gone through (82,000 of the base of a wide
        investigation at a million runs, for the one or two added).  On SQLite, when fewer runs
        of all were recorded after ``top`` than the config holds, those are gone through instead,
        by key: the index is kept off (SQLite's planner knows nothing of how many runs a config
        has).  PostgreSQL's planner weighs the two itself.  ``t``: the run table the statement
        reads (default: this source's)."""
        t = self._t if t is None else t
        if self._s.get_bind().dialect.name == "sqlite":
            if self._last is None:
                self._last = self._s.execute(select(func.max(t.c.pk))).scalar() or 0
            if self._last - top < self.size(config):
                return [t.c.pk > top, t.c.investigation_id + "" == self._iid, t.c.config + "" == config]
        return [t.c.investigation_id == self._iid, t.c.config == config, t.c.pk > top]

    def size(self, config: str) -> int:
        """How many runs a config holds (0 for none)."""
        return self._now.get(config, (0, 0))[0]

    def count(self) -> int:
        return sum(int(fp.split(":", 1)[0]) for fp in self._fps.values())

    def order(self, run: RunRec) -> int:
        return run.seq

    def fingerprint(self, token: Token) -> str:
        kind, name = token
        if kind == "c":
            return self._fps.get(name, "")
        if kind == "*":
            return digest(sorted(self._fps.items()))
        if kind == "p":  # a config's runs that recorded these provenance keys: its config's
            # fingerprint, while which they hold; after it, whether only runs without the keys
            # were added is asked (``holds``), not what the runs with them are (a statement that
            # took every run of the config apart: 14 ms for a base of 9,000 runs, 0.14 s at a
            # million, for each bisect of a whole evaluation)
            config, _ = config_and_keys(token)
            return f"{self._fps[config]}|" if config in self._fps else ""
        fp = self._id_fps.get(token[0] + name)
        if fp is None:
            t = self._t
            q = (select(func.count(), func.max(t.c.pk), func.max(t.c.updated_at), self._times)
                 .where(t.c.investigation_id == self._iid, t.c.run_id == name))
            n, top, newest, times = self._s.execute(q).one()
            fp = f"{n}:{top}:{newest}:{times!r}" if n else ""
            self._id_fps[token[0] + name] = fp
        return fp

    def holds(self, token: Token, fingerprint: str) -> bool:
        """Whether the runs ``token`` names still have ``fingerprint``.  The runs of a
        config that recorded some provenance keys are among the config's runs: while
        the config's fingerprint is the one they were read with, they are as they were,
        without a query; after runs were only added to it, as long as none of those
        recorded the keys.  Any other change to the config's runs (one excluded, written
        again) is taken for a change to them: what read them is worked out again."""
        if token[0] == "p" and "|" in fingerprint:
            config, keys = config_and_keys(token)
            was = fingerprint.partition("|")[0]
            if was == self._fps.get(config):
                return True
            top = self._since(config, was)
            if top is None:
                return False
            t = self._t  # only new runs since: unchanged unless one of them recorded the keys
            q = select(func.count()).where(*self._above(config, top),
                                           *(t.c.provenance[k].as_string().isnot(None) for k in keys))
            return self._s.execute(q).scalar() == 0
        return self.fingerprint(token) == fingerprint

    def __repr__(self) -> Any:
        return f"DbSource({self._iid!r}, {len(self._configs)} configs)"


def _pairs_statement(dialect: str, mark: str, columns: str, iid: str, chunk: list[tuple[str, str]]) -> tuple:
    """The statement, and its parameters, that reads ``columns`` of the runs of these (run id,
    config) pairs of ``iid``.  On SQLite, the pairs joined to the runs: each looked up in the
    unique index by itself (through the run ids, each run id's runs of every config were read to
    keep a few, a nightly's matrix: twice as long).  Elsewhere, through the run ids: PostgreSQL
    hashes a join with the pairs against every run of the investigation, a scan that grows with
    it, where the run ids go through the unique index."""
    pairs = [x for pair in chunk for x in pair]
    values = ", ".join([f"({mark}, {mark})"] * len(chunk))
    if dialect == "sqlite":
        return (f"SELECT {columns} FROM (VALUES {values}) AS wanted JOIN run ON run.investigation_id = {mark}"
                f" AND run.run_id = wanted.column1 AND run.config = wanted.column2", (*pairs, iid))
    ids = sorted({run_id for run_id, _ in chunk})
    return (f"SELECT {columns} FROM run WHERE investigation_id = {mark} AND run_id IN ({', '.join([mark] * len(ids))})"
            f" AND (run_id, config) IN (VALUES {values})", (iid, *ids, *pairs))
