"""An item's runs that name pools: its own keys, then each pool's, the pools' keys shared.

A prediction that compares a recipe's runs with its base pooled names every run of
the base: forty such items of a wide investigation named the same 8,300 keys each
(82,000 at 1,000,000 runs), merged, stored, read back and searched item by item.
:class:`Chained` is such a list of keys as its parts: a few keys of its own and
the :class:`~triage.rules.engine.keys.Keys` of each pool it compared with (the
same object as the pool's piece holds, :mod:`triage.rules.engine.pools`), named by
that piece.  It reads as the one sequence it stands for; what is asked of every
key (the configs they name, whether one is wanted) is asked of each part, and of
a pool once however many items name it.  Stored, an item names the pool's piece
rather than its keys (:data:`triage.rules.engine.memo.EVIDENCE`).

:func:`merged` joins the runs of several comparisons as ``dict.fromkeys`` over
their concatenation would, keeping the pools whole where it can tell, without
going through their keys, that each key is named once.
"""

from __future__ import annotations

from itertools import chain
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Optional, Sequence, Union

from triage.rules.engine.keys import SEP, Keys, meets, tails

#: One part of a comparison's runs: the name of the pool's piece (None: keys of its own) and the keys.
Part = tuple[Optional[str], Sequence[str]]


class Chained(Keys):
    """Keys made of parts, one after the other: keys of the item's own (a pool's name None)
    and pools' keys, each named by its piece."""

    __slots__ = ("parts", "names")

    def __init__(self, parts: Sequence[Keys], names: Sequence[Optional[str]]) -> None:
        super().__init__("", sum(len(p) for p in parts))
        self._text = None  # the whole text, made only if something reads it
        self.parts, self.names = tuple(parts), tuple(names)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = SEP.join(p.text for p in self.parts if p)
        return self._text

    def joined(self, sep: str) -> str:
        return sep.join(p.joined(sep) for p in self.parts if p)

    def hash_into(self, h: Any, keep: bool = False) -> None:
        first = True
        for part, name in zip(self.parts, self.names):
            if part:
                if not first:
                    h.update(b",")
                part.hash_into(h, keep=name is not None)  # a pool's text, for the next item naming it
                first = False

    def _all(self) -> tuple[str, ...]:
        if self._items is None:
            self._items = tuple(chain.from_iterable(p.passing() for p in self.parts))
        return self._items

    def passing(self) -> Iterator[str]:
        if self._items is not None:
            return iter(self._items)
        return chain.from_iterable(p.passing() for p in self.parts)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getitem__(self, i: Any) -> Any:
        if self._items is None:
            parts = [p for p in self.parts if p]
            if isinstance(i, int) and i in (0, -1) and parts:
                return parts[i][i]
            if (isinstance(i, slice) and i.step is None and (i.start or 0) == 0
                    and i.stop is not None and 0 <= i.stop < 64):
                out: list[str] = []
                for p in parts:  # the first few, off the parts they are in
                    if len(out) >= i.stop:
                        break
                    out += p[:i.stop - len(out)]
                return tuple(out)
        return self._all()[i]

    def __contains__(self, key: object) -> bool:
        return any(key in p for p in self.parts)

    def index_of(self, key: object) -> Optional[int]:
        before = 0
        for p in self.parts:
            at = p.index_of(key)
            if at is not None:
                return before + at
            before += len(p)
        return None

    def may_name(self, configs: Iterable[str]) -> bool:
        configs = list(configs)
        return any(p.may_name(configs) for p in self.parts)

    def appended(self, more: Sequence[str]) -> Keys:
        return Chained((*self.parts, Keys.of(more)), (*self.names, None)) if more else self

    def inserted(self, pos: int, key: str) -> Optional[Keys]:
        return Keys(self.text, len(self)).inserted(pos, key)

    def _found_tails(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for p in self.parts for t in tails(p)))  # a pool's: kept with it

    def _meets(self, wanted: AbstractSet[str]) -> bool:
        return any(meets(p, wanted) for p in self.parts)

    def resolve(self, lookup: Callable[[str], Keys]) -> None:
        """Put each pending pool's keys in its place (``lookup``: a pool piece's name -> its keys)."""
        parts = tuple(lookup(p.name) if isinstance(p, Pending) else p for p in self.parts)
        if [len(p) for p in parts] != [len(p) for p in self.parts]:
            raise ValueError("a stored item names a pool of another size")
        self.parts = parts

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Keys):
            return self.text == other.text
        if isinstance(other, (tuple, list)):
            return self._all() == tuple(other)
        return NotImplemented

    __hash__ = Keys.__hash__


class Pending(Keys):
    """A pool's keys, as a stored item names them: its piece's name and how many, until
    :meth:`Chained.resolve` puts the pool's keys in its place."""

    __slots__ = ("name",)

    def __init__(self, name: str, count: int) -> None:
        super().__init__("", count)
        self.name = name


def stored(parts: Sequence[Any]) -> Chained:
    """A :class:`Chained` as an item stores it (:func:`stored_parts`), pools pending."""
    return Chained([Keys(p) if isinstance(p, str) else Pending(p[0], p[1]) for p in parts],
                   [None if isinstance(p, str) else p[0] for p in parts])


def stored_parts(keys: Chained) -> list:
    """How an item stores its runs: each own part as one text, each pool as its piece's name and count."""
    return [p.text if n is None else [n, len(p)] for p, n in zip(keys.parts, keys.names)]


def merged(parts: Sequence[Part]) -> Union[list[str], Chained]:
    """``list(dict.fromkeys(...))`` of the parts' keys one after the other, as a
    :class:`Chained` when a pool is among them: a pool named again is left out whole; a pool
    none of whose keys can be among those before it (its keys all end with its config, and
    theirs with another) is kept whole; anything else is gone through key by key."""
    plain: dict[str, None] = {}  # keys of the item's own so far, in order
    out_parts: list[Keys] = []
    names: list[Optional[str]] = []
    pools: list[Keys] = []
    pending: list[str] = []  # own keys since the last pool
    for name, keys in parts:
        # a comparison's runs merged before: its parts (each key named once among them)
        sub = list(zip(keys.names, keys.parts)) if isinstance(keys, Chained) else [(name, keys)]
        for n, ks in sub:
            if n is None or not isinstance(ks, Keys):
                for k in ks:
                    if k not in plain and not any(k in p for p in pools):
                        plain[k] = None
                        pending.append(k)
                continue
            if any(ks is p for p in pools):
                continue  # every key of it named already
            if ks.any_of(plain) or any(_may_share(ks, p) for p in pools):
                return list(dict.fromkeys(chain.from_iterable(ks for _, ks in parts)))
            if pending:
                out_parts.append(Keys.of(pending))
                names.append(None)
                pending = []
            out_parts.append(ks)
            names.append(n)
            pools.append(ks)
    if not pools:
        return list(plain)
    if pending:
        out_parts.append(Keys.of(pending))
        names.append(None)
    return Chained(out_parts, names)


def _may_share(a: Keys, b: Keys) -> bool:
    """Whether two pools' keys may share one: not when each ends with its own config and
    neither config's "/CONFIG" ends with the other's (read off the keys kept as ids)."""
    if a._suffix and b._suffix:
        return a._suffix.endswith(b._suffix) or b._suffix.endswith(a._suffix)
    return True
