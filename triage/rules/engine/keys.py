"""Run keys kept as one text: the long lists an evaluation's stored pieces hold.

What a config's runs say names every one of its runs, and an evidence item
about a config pooled over thousands of repeats names each of them.  Stored
and read back as one list of texts each, a knowledge base of a hundred
thousand runs spends most of an incremental evaluation making strings that
nothing looks at.  :class:`Keys` is such a list as one text (keys joined by
NUL, which no run id or config may hold): it reads back as a single string,
and is split only when something goes through it one key at a time.
"""

from __future__ import annotations

import re
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union, overload

from triage.rules.engine.lazy import Lazy

SEP = "\x00"  # never part of a key: the knowledge base refuses a NUL in any text


def splits(key: str) -> list[tuple[str, str]]:
    """Each (run id, config) a run key ``run_id/config`` could be: either may itself hold a "/"."""
    out = []
    at = key.find("/")
    while at != -1:
        out.append((key[:at], key[at + 1:]))
        at = key.find("/", at + 1)
    return out


#: What follows a key's first "/", for each key of a joined text that has one.
_TAIL = re.compile("(?:^|" + SEP + ")[^/" + SEP + "]*/([^" + SEP + "]*)")


def tails(keys: Iterable[str]) -> list[str]:
    """The distinct texts after the keys' first "/" ("" for a key without one), in order:
    off the joined text of :class:`Keys` in one search, without splitting them."""
    if isinstance(keys, Keys):
        if keys._tails is None:  # kept: a view asks it of one piece of evidence more than once
            keys._tails = keys._found_tails()
        return list(keys._tails)
    return list(dict.fromkeys(key.partition("/")[2] for key in keys))


def named(keys: Sequence[str], head: int) -> list[str]:
    """The first ``head`` of ``keys``, then the first key of each further text after the keys'
    first "/" (each further config): what an item's thousands of runs are kept as where
    what matters is the first runs it names and every config it read.  Off the joined text
    of :class:`Keys`, each further key found by one search of it."""
    first = list(keys[:head])
    if len(keys) <= head:
        return first
    seen = {key.partition("/")[2] for key in first}
    rest = [tail for tail in tails(keys) if tail not in seen]
    if not rest:
        return first
    if not isinstance(keys, Keys):
        found = {}
        for key in keys:
            found.setdefault(key.partition("/")[2], key)
        return first + [found[tail] for tail in rest]
    # each further one: the first key whose first "/" is followed by its text, in the first
    # part that holds one (keys made of parts, triage.rules.engine.chained: a pool's text once)
    parts = getattr(keys, "parts", (keys,))
    return first + [next(found.group(1) for p in parts if tail in tails(p) and (found := re.search(
        f"(?:^|{SEP})([^/{SEP}]*{'/' + re.escape(tail) if tail else '/?'})(?:{SEP}|$)", p.text)))
        for tail in rest]


def runs_digest(runs: Sequence[str]) -> str:
    """The first 32 hex digits of the SHA-256 of ``runs`` joined by ",": how an evidence item
    names more than a few runs (:attr:`~triage.rules.engine.records.EvidenceItem.key`).  Keys
    made of parts are hashed part by part, a pool's text made once however many items name it."""
    import hashlib

    h = hashlib.sha256()
    if isinstance(runs, Keys):
        runs.hash_into(h)
    else:
        h.update(",".join(runs).encode())
    return h.hexdigest()[:32]


def configs_of(keys: Iterable[str]) -> list[str]:
    """Every config the run keys may be of (each "/"-split of each key), once each, in order:
    from the distinct texts after the keys' first "/", not from each key."""
    return list(dict.fromkeys(c for tail in tails(keys) for c in [tail, *(c for _, c in splits(tail))]))


