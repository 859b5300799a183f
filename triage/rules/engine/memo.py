"""Incremental evaluation: pieces of an evaluation kept with what they read.

An evaluation is cut into pieces: each bisect, each rule, each recipe
prediction, each recipe's confounds, what each config's runs say
(:mod:`triage.rules.engine.facts`) and a config's runs pooled for a comparison
(:mod:`triage.rules.engine.pools`).  While a piece is worked out, the context notes
every run it reads (a config's runs, a run id's, all of them, a bisect's state,
a config's runs as pooled, or a value the evaluation worked out before it, such
as a base config's newest valid run) with a fingerprint of what it read.  A
later evaluation reuses the piece while every fingerprint holds, and works it
out again otherwise; what holds for every piece (the definitions, the
references, the engine's code) is the memo's ``key``, and a change of it works
everything out again.

A piece worked out now and a piece read back go through the same encoding,
so that an incremental evaluation is, to the byte, a whole one.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Mapping, Optional, Sequence, TypeVar

from msgspec.msgpack import encode as _pack

from triage.rules.engine.chained import Chained, stored, stored_parts
from triage.rules.engine.keys import Joined, Keys, joined_text, keys_text
from triage.rules.engine.records import BisectState, Confound, Confounds, EvidenceItem, PointState
from triage.rules.engine.source import Token, config_and_keys

if TYPE_CHECKING:
    from triage.rules.engine.context import Context

T = TypeVar("T")
Reads = list[list[str]]  # [kind, name, fingerprint], as stored


class Memo:
    """The pieces of the last evaluation (``stored``) and those of this one (``pieces``)."""

    def __init__(self, stored: Optional[Mapping[str, tuple[Reads, Any]]] = None, key: str = "", *,
                 keep: bool = True) -> None:
        self.keep = keep  # note what each piece reads, to keep the pieces for the next evaluation
        self.key = key  # what the stored pieces were derived under
        self.code = ""  # the engine's code, as the caller knows it (a change works everything out again)
        self.stored = dict(stored or {})
        self.pieces: dict[str, tuple[Reads, Any]] = {}  # name -> (reads, encoded data), every piece of this one
        self.worked: list[str] = []  # the pieces worked out (not reused), in order
        self._values: dict[str, Any] = {}  # name -> the piece's value, in this evaluation
        self._pools: dict[str, tuple[Any, Any]] = {}  # pools read back for pieces that name them: name -> (data, value)
        # Pieces of the next evaluation worked out ahead of it (adopt()), and their key;
        # ``claim(name)``, when set, is told of each piece about to be worked out.
        self.ahead: dict[str, tuple[Reads, Any]] = {}
        self._ahead_key: Optional[str] = None
        # of those worked out in this process, the value each was decoded to then: its data
        # need not be decoded again (name -> (data, value))
        self._ahead_values: dict[str, tuple[Any, Any]] = {}
        self.claim: Optional[Callable[[str], None]] = None

    def start(self, key: str) -> None:
        """Begin an evaluation under ``key``: stored pieces of another key are dropped."""
        if key != self.key:
            self.stored = {}
        self.key = key
        if key != self._ahead_key:
            self.ahead, self._ahead_values = {}, {}
        self._ahead_key = None  # the pieces taken in are for this evaluation only
        self.pieces = {}
        self.worked = []
        self._values = {}
        self._pools = {}

    def adopt(self, key: str, pieces: Mapping[str, tuple[Reads, Any]]) -> None:
        """Take in pieces of the next evaluation worked out ahead of it, under
        ``key`` (:func:`triage.rules.engine.evaluate.work_ahead`, here or in another
        process).  If the evaluation's key is the same, each is used where what
        it read holds, like a stored piece, and counts as worked out in it: it is
        new to the knowledge base."""
        if key != self._ahead_key:
            self.ahead, self._ahead_values = {}, {}
            self._ahead_key = key
        self.ahead.update(pieces)

    def adopt_own(self) -> None:
        """Take in, as :meth:`adopt` does, the pieces worked out so far in this evaluation
        (:func:`triage.rules.engine.evaluate.work_ahead` in this process) with the values
        they were decoded to: the evaluation that takes them in decodes none of them again."""
        self.adopt(self.key, {name: self.pieces[name] for name in self.worked})
        self._ahead_values.update({name: (self.pieces[name][1], self._values[name]) for name in self.worked
                                   if name in self._values})

    def _carry(self, name: str) -> None:
        """Keep the piece ``name`` as it is, though this evaluation did not ask for it: a piece
        that read it is reused (one worked out ahead is new to the knowledge base)."""
        if name in self.pieces:
            return
        kept = self.ahead.get(name)
        if kept is not None:
            self.worked.append(name)
        else:
            kept = self.stored.get(name)
        if kept is not None:
            self.pieces[name] = kept

    def piece(self, ctx: "Context", name: str, compute: Callable[[], T], codec: "Codec[T]",
              update: Optional[Callable[[T, list], Optional[T]]] = None) -> T:
        """The piece ``name``: reused while what it read holds, else worked out.

        ``update(old, runs)``: for a piece that reads one config's runs, its stored
        value with the runs recorded since (or None when it cannot tell): used when
        the source says runs were only added to that config."""
        if name in self._values:  # asked for again in this evaluation
            for kind, what, fp in self.pieces.get(name, ([], None))[0]:
                ctx.read((kind, what), fp)
            return self._values[name]
        if self.claim is not None:
            self.claim(name)
        kept = self.ahead.get(name)
        ahead = kept is not None
        if not ahead:
            kept = self.stored.get(name)
        if not self.keep and kept is None:  # nothing to keep: no need to note what it reads
            value = self._values[name] = self._decoded(codec, codec.encode(compute()))
            self.worked.append(name)
            return value
        if kept is not None and _holds(ctx, kept[0]):
            reads, data = kept
            for kind, what, fp in reads:  # what it read, for a piece around this one
                ctx.read((kind, what), fp)
                if kind == "q":  # a pool it read (triage.rules.engine.pools) is kept with it
                    self._carry(f"q:{what}")
            if ahead:
                self.worked.append(name)
        else:
            made = _updated(ctx, kept, codec, update) if update is not None and kept is not None else None
            if made is not None:
                reads, data = made
            else:
                with track(ctx) as seen:
                    out = compute()
                # in one order, whichever way it was worked out (in which process, after
                # which other pieces): a whole evaluation then finds each piece as stored
                reads = sorted([kind, what, fp] for (kind, what), fp in seen.items())
                data = codec.encode(out)
            self.worked.append(name)
        self.pieces[name] = (reads, data)
        own = self._ahead_values.pop(name, None) if ahead else None
        if own is not None and own[0] is data:
            value = own[1]
        else:  # a pool read back for a piece that named it: the same object
            early = self._pools.pop(name, None)
            value = early[1] if early is not None and early[0] is data else self._decoded(codec, data)
        self._values[name] = value
        return value

    def _decoded(self, codec: "Codec[T]", data: Any) -> T:
        """A piece's value from its data, with the pools it names put in place."""
        value = codec.decode(data)
        if codec.resolve is not None:
            codec.resolve(value, self._pool_keys)
        return value

    def _pool_keys(self, what: str) -> Keys:
        """The keys of the pool ``q:WHAT`` (triage.rules.engine.pools), as this evaluation holds it:
        one object however many pieces name it."""
        name = f"q:{what}"
        value = self._values.get(name)
        if value is None:
            early = self._pools.get(name)
            if early is None:
                from triage.rules.engine.pools import POOLED

                kept = self.pieces.get(name) or self.ahead.get(name) or self.stored.get(name)
                if kept is None:
                    raise KeyError(f"a piece names the pool {what!r}, which is not kept")
                early = self._pools[name] = (kept[1], POOLED.decode(kept[1]))
            value = early[1]
        return value.keys

    def _has_pool(self, what: str) -> bool:
        name = f"q:{what}"
        return name in self._values or name in self.pieces or name in self.ahead or name in self.stored


