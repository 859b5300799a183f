"""What one config's runs say, worked out once per config and kept while its runs are unchanged.

Everything the evaluation needs of every run (which runs decide nothing and
why, repeats that disagree, values that are not proportions, where each
recipe stands, how many attempts in a row gave no result) is read per config
here, so that an evaluation after one new run reads that run's config and
the stored facts of the others (:mod:`triage.rules.engine.memo`).  Entries that are
merged across configs carry the place of their first run in the order
recorded, so that merged they read as one pass over every run would.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from triage.rules.engine import summary
from triage.rules.engine.context import Context, _run_order
from triage.rules.engine.keys import Invalid, Keys
from triage.rules.engine.lazy import Lazy
from triage.rules.engine.memo import Codec
from triage.rules.engine.packed import Packed, packed
from triage.rules.decisions.readings import ALL_VALID, Group, group_key, repeat_groups, repeat_warnings
from triage.rules.engine.records import RunRec


@dataclass(frozen=True)
class ConfigFacts:
    config: str
    keys: Sequence[str] = ()  # its runs' keys, oldest first (by time, then as recorded); read back as Keys
    valid: Sequence[str] = ()  # those that can decide something, in the same order
    newest_why: str = ""  # why the newest run decides nothing ("" when it is valid)
    newest_blocker: str = ""  # its known failure that a plain re-run will not fix
    trailing_invalid: int = 0  # newest runs in a row that decided nothing
    valid_metrics: tuple[str, ...] = ()  # the metrics some valid run records
    valid_ns: tuple[int, ...] = ()  # the sample counts of the primary metric in valid runs
    invalid: Sequence[tuple[int, str, str]] = ()  # (order, key, why in brief) of each run that decides nothing
    inconclusive: tuple[tuple[int, str], ...] = ()  # (order of the first, warning) per reason runs decide nothing
    repeats: tuple[tuple[int, str], ...] = ()  # (order of the first, warning) per group of disagreeing repeats
    unscaled: tuple[tuple[str, tuple[int, int, float, int]], ...] = ()  # see Context.unscaled
    # the valid runs' distinct provenances, in the order of each one's first valid run as recorded
    provenances: tuple[tuple[tuple[str, str], ...], ...] = ()
    # per valid run (as in ``valid``), its provenance's place there; read back as Packed
    valid_provenance: Sequence[int] = ()
    # What a new run updates the facts from (:func:`updated`), without the config's other runs:
    said: tuple[tuple[str, int, int, tuple[str, ...]], ...] = ()  # per reason: (it, first's order, count, first ids)
    groups: tuple[Group, ...] = ()  # repeats by provenance (triage.rules.decisions.readings.repeat_groups)
    newest_time: str = ""  # the newest run's time ("" for none)
    untimed: int = 0  # runs without a time (the oldest, in the order recorded)
    untimed_valid: int = 0  # those of them that can decide something
    # the provenance of the newest valid run (``valid[-1]``): what a recipe's runs are compared
    # with, read without looking into ``provenances`` (kept apart, one per run in a wide base)
    newest_provenance: tuple[tuple[str, str], ...] = ()


def config_facts(config: str, ctx: Context) -> ConfigFacts:
    from triage.rules.next.suggest import _blocker

    runs: Sequence[RunRec] = ctx.by_config.get(config, [])
    if not runs:
        return ConfigFacts(config)
    reason = ctx.invalid_reason
    # One pass in the order recorded: why each run that decides nothing does not (once per
    # run: everything below reads it), and the others.  The valid runs of the sort of them
    # all by time, in its order, are what a stable sort of the valid ones alone gives.
    why: dict[int, str] = {}
    invalid: list[RunRec] = []
    valid_recorded: list[RunRec] = []
    untimed = 0
    for r in runs:
        w = reason(r)
        if w is None:
            valid_recorded.append(r)
        else:
            why[id(r)] = w
            invalid.append(r)
        if not r.time:
            untimed += 1
    ordered = sorted(runs, key=_run_order if untimed else _time)  # every run timed: its time, read in C
    valid = ordered if not invalid else [r for r in ordered if id(r) not in why]  # that sort's valid runs
    brief = {id(r): reason(r, brief=True) or "" for r in invalid}
    newest = ordered[-1]
    newest_invalid = id(newest) in why
    metric = ctx.spec.metric
    provenances: dict[tuple[tuple[str, str], ...], int] = {}
    place_of: dict[int, int] = {}  # id of a provenance mapping (runs that recorded the same share one) -> its place
    firsts: list[Mapping[str, str]] = []  # each distinct provenance as the first valid run recorded it
    metrics: set[str] = set()
    ns: set[int] = set()
    untimed_valid = 0
    # each distinct provenance's place: the order of its first valid run as recorded (a run
    # added later is recorded after them all: its provenance, if new, goes last)
    for r in valid_recorded:
        if id(r.provenance) not in place_of:
            place = place_of[id(r.provenance)] = provenances.setdefault(tuple(r.provenance.items()), len(provenances))
            if place == len(firsts):
                firsts.append(r.provenance)
        mm = r.metrics
        metrics.update(mm)
        if metric in mm and (n := mm[metric][1]):
            ns.add(n)
        if not r.time:
            untimed_valid += 1
    valid_provenance = list(map(place_of.__getitem__, map(id, map(_provenance_of, valid))))
    said: dict[str, list] = {}  # reason -> [first's order, count, first ids]
    for r in invalid:
        _say(said, why[id(r)], r, ctx)
    groups = repeat_groups(valid_recorded, ctx, valid=ALL_VALID).get(config, {})
    return _made(
        config, ctx,
        keys=tuple(map(_key, ordered)),
        valid=tuple(map(_key, valid)),
        newest_why=brief[id(newest)] if newest_invalid else "",
        newest_blocker=_blocker(newest, ctx) if newest_invalid else "",
        trailing_invalid=_trailing(ordered, why),
        valid_metrics=tuple(sorted(metrics)),
        valid_ns=tuple(sorted(ns)),
        invalid=tuple((ctx.order(r), r.key, brief[id(r)]) for r in invalid),
        said=tuple((w, first, count, tuple(ids)) for w, (first, count, ids) in said.items()),
        groups=tuple(groups.values()),
        unscaled=tuple(ctx.unscaled(runs).items()),
        provenances=_listed(tuple(provenances), firsts),
        valid_provenance=tuple(valid_provenance),
        newest_time=newest.time or "",
        untimed=untimed,
        untimed_valid=untimed_valid,
        newest_provenance=tuple(valid[-1].provenance.items()) if valid else (),
    )


_key, _time, _provenance_of = attrgetter("key"), attrgetter("time"), attrgetter("provenance")


def _listed(provenances: tuple, mappings: list[Mapping[str, str]]) -> Lazy:
    """A config's distinct provenances (pairs in order), with the JSON text they are stored as,
    written from the runs' own mappings (:func:`_encode`: a mapping made of each again cost a
    wide investigation's whole evaluation a twentieth of its facts' time)."""
    from msgspec.json import encode

    if not all(type(m) is dict for m in mappings):  # (a run given by hand may hold another mapping)
        mappings = [dict(m) for m in mappings]
    return Lazy(encode(mappings).decode(), _provenance, provenances)


def _say(said: dict[str, list], why: str, run: RunRec, ctx: Context) -> None:
    """Count a run that decides nothing under its reason: [first's order, count, first ids]."""
    entry = said.get(why)
    if entry is None:
        said[why] = [ctx.order(run), 1, [run.run_id]]
    else:
        entry[1] += 1
        if len(entry[2]) < summary.NAMED:
            entry[2].append(run.run_id)


def _trailing(ordered: Sequence[RunRec], why: dict) -> int:
    """The newest runs in a row that decided nothing (``why``: by id, those that decide
    nothing): newest time first, runs of one time in the order recorded (as a stable sort
    newest first walks them)."""
    count, end = 0, len(ordered)
    while end:
        start = end - 1
        when = ordered[start].time or ""
        while start and (ordered[start - 1].time or "") == when:
            start -= 1
        for r in ordered[start:end]:
            if id(r) not in why:
                return count
            count += 1
        end = start
    return count


def _made(config: str, ctx: Context, was: Optional[ConfigFacts] = None, changed: Optional[dict] = None,
          **fields: Any) -> ConfigFacts:
    """The facts, with the warnings that follow from them (``was``: facts whose groups of
    repeats, where unchanged, say what they said; ``changed``: those of its groups that
    changed or are new, by provenance, when the caller knows them without going through all)."""
    said, groups = fields["said"], fields["groups"]
    if was is None:
        repeats = [(order, w.message) for order, w in repeat_warnings(config, {g[0]: g for g in groups}, ctx)]
    elif changed is not None:  # a group's warning carries the place of its first run, and the
        # groups are in the order of their first runs: the unchanged ones' said as they were
        said_now = dict(was.repeats)
        fresh = dict((order, w.message) for order, w in repeat_warnings(config, changed, ctx))
        for g in changed.values():
            said_now.pop(g[1], None)
        said_now.update(fresh)
        repeats = sorted(said_now.items())
    else:  # a group's warning carries the place of its first run: one per group
        before, said_before = set(was.groups), dict(was.repeats)
        changed = {g[0]: g for g in groups if g not in before}
        fresh = dict((order, w.message) for order, w in repeat_warnings(config, changed, ctx))
        repeats = [(g[1], text) for g in groups
                   if (text := (fresh.get(g[1]) if g[0] in changed else said_before.get(g[1]))) is not None]
    return ConfigFacts(
        config, **fields,
        inconclusive=tuple((first, f"{summary.head_of(count, ids, config, ctx.short)}: {w}")
                           for w, first, count, ids in said),
        repeats=tuple(repeats),
    )


def updated(old: ConfigFacts, new: Sequence[RunRec], ctx: Context) -> Optional[ConfigFacts]:
    """``old`` with runs recorded after it (in the order recorded), or None when one of
    them is neither newer than every run before it nor without a time (the facts
    then come from all the config's runs): what an evaluation after ``add-run``
    does instead of reading the config's thousands of runs again."""
    from triage.rules.next.suggest import _blocker

    metric = ctx.spec.metric
    keys, valid = _Growing(old.keys), _Growing(old.valid)
    valid_provenance = list(old.valid_provenance)
    # the places are in the order of each provenance's first valid run as recorded: a new run's
    # provenance is one of them, or the next (the runs added are recorded after the others)
    provenances = _Distinct(old.provenances, valid_provenance)
    invalid: list[tuple[int, str, str]] = []  # after the old ones, in the order recorded
    said = {w: [first, count, list(ids)] for w, first, count, ids in old.said}
    grown = _Groups(old.groups, old.config, ctx) if isinstance(old.groups, Lazy) and not old.groups.decoded else None
    groups = {old.config: {g[0]: g for g in old.groups}} if grown is None else {}
    unscaled = dict(old.unscaled)
    metrics, ns = set(old.valid_metrics), set(old.valid_ns)
    newest_time, newest_why, newest_blocker = old.newest_time, old.newest_why, old.newest_blocker
    trailing, untimed, untimed_valid = old.trailing_invalid, old.untimed, old.untimed_valid
    newest_provenance = old.newest_provenance
    for r in new:
        when = r.time or ""
        why = ctx.invalid_reason(r)
        ok = why is None
        n = len(keys)
        if when and (n == 0 or when > newest_time):  # the newest run of all
            pos, vpos = n, len(valid)
            trailing = 0 if ok else trailing + 1
        elif not when:  # without a time: after the others without one, oldest of the rest
            pos, vpos = untimed, untimed_valid
            if trailing == n and not ok:  # the walk back from the newest reaches it
                trailing += 1
            untimed, untimed_valid = untimed + 1, untimed_valid + ok
        else:
            return None
        keys.insert(pos, r.key)
        if pos == n:
            newest_time = when
            newest_why = "" if ok else ctx.invalid_reason(r, brief=True) or ""
            newest_blocker = "" if ok else _blocker(r, ctx)
        if ok:
            valid.insert(vpos, r.key)
            metrics.update(r.metrics)
            if metric in r.metrics and r.metrics[metric][1]:
                ns.add(r.metrics[metric][1])
            prov = tuple(r.provenance.items())
            # a repeat of the newest valid run's provenance (a re-run of the same build) takes its
            # place, without a look into the distinct ones (one per run where each records its own sha)
            place = valid_provenance[-1] if valid_provenance and prov == newest_provenance else provenances.place(prov)
            valid_provenance.insert(vpos, place)
            if vpos == len(valid) - 1:  # the newest valid run now
                newest_provenance = prov
        else:
            invalid.append((ctx.order(r), r.key, ctx.invalid_reason(r, brief=True) or ""))
            _say(said, why, r, ctx)
        if grown is not None:
            grown.add(r, ok)
        else:
            repeat_groups([r], ctx, valid=lambda _: ok, into=groups)
        for name, first in ctx.unscaled([r]).items():
            unscaled.setdefault(name, first)
    changed, grouped = grown.done() if grown is not None else (None, tuple(groups.get(old.config, {}).values()))
    return _made(
        old.config, ctx, old, changed,
        keys=keys.done(), valid=valid.done(), newest_why=newest_why, newest_blocker=newest_blocker,
        trailing_invalid=trailing, valid_metrics=tuple(sorted(metrics)), valid_ns=tuple(sorted(ns)),
        invalid=(old.invalid if isinstance(old.invalid, Invalid) else Invalid.of(old.invalid)).appended(invalid),
        said=tuple((w, first, count, tuple(ids)) for w, (first, count, ids) in said.items()),
        groups=grouped, unscaled=tuple(unscaled.items()),
        provenances=provenances.done(), valid_provenance=tuple(valid_provenance),
        newest_time=newest_time, untimed=untimed, untimed_valid=untimed_valid,
        newest_provenance=newest_provenance,
    )


class _Groups:
    """A config's groups of repeats while runs are added to them, the stored list not decoded:
    a new run's group is found among the stored groups' JSON texts (each starts with its
    provenance, as :func:`_encode` writes it), and changed or added there.  The base of a wide
    investigation at a million runs has 21,000 groups; an add-run changes one."""

    def __init__(self, old: Lazy, config: str, ctx: Context) -> None:
        self.old, self.config, self.ctx = old, config, ctx
        self.ignore = set(ctx.spec.ignore_provenance)
        self.raws: Optional[list] = None  # the stored groups' texts, read when a run has a group
        self.text = b""  # the stored list's text, and where each group's starts in it (with raws)
        self.starts: list[int] = []
        self.into: dict[str, dict] = {config: {}}  # the groups of the runs added, as they grow
        self.place: dict[tuple, Optional[int]] = {}  # their provenance -> their place among the stored (None: new)

    def add(self, run: RunRec, ok: bool) -> None:
        """Put ``run`` (``ok``: it decides something) in its group, as :func:`repeat_groups` would."""
        if not ok or self.ctx.spec.metric not in run.metrics:
            return
        prov = group_key(run.provenance, self.ignore)
        if prov not in self.place:
            self.place[prov] = at = self._find(prov)
            if at is not None:
                from msgspec.json import decode

                self.into[self.config][prov] = _group(decode(bytes(self.raws[at])))  # type: ignore[index]
        repeat_groups([run], self.ctx, valid=ALL_VALID, into=self.into)

    def _find(self, prov: tuple) -> Optional[int]:
        """The place among the stored groups of the one of provenance ``prov`` (None: none is).
        Its text is looked for in the stored list's, then its place is told by where each
        group's text starts (a group's text starts with its provenance's, which holds a quote
        only escaped inside a text: it stands nowhere else); a list stored in another layout
        is gone through a group at a time."""
        from bisect import bisect_left
        from itertools import accumulate

        from msgspec.json import encode

        head = b"[" + encode(dict(prov)) + b","
        if self.raws is None:
            if head.decode() not in self.old.text:  # a group holds its own text: no group is it
                return None
            self.raws = self.old.raws()
            self.text = self.old.text.encode()
            # where each group's text starts in the list's, written without spaces: after "[" or ","
            self.starts = list(accumulate((len(raw) + 1 for raw in self.raws[:-1]), initial=1))
        n = len(head)
        at = self.text.find(head)
        if at < 0:
            return None
        i = bisect_left(self.starts, at)
        if i < len(self.raws) and self.starts[i] == at and memoryview(self.raws[i])[:n] == head:
            return i
        for i, raw in enumerate(self.raws):
            if memoryview(raw)[:n] == head:
                return i
        return None

    def done(self) -> tuple[dict, Sequence[Group]]:
        """The groups changed or added, by provenance, and every group: the stored text with
        the changed ones in their places and the new ones after them."""
        from msgspec.json import encode

        mine = self.into[self.config]
        if not mine:
            return {}, self.old
        added, changed = [], []
        for prov, g in list(mine.items()):
            row = encode(_row(g)).decode()
            at = self.place[prov]
            if at is None:
                added.append(row)
            elif (was := bytes(self.raws[at]).decode()) == row:  # type: ignore[index]
                del mine[prov]  # a repeat within the group's lowest and highest: as it was
            else:
                changed.append((was, row))
        if not mine:
            return {}, self.old
        text = self.old.text
        for was, row in changed:
            text = text.replace(was, row, 1)
        if added:
            text = (text[:-1] + "," if text != "[]" else "[") + ",".join(added) + "]"
        return mine, Lazy(text, _group)


class _Distinct:
    """A config's distinct provenances while runs are added to them: a stored list not
    decoded yet is searched as its items' JSON texts, and grown as text (a config whose
    every run records its own sha has as many as runs).  The text itself is looked into
    first: a provenance it does not hold is new (a run of a new build), one it starts with is
    the first, one it ends with the last; only another is looked for item by item."""

    def __init__(self, old: Sequence[tuple], places: Sequence[int]) -> None:
        self.lazy = isinstance(old, Lazy) and not old.decoded
        self.old = old
        # how many ``old`` holds, known without decoding it: each is some valid run's
        # provenance (``places``: the valid runs'), as many as the highest place and one
        self.count = max(places, default=-1) + 1 if self.lazy else len(old)
        self._items: Optional[list] = None  # read when a valid run's provenance is neither
        self.added: list[tuple] = []

    @property
    def items(self) -> list:
        if self._items is None:
            if self.lazy:
                from msgspec import Raw
                from msgspec.json import encode

                self._items = self.old.raws() + [Raw(encode(dict(p))) for p in self.added]  # type: ignore[union-attr]
            else:
                self._items = list(self.old) + self.added
        return self._items

    def place(self, prov: tuple) -> int:
        """Where ``prov`` stands among them, added last if it is new."""
        if not self.lazy:
            want: Any = prov
        else:
            from msgspec import Raw
            from msgspec.json import encode

            raw = encode(dict(prov))
            if self._items is None:
                if prov in self.added:
                    return self.count + self.added.index(prov)
                text, mine = self.old.text, raw.decode()  # type: ignore[union-attr]
                if text.startswith(mine, 1):  # a whole JSON object: the first item is just it
                    return 0
                if text.endswith(mine + "]") and text[-len(mine) - 2] in ",[":  # the last item is just it
                    return self.count - 1
                if mine not in text:  # an item holds its own text: no item is it
                    self.added.append(prov)
                    return self.count + len(self.added) - 1
            want = Raw(raw)
        try:
            return self.items.index(want)
        except ValueError:
            self.items.append(want)
            self.added.append(prov)
            return self.count + len(self.added) - 1

    def done(self) -> Sequence[tuple]:
        """Every one, in place: the stored text with the new ones after it."""
        if not self.lazy:
            return tuple(self.items)
        if not self.added:
            return self.old  # as stored, read or not
        return self.old.appended([dict(p) for p in self.added])  # type: ignore[union-attr]


class _Growing:
    """A config's keys while runs are added to them: a few runs are put into the
    text where they go (the newest at its end, one without a time near its
    start), more split the keys once."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys: Optional[Keys] = Keys.of(keys)
        self.items: list[str] = []
        self.spliced = 0

    def __len__(self) -> int:
        return len(self.keys) if self.keys is not None else len(self.items)

    def insert(self, pos: int, key: str) -> None:
        if self.keys is not None and self.spliced < 8:
            self.spliced += 1
            grown = self.keys.inserted(pos, key)
            if grown is not None:
                self.keys = grown
                return
        if self.keys is not None:
            self.items, self.keys = list(self.keys), None
        self.items.insert(pos, key)

    def done(self) -> Sequence[str]:
        return self.keys if self.keys is not None else tuple(self.items)


def _encode(f: ConfigFacts) -> list:
    # The long lists (every run's key, every invalid run) as texts: read back, they are
    # split only if something goes through them (see triage.rules.engine.keys).
    inv = f.invalid if isinstance(f.invalid, Invalid) else Invalid.of(f.invalid)
    ids = lambda keys: _ids(keys, f.config)  # noqa: E731
    # every run's key and every valid run's: as the stored text, unread, if nothing read it
    suffix, keys, valid = f"/{f.config}", Keys.of(f.keys), Keys.of(f.valid)
    return [f.config, keys.stored_ids(suffix), valid.stored_ids(suffix), f.newest_why,
            f.newest_blocker, f.trailing_invalid,
            list(f.valid_metrics), list(f.valid_ns), [inv.orders, ids(inv.keys), inv.whys.text],
            [list(x) for x in f.inconclusive], [list(x) for x in f.repeats],
            [[name, list(first)] for name, first in f.unscaled],
            # a provenance as an object (its pairs in order), the list as one JSON text: one per
            # valid run when each records its own sha, read only by what looks into them
            _text(f.provenances, lambda: [dict(p) for p in f.provenances]), packed(f.valid_provenance),
            [[w, first, count, list(ids)] for w, first, count, ids in f.said],
            _text(f.groups, lambda: [_row(g) for g in f.groups]),
            f.newest_time, f.untimed, f.untimed_valid, [list(pair) for pair in f.newest_provenance],
            # how many of each, what the valid ones are and the newest of them: known without reading them
            len(keys), len(valid), valid.digest(), valid[-1] if valid else None]


def _text(value: Any, rows: Any) -> Any:
    """A long list as its JSON text: the text it was read back from, if it is that still; the
    function that reads that text, if nothing has read it (the stored text stands: an add-run
    of a run that decides nothing leaves a wide base's megabytes of provenances unread and
    unwritten, :func:`triage.kb.pieces.save`)."""
    from msgspec.json import encode

    return value.source if isinstance(value, Lazy) else encode(rows()).decode()


def _provenance(row: dict) -> tuple:
    return tuple(row.items())


def _row(g: Group) -> list:
    """A group of repeats as stored: its provenance as an object, then its first run's place,
    its lowest run and its highest."""
    prov, first, lo, hi = g
    return [dict(prov), first, *lo, *hi]


def _group(row: list) -> tuple:
    prov, first, lo_id, lo_v, lo_n, hi_id, hi_v, hi_n = row
    return tuple(prov.items()), first, (lo_id, lo_v, lo_n), (hi_id, hi_v, hi_n)


def _decode(row: Sequence[Any]) -> ConfigFacts:
    (config, keys, valid, newest_why, newest_blocker, trailing, metrics, ns, invalid, inconclusive, repeats,
     unscaled, provenances, valid_provenance, said, groups, newest_time, untimed, untimed_valid, newest_provenance,
     count, valid_count, valid_digest, newest_valid) = row
    orders, invalid_keys, whys = invalid
    return ConfigFacts(
        config, _keys(keys, config, count), _keys(valid, config, valid_count, valid_digest, newest_valid), newest_why,
        newest_blocker, trailing, tuple(metrics),
        tuple(ns), Invalid(orders, _keys(invalid_keys, config), Keys(whys)), tuple(map(tuple, inconclusive)),
        tuple(map(tuple, repeats)),
        tuple((name, tuple(first)) for name, first in unscaled),
        Lazy(provenances, _provenance), Packed(valid_provenance),
        tuple((w, first, count, tuple(ids)) for w, first, count, ids in said),
        Lazy(groups, _group), newest_time, untimed, untimed_valid, tuple(map(tuple, newest_provenance)))


def _ids(keys: Sequence[str], config: str) -> str:
    """A config's run keys (``id/config``) as their ids, joined: a third of the text to store."""
    return Keys.of(keys).ids(f"/{config}")


def _keys(ids: Union[str, Callable[[], str]], config: str, count: Optional[int] = None,
          digest: Optional[str] = None, last: Optional[str] = None) -> Keys:
    return Keys.suffixed(ids, f"/{config}", count, digest, last)


FACTS: Codec[ConfigFacts] = Codec(_encode, _decode)

#: The places in a config's encoded facts of its long texts, in groups: its distinct
#: provenances and its groups of repeats; every run's key and every valid run's.  Nine tenths
#: of a wide investigation's stored facts, which the knowledge base keeps apart, each group in
#: a row of its own, and reads when something looks into them (:mod:`triage.kb.apart`); the rest
#: is what an evaluation reads of every config.  An add-run looks into the keys of the config it
#: adds to and of those its rules and predictions pool, into the provenances of the first.
APART = {"f:": ((12, 15), (1, 2))}


def facts(config: str, ctx: Context) -> ConfigFacts:
    """A config's facts, from the memo when its runs are unchanged, updated from the
    runs recorded since when only runs were added."""
    return ctx.memo.piece(ctx, f"f:{config}", lambda: config_facts(config, ctx), FACTS,
                          update=lambda old, new: updated(old, new, ctx))