class Keys(Sequence[str]):
    """An immutable sequence of run keys, equal to the tuple of the same keys.

    A config's keys are stored without the config they all end with
    (:meth:`suffixed`): they are joined with it again only when something
    reads the whole text, so that reading a config's facts back costs no
    pass over its thousands of keys."""

    __slots__ = ("_text", "_ids_read", "_suffix", "_items", "_len", "_tails", "_comma", "_sum", "_last")

    def __init__(self, text: str = "", count: Optional[int] = None) -> None:
        self._text: Optional[str] = text  # the keys joined by SEP ("" for none); None: not made yet
        # while the text is not made: the keys without their common suffix, joined (or what reads them)
        self._ids_read: Union[str, Callable[[], str]] = ""
        self._suffix = ""
        self._items: Optional[tuple[str, ...]] = None
        self._len = count
        self._tails: Optional[tuple[str, ...]] = None  # what follows each key's first "/" (tails())
        self._comma: Optional[bytes] = None  # the keys joined by "," as UTF-8, once hashed as a pool (hash_into)
        self._sum: Optional[str] = None  # digest(), once worked out or given
        self._last: Optional[str] = None  # the newest key, where given with keys not read yet

    @classmethod
    def of(cls, keys: Iterable[str]) -> Keys:
        if isinstance(keys, Keys):
            return keys
        items = tuple(keys)
        made = cls(SEP.join(items), len(items))
        made._items = items
        return made

    @classmethod
    def suffixed(cls, ids: Union[str, Callable[[], str]], suffix: str, count: Optional[int] = None,
                 digest: Optional[str] = None, last: Optional[str] = None) -> Keys:
        """The keys ``id + suffix`` of ``ids`` (joined by SEP; ``suffix`` not empty).  ``ids`` may
        be a function that reads them, called when something first looks into them (given
        ``count``, ``digest`` and ``last``, their number, whether there are any, :meth:`digest`
        and the newest key need no look)."""
        if callable(ids) and count is None:  # bool() and len() would have to read them
            raise TypeError("keys read by a function are given with their count")
        made = cls("", count)
        if ids and not (count == 0 and callable(ids)):  # a function of keys counted none reads none
            made._text, made._ids_read, made._suffix = None, ids, suffix
            made._last = last
        made._sum = digest
        return made

    def digest(self) -> str:
        """:func:`text_digest` of these keys, once worked out (or as given)."""
        if self._sum is None:
            self._sum = _digest(self.text)
        return self._sum

    @property
    def _ids(self) -> str:
        """The keys without their common suffix, joined (read first, if a function gives them)."""
        ids = self._ids_read
        if not isinstance(ids, str):
            ids = self._ids_read = ids()
        return ids

    def stored_ids(self, suffix: str) -> Union[str, Callable[[], str]]:
        """:meth:`ids`, or the function that reads them while nothing has: how a config's keys
        read back from their own stored row are stored again, unread."""
        ids = self._ids_read
        if self._text is None and self._suffix == suffix and not isinstance(ids, str):
            return ids
        return self.ids(suffix)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._ids.replace(SEP, self._suffix + SEP) + self._suffix
        return self._text

    def ids(self, suffix: str) -> str:
        """The keys without ``suffix``, which each ends with, joined: how a config's keys are stored."""
        if self._text is None and self._suffix == suffix:
            return self._ids
        text = self.text
        return text[:-len(suffix)].replace(suffix + SEP, SEP) if text else ""

    def appended(self, more: Sequence[str]) -> Keys:
        """These keys, then ``more``: one pass over the text, none over the keys."""
        if not more:
            return self
        count = self._len + len(more) if self._len is not None else None
        if self._text is None and all(k.endswith(self._suffix) for k in more):
            n = len(self._suffix)
            return Keys.suffixed(SEP.join([self._ids, *(k[:-n] for k in more)]), self._suffix, count)
        return Keys(SEP.join([self.text, *more] if self.text else more), count)

    def inserted(self, pos: int, key: str) -> Optional[Keys]:
        """These keys with ``key`` at ``pos`` (at most 256: found from the start of the
        text), or None for a place further in."""
        n = len(self)
        if pos >= n:
            return self.appended([key])
        if pos > 256:
            return None
        lazy = self._text is None and key.endswith(self._suffix)
        text, item = (self._ids, key[:-len(self._suffix)]) if lazy else (self.text, key)
        at = 0
        for _ in range(pos):
            at = text.index(SEP, at) + 1
        text = f"{text[:at]}{item}{SEP}{text[at:]}"
        return Keys.suffixed(text, self._suffix, n + 1) if lazy else Keys(text, n + 1)

    def _all(self) -> tuple[str, ...]:
        if self._items is None:
            self._items = tuple(self.text.split(SEP)) if self.text else ()
        return self._items

    def __len__(self) -> int:
        if self._len is None:
            text = self._text if self._text is not None else self._ids
            self._len = len(self._items) if self._items is not None else (text.count(SEP) + 1 if text else 0)
        return self._len

    def __bool__(self) -> bool:
        return bool(self._text) or self._text is None

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...

    def __getitem__(self, i: Union[int, slice]) -> Union[str, tuple[str, ...]]:
        if i == -1 and self._last is not None:  # the newest, given: its config's newest base run
            return self._last
        if self._items is None:
            text, suffix = (self._ids, self._suffix) if self._text is None else (self._text, "")
            if isinstance(i, int) and i in (0, -1) and text:
                # the first or the newest key, without splitting thousands
                return (text.partition(SEP)[0] if i == 0 else text.rpartition(SEP)[2]) + suffix
            if (isinstance(i, slice) and i.step is None and (i.start or 0) == 0
                    and i.stop is not None and 0 <= i.stop < 64):
                return tuple(k + suffix for k in text.split(SEP, i.stop)[:i.stop]) if text else ()
        return self._all()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def passing(self) -> Iterator[str]:
        """The keys, for one pass: split from the text without keeping them (a check over
        every item of an evaluation would otherwise keep every item's keys twice)."""
        if self._items is not None:
            return iter(self._items)
        return iter(self.text.split(SEP)) if self.text else iter(())

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or not self or SEP in key:
            return False
        if self._items is not None:
            return key in self._items
        return self._find(key)[1] != -1

    def any_of(self, keys: Iterable[str]) -> bool:
        """Whether any of ``keys`` is here (``any(k in self for k in keys)``): where every key
        here ends with one suffix, only those of ``keys`` that end with it are looked for."""
        suffix = self._suffix
        if suffix:
            return any(k in self for k in keys if k.endswith(suffix))
        return any(k in self for k in keys)

    def index_of(self, key: object) -> Optional[int]:
        """The place of ``key`` here (None: not here): a search of the text and a count
        of the separators before what it finds, without splitting the keys."""
        if not isinstance(key, str) or not self or SEP in key:
            return None
        text, at = self._find(key)
        return None if at == -1 else text.count(SEP, 0, at)

    def _find(self, key: str) -> tuple[str, int]:
        """Where ``key`` is whole in the text it is looked for in (-1: nowhere), and that
        text: the ids, where every key ends with the suffix (the key without it is looked for; the
        whole text may have been made since, for something that read it)."""
        if self._suffix:
            if not key.endswith(self._suffix):
                return "", -1
            text, key = self._ids, key[:-len(self._suffix)]
        else:
            text = self._text
        n = len(key)
        at = text.find(key)
        while at != -1:  # a whole key: bounded by the text's ends or by separators
            if (at == 0 or text[at - 1] == SEP) and (at + n == len(text) or text[at + n] == SEP):
                return text, at
            at = text.find(key, at + 1)
        return text, -1

    def _found_tails(self) -> tuple[str, ...]:
        """:func:`tails`, worked out: one search of the joined text; for keys that all end
        with one suffix and whose ids hold no "/", the suffix's own (a base's hundred
        thousand keys are not joined and searched to find their one config)."""
        if self._suffix and "/" not in self._ids:
            return (self._suffix.partition("/")[2],)
        text = self._text if self._text is not None else self._ids.replace(SEP, self._suffix + SEP) + self._suffix
        if not text:
            return ()
        # one config's keys, each ``ID/CONFIG`` with one "/" (a recipe's runs): counted, not searched.
        # n keys end with "/" + tail, each at a separator or the end: with n "/" in all, each
        # key holds that one "/" alone
        tail = text.rpartition(SEP)[2].partition("/")[2]
        n = len(self)
        if text.count("/") == n and text.count(f"/{tail}{SEP}") == n - 1 and text.endswith(f"/{tail}"):
            return (tail,)
        found = _TAIL.findall(text)
        return tuple(dict.fromkeys(found if len(found) == len(self)  # else a key without "/"
                                   else (key.partition("/")[2] for key in self)))

    def _meets(self, wanted: AbstractSet[str]) -> bool:
        """:func:`meets`, for keys not split yet."""
        text, suffix = (self._ids, self._suffix) if self._text is None else (self._text, "")
        if not text:
            return False
        head = text.split(SEP, _HEAD)
        rest = head.pop() if len(head) > _HEAD else ""
        if any(k + suffix in wanted for k in head):
            return True
        return bool(rest) and any(k + suffix in wanted for k in rest.split(SEP))

    def may_name(self, configs: Iterable[str]) -> bool:
        """Whether a key here may be a run of one of ``configs`` (a key is
        ``run_id/config``, either of which may hold a "/"): False only when none
        is, read off the joined text without splitting it.  For a few configs:
        each is one search of the text."""
        if self._suffix:  # every key ends with the suffix: one ends with "/c" only if the
            # suffix does, or "/c" ends with the suffix (and the run id with the rest)
            return any(self._suffix.endswith(f"/{c}") or f"/{c}".endswith(self._suffix) for c in configs)
        if self._items is not None:
            return True  # split already: the caller may as well go through the keys
        text = self._text
        return any(text.endswith(f"/{c}") or f"/{c}{SEP}" in text for c in configs)

    def joined(self, sep: str) -> str:
        """The keys joined by ``sep`` (``sep.join(keys)``) without splitting them."""
        return self.text.replace(SEP, sep)

    def hash_into(self, h: Any, keep: bool = False) -> None:
        """Feed ``h`` (a :mod:`hashlib` hash) the keys joined by "," as UTF-8 (``keep``: keep
        that text, for the next item that names these keys: a pool's)."""
        if self._comma is not None:
            h.update(self._comma)
            return
        text = self.joined(",").encode()
        if keep:
            self._comma = text
        h.update(text)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Keys):
            if self._text is None and other._text is None and self._suffix == other._suffix:
                return self._ids == other._ids
            return self.text == other.text
        if isinstance(other, (tuple, list)):
            return self._all() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __repr__(self) -> str:
        return f"Keys({self._all()!r})"