def configs_again(memo: Memo, fingerprint: Callable[[tuple[str, str]], str]) -> list[str]:
    """The configs whose runs this evaluation will read whole, as far as the stored pieces
    tell: every config a piece read that also read a config whose runs changed since
    (``fingerprint``: a config's now).  A piece that read one config alone is left out:
    it may read only the runs added to it (:func:`_updated`)."""
    now: dict[str, bool] = {}  # config -> its runs are as a piece read them

    def same(config: str, fp: str) -> bool:
        held = now.get(config + "\x1f" + fp)
        if held is None:
            held = now[config + "\x1f" + fp] = fingerprint(("c", config)) == fp
        return held

    out: dict[str, None] = {}
    for reads, _ in memo.stored.values():
        configs = [(what, fp) for kind, what, fp in reads if kind == "c"]
        if len(reads) > 1 and not all(same(c, fp) for c, fp in configs):
            out.update(dict.fromkeys(c for c, _ in configs))
    return list(out)


def _updated(ctx: "Context", kept: tuple[Reads, Any], codec: "Codec[T]",
             update: Callable[[T, list], Optional[T]]) -> Optional[tuple[Reads, Any]]:
    """A stored piece that read one config's runs (or those of its runs that recorded some
    provenance keys: a bisect's), updated from the runs added since (those that recorded the
    keys)."""
    reads, data = kept
    if len(reads) != 1 or reads[0][0] not in ("c", "p"):
        return None
    kind, what, fp = reads[0]
    if kind == "c":
        new = ctx.source.appended(what, fp)
    else:
        config, keys = config_and_keys((kind, what))
        added = ctx.source.appended(config, fp.partition("|")[0]) if "|" in fp else None
        want = set(keys)
        new = [r for r in added if r.provenance.keys() >= want] if added else None
    if not new:
        return None
    value = update(codec.decode(data), new)
    if value is None:
        return None
    now = ctx.source.fingerprint((kind, what))
    ctx.read((kind, what), now)  # for a piece around this one
    return [[kind, what, now]], codec.encode(value)


