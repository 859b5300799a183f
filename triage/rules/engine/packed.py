"""Long lists of small whole numbers kept as bytes: one object to store and read back, not one a number.

A config's facts say, for each of its valid runs, where its provenance stands among
the config's distinct ones (:mod:`triage.rules.engine.facts`): a wide investigation
at a million runs holds 900,000 such places.  Stored as a list, reading every
config's facts back made an integer object of each (two thirds of the time an
add-run spent decoding the stored facts), though an add-run looks into the places of
the one config it adds to.  :class:`Packed` keeps them as the bytes of an array of
unsigned 32-bit integers, little-endian whatever the machine, and makes the array
when something first looks into them.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any, Iterable, Iterator, Optional, Sequence

#: The array's type code: an unsigned integer of four bytes (``I`` on every platform triage runs on).
CODE = next(code for code in ("I", "L") if array(code).itemsize == 4)
SWAP = sys.byteorder != "little"  # stored little-endian


class Packed(Sequence[int]):
    """Whole numbers in [0, 2**32) as the bytes they are stored as, equal to the tuple of the
    same numbers; the numbers made when first looked into."""

    __slots__ = ("_raw", "_items")

    def __init__(self, raw: bytes = b"") -> None:
        if len(raw) % 4:
            raise ValueError("packed numbers: not a whole number of four-byte items")
        self._raw = raw
        self._items: Optional[array] = None

    @classmethod
    def of(cls, values: Iterable[int]) -> Packed:
        """``values`` packed (a :class:`Packed` as it is)."""
        if isinstance(values, Packed):
            return values
        items = array(CODE, values)
        if SWAP:  # pragma: no cover - a big-endian machine
            swapped = array(CODE, items)
            swapped.byteswap()
            made = cls(swapped.tobytes())
        else:
            made = cls(items.tobytes())
        made._items = items
        return made

    @property
    def raw(self) -> bytes:
        """The bytes they are stored as."""
        return self._raw

    def _all(self) -> array:
        if self._items is None:
            items = array(CODE)
            items.frombytes(self._raw)
            if SWAP:  # pragma: no cover - a big-endian machine
                items.byteswap()
            self._items = items
        return self._items

    def __len__(self) -> int:
        return len(self._raw) // 4

    def __getitem__(self, i: Any) -> Any:
        got = self._all()[i]
        return tuple(got) if isinstance(i, slice) else got

    def __iter__(self) -> Iterator[int]:
        return iter(self._all())

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Packed):
            return self._raw == other._raw
        if isinstance(other, (tuple, list)):
            return tuple(self._all()) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Packed({tuple(self._all())!r})"


def packed(values: Sequence[int]) -> bytes:
    """``values`` as they are stored (:class:`Packed`)."""
    return Packed.of(values).raw