def each(keys: Sequence[str]) -> Iterable[str]:
    """``keys`` for one pass: :class:`Keys` split without keeping the split (see
    :meth:`Keys.passing`), any other sequence as it is."""
    return keys.passing() if isinstance(keys, Keys) else keys


def meets(keys: Sequence[str], wanted: AbstractSet[str]) -> bool:
    """Whether any of ``keys`` is in ``wanted``: a :class:`Keys` gone through from its start,
    the first few keys split off first (an item names its own runs before the thousands it
    compared them with), the rest only if none of those is wanted."""
    if not isinstance(keys, Keys) or keys._items is not None:
        return not wanted.isdisjoint(keys)
    return keys._meets(wanted)


#: Keys :func:`meets` looks at before splitting the rest.
_HEAD = 64


def once(items: Sequence[Any]) -> Iterable[Any]:
    """``items`` for one pass: a :class:`Lazy` list decoded without keeping it, any other as it is."""
    return items.passing() if isinstance(items, Lazy) else items


def keys_text(keys: Sequence[str]) -> str:
    """How a sequence of keys is stored: one text."""
    return keys.text if isinstance(keys, Keys) else SEP.join(keys)


def text_digest(keys: Sequence[str]) -> str:
    """The first 32 hex digits of the SHA-256 of :func:`keys_text`: what the keys are, told
    without reading them where it is kept with them (a config's keys, stored apart)."""
    return keys.digest() if isinstance(keys, Keys) else _digest(SEP.join(keys))


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Joined(Sequence[str]):
    """Texts (none of them holding :data:`SEP`) kept as they are stored, joined by it, and split
    when something first looks into them: a recipe's confounds' values, one per run when each
    records its own sha.  An add-run reads every recipe's confounds and looks into few."""

    __slots__ = ("text", "_n", "_items")

    def __init__(self, text: str, n: int) -> None:
        self.text, self._n = text, n
        self._items: Optional[list[str]] = None

    def _all(self) -> list[str]:
        if self._items is None:
            self._items = self.text.split(SEP) if self._n else []
        return self._items

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())