def _holds(ctx: "Context", reads: Reads) -> bool:
    for kind, what, fp in reads:
        if kind == "b":
            if ctx.bisects.fingerprints.get(what) != fp:
                return False
        elif kind == "v":  # a value this evaluation worked out before the piece (Context.derived)
            if ctx.derived.get(what) != fp:
                return False
        elif kind == "q":  # a config's runs pooled (triage.rules.engine.pools): as they were, and kept
            if not ctx.source.holds(("c", what.rpartition("\x1f")[0]), fp) or not ctx.memo._has_pool(what):
                return False  # a metric's name holds no separator
        elif not ctx.source.holds((kind, what), fp):
            return False
    return True


@contextmanager
def track(ctx: "Context") -> Iterator[dict[Token, str]]:
    seen: dict[Token, str] = {}
    ctx._tracks.append(seen)
    try:
        yield seen
    finally:  # this one, not another that holds the same reads (list.remove compares by ==)
        del ctx._tracks[next(i for i, x in enumerate(ctx._tracks) if x is seen)]


def fingerprint(data: Any) -> str:
    """A short hash of ``data``: plain lists, texts and numbers as msgpack's bytes
    (texts as they are, in C: a bisect state naming 100,000 runs in half a
    millisecond; ``repr`` escaped every separator first, 15 times slower), anything
    else as its ``repr``."""
    try:
        raw = _pack(data)
    except (TypeError, ValueError, OverflowError):  # not plain: an object, an int past 64 bits
        raw = repr(data).encode()
    return hashlib.sha256(raw).hexdigest()[:24]


# --------------------------------------------------------------------------
# Encodings: plain lists, texts and numbers (JSON as they are)


class Codec(Generic[T]):
    """How a piece's value is stored: ``decode(encode(x))`` is what a stored piece reads back as.
    ``resolve(value, pool)``: what a value read back names of other pieces put in place
    (``pool``: a pool piece's name -> its keys)."""

    def __init__(self, encode: Callable[[T], Any], decode: Callable[[Any], T],
                 resolve: Optional[Callable[[T, Callable[[str], Keys]], None]] = None) -> None:
        self.encode, self.decode, self.resolve = encode, decode, resolve


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, (list, tuple)) else v


