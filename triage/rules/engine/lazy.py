"""A long list stored as its JSON text, decoded when something first looks into it (a config's
distinct provenances and groups of repeats: see :mod:`triage.rules.engine.facts`)."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence, Union


class Lazy(Sequence[Any]):
    """A long list stored as its JSON text (a config's distinct provenances and groups
    of repeats, one per run when each run records its own sha), decoded into a tuple
    by ``make`` when something first looks into it.  The text itself may be kept
    elsewhere: given as a function, it is read when first asked for."""

    __slots__ = ("_text", "_make", "_items", "_reader")

    def __init__(self, text: Union[str, Callable[[], str]], make: Any, items: Optional[tuple] = None) -> None:
        self._text, self._make = text, make
        self._items: Optional[tuple] = items  # given: what ``make`` would give of the text, known already
        self._reader = None if isinstance(text, str) else text

    @property
    def text(self) -> str:
        if not isinstance(self._text, str):
            self._text = self._text()
        return self._text

    @property
    def source(self) -> Union[str, Callable[[], str]]:
        """The function that reads the text, if it was given one (read or not: what it reads is
        this list still), else the text."""
        return self._reader if self._reader is not None else self._text

    def _all(self) -> tuple:
        if self._items is None:
            from msgspec.json import decode

            self._items = tuple(self._make(x) for x in decode(self.text))
        return self._items

    def passing(self) -> Iterator[Any]:
        """The items, for one pass: decoded without keeping them (a whole evaluation looks
        once into each config's, and would otherwise hold every run's provenance to its end)."""
        if self._items is not None:
            return iter(self._items)
        from msgspec.json import decode

        return map(self._make, decode(self.text))

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    @property
    def decoded(self) -> bool:
        """Whether something has looked into every item already."""
        return self._items is not None

    def raws(self) -> list:
        """The items as their JSON texts (``msgspec.Raw``), none decoded."""
        from msgspec import Raw
        from msgspec.json import decode

        return decode(self.text, type=list[Raw])

    def appended(self, rows: Sequence[Any]) -> Lazy:
        """These items, then ``rows`` (as stored: what ``make`` is given), without decoding the text."""
        if not rows:
            return self
        from msgspec.json import encode

        more = encode(list(rows)).decode()[1:-1]
        return Lazy((self.text[:-1] + "," if self.text != "[]" else "[") + more + "]", self._make)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._all())

    def __contains__(self, x: object) -> bool:
        return x in self._all()

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Lazy):
            return self._all() == other._all()
        return self._all() == tuple(other) if isinstance(other, (tuple, list)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Lazy({self._all()!r})"