def joined_text(texts: Sequence[str]) -> Optional[str]:
    """``texts`` joined by :data:`SEP`, as a :class:`Joined` keeps them (None: one of them holds it)."""
    if isinstance(texts, Joined):
        return texts.text
    return None if any(SEP in t for t in texts) else SEP.join(texts)


class Invalid(Sequence[tuple[int, str, str]]):
    """A config's runs that decide nothing: (place in the order recorded, key, why in
    brief) each, kept as three texts and split when first gone through."""

    __slots__ = ("orders", "keys", "whys", "_items")

    def __init__(self, orders: str = "", keys: Optional[Keys] = None, whys: Optional[Keys] = None) -> None:
        self.orders = orders
        self.keys = keys if keys is not None else Keys()
        self.whys = whys if whys is not None else Keys()
        self._items: Optional[tuple[tuple[int, str, str], ...]] = None

    @classmethod
    def of(cls, entries: Iterable[tuple[int, str, str]]) -> Invalid:
        items = tuple(entries)
        made = cls(",".join(str(o) for o, _, _ in items), Keys.of(k for _, k, _ in items),
                   Keys.of(w for _, _, w in items))
        made._items = items
        return made

    def appended(self, entries: Sequence[tuple[int, str, str]]) -> Invalid:
        """These runs, then ``entries`` (recorded after them), without splitting the texts."""
        if not entries:
            return self
        orders = ",".join(str(o) for o, _, _ in entries)
        return Invalid(f"{self.orders},{orders}" if self.orders else orders,
                       self.keys.appended([k for _, k, _ in entries]), self.whys.appended([w for _, _, w in entries]))

    def _all(self) -> tuple[tuple[int, str, str], ...]:
        if self._items is None:
            orders = [int(x) for x in self.orders.split(",")] if self.orders else []
            self._items = tuple(zip(orders, self.keys, self.whys))
        return self._items

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[tuple[int, str, str]]:
        return iter(self._all())

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Invalid):
            return (self.orders, self.keys, self.whys) == (other.orders, other.keys, other.whys)
        return self._all() == tuple(other) if isinstance(other, (tuple, list)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Invalid({self._all()!r})"


_MISSING = object()


class InvalidRuns(Mapping[str, str]):
    """Run key -> why it decides nothing, over every config, in the order recorded;
    merged from the configs' :class:`Invalid` when first looked at (an evaluation
    whose caller shows no runs never needs it).  Given by config, a key is looked up
    among the runs of the configs it can be of, not in every config's texts."""

    def __init__(self, parts: Union[Sequence[Sequence[tuple[int, str, str]]],
                                    Mapping[str, Sequence[tuple[int, str, str]]]]) -> None:
        self._by_config = parts if isinstance(parts, Mapping) else None
        self._parts = list(parts.values()) if isinstance(parts, Mapping) else parts
        self._map: Optional[dict[str, str]] = None
        self._texts: dict[int, Invalid] = {}  # a part's place -> it as texts

    def _all(self) -> dict[str, str]:
        if self._map is None:
            entries = sorted((x for part in self._parts for x in part), key=lambda x: x[0])
            self._map = {key: why for _, key, why in entries}
        return self._map

    def __getitem__(self, key: str) -> str:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def _text(self, i: int) -> Invalid:
        part = self._texts.get(i)
        if part is None:
            p = self._parts[i]
            part = self._texts[i] = p if isinstance(p, Invalid) else Invalid.of(p)
        return part

    def _candidates(self, key: str) -> list[Invalid]:
        """The parts ``key`` may be in: those of the configs it can be of (a key is
        ``run_id/config``, either of which may hold a "/"), or every part."""
        if self._by_config is None:
            return [self._text(i) for i in range(len(self._parts))]
        if not hasattr(self, "_place"):
            self._place = {config: i for i, config in enumerate(self._by_config)}
        return [self._text(self._place[c]) for _, c in splits(key) if c in self._place]

    def get(self, key: str, default: Any = None) -> Any:
        """Why ``key`` decides nothing: a search of its config's texts, not the whole map
        (a report looks up the few runs it shows among tens of thousands)."""
        if self._map is not None:
            return self._map.get(key, default)
        if not isinstance(key, str):
            return default
        found = [(part, at) for part in self._candidates(key) if (at := part.keys.index_of(key)) is not None]
        if not found:
            return default
        if len(found) > 1:  # one key in two configs' runs ("a" of "b/c", "a/b" of "c"): the last recorded
            return max(((part._all()[at][0], n), part.whys[at]) for n, (part, at) in enumerate(found))[1]
        part, at = found[0]
        return part.whys[at]