_FIELDS: dict[type, tuple[str, ...]] = {}


def _row(obj: Any) -> list:
    names = _FIELDS.get(type(obj))
    if names is None:
        names = _FIELDS[type(obj)] = tuple(f.name for f in fields(obj))
    return [list(v) if isinstance(v, tuple) else v for v in (getattr(obj, n) for n in names)]


def _evidence_row(e: EvidenceItem) -> list:
    row = _row(e)
    # the runs it names, as one text (see triage.rules.engine.keys); a pool it compared with by its piece
    row[4] = stored_parts(e.runs) if isinstance(e.runs, Chained) else keys_text(e.runs)
    row.append(e.key)  # a digest of thousands of runs: worked out when the piece is
    return row


def _evidence(row: Sequence[Any]) -> EvidenceItem:
    hypothesis, rule, verdict, reason, runs, flags, summary, needed, *key = row
    runs = Keys(runs) if isinstance(runs, str) else stored(runs)
    item = EvidenceItem(hypothesis, rule, verdict, reason, runs, tuple(flags), summary, tuple(needed))
    if key:  # as ``EvidenceItem.key`` (a cached property) keeps it
        item.__dict__["key"] = key[0]
    return item


def _resolve_evidence(items: list[EvidenceItem], pool: Callable[[str], Keys]) -> None:
    for e in items:
        if isinstance(e.runs, Chained):
            e.runs.resolve(pool)


EVIDENCE: Codec[list[EvidenceItem]] = Codec(lambda items: [_evidence_row(e) for e in items],
                                            lambda rows: [_evidence(r) for r in rows], _resolve_evidence)


def _confounds_row(items: Sequence[Confound]) -> dict:
    """A recipe's confounds as columns: their runs and values as one text each, and per
    confound the place of what the rest says (recipe, key, base value, base run, declared)
    among the few distinct ones.  A recipe whose runs each recorded their own sha has a
    confound per run."""
    made = items if isinstance(items, Confounds) else Confounds.of(items)
    runs, values, places, combos = made.columns()
    said = made.said_of_one()
    text = joined_text(values)
    if text is None:  # a value no text may join: row by row
        row: dict = {"rows": [[c.run, c.recipe, c.key, c.value, c.base_value, c.base_run, c.declared] for c in items]}
    else:
        row = {"runs": keys_text(runs), "values": text, "n": len(values),
               "places": list(places), "combos": [list(c) for c in combos]}
    if said is not None:  # what its warnings say (triage.rules.engine.confounds.confound_warnings)
        row["said"] = list(said)
    return row


def _confounds(row: dict) -> Confounds:
    if "rows" in row:
        made = Confounds.of([Confound(*r) for r in row["rows"]])
    else:
        made = Confounds([(Keys(row["runs"], row["n"]), Joined(row["values"], row["n"]), row["places"],
                           [tuple(c) for c in row["combos"]])])
    return made.saying(row["said"]) if "said" in row else made


CONFOUNDS: Codec[Sequence[Confound]] = Codec(_confounds_row, _confounds)


def _point_row(p: PointState) -> list:
    row = _row(p)
    row[2] = keys_text(p.runs)  # a point's runs, as one text
    return row


def _point(row: Sequence[Any]) -> PointState:
    label, state, runs, *rest = row
    return PointState(label, state, Keys(runs), *(_tuples(v) for v in rest))


def _bisect_row(b: BisectState) -> list:
    row = _row(b)
    row[3] = [_point_row(p) for p in b.points]
    return row


def _bisect(row: Sequence[Any]) -> BisectState:
    points = tuple(_point(p) for p in row[3])
    return BisectState(*(points if i == 3 else _tuples(v) for i, v in enumerate(row)))


BISECT: Codec[BisectState] = Codec(_bisect_row, _bisect)
