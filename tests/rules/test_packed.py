"""A config's places of its valid runs' provenances, stored as bytes (``triage.rules.engine.packed``):
read back as they were, and not made into numbers until something looks into them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from triage.rules.engine.packed import Packed, packed

places = st.lists(st.integers(0, 2**32 - 1), max_size=60)


@given(places)
def test_packed_numbers_read_back_as_they_were(values: list) -> None:
    raw = packed(values)
    assert len(raw) == 4 * len(values)
    back = Packed(raw)
    assert len(back) == len(values) and back._items is None  # counted without being made
    assert back == tuple(values) and back == values and tuple(values) == back
    assert list(back) == values and back[:3] == tuple(values[:3])
    if values:
        assert back[-1] == values[-1] and max(back) == max(values)
    assert back == Packed.of(values) and packed(back) == raw


def test_stored_little_endian() -> None:
    assert packed([1, 256]) == b"\x01\x00\x00\x00\x00\x01\x00\x00"


def test_a_number_out_of_range_or_a_broken_text_is_refused() -> None:
    with pytest.raises(OverflowError):
        packed([2**32])
    with pytest.raises(OverflowError):
        packed([-1])
    with pytest.raises(ValueError):
        Packed(b"\x00\x01\x02")


def test_a_configs_facts_keep_their_places_packed_until_looked_into() -> None:
    """Every config's facts are read back by an add-run; the places of one of them are looked into."""
    from tests.support.bundled import INV, RUNS
    from triage.rules.engine.context import Context
    from triage.rules.engine.facts import FACTS, config_facts

    ctx = Context(INV)
    # the config whose runs record the most provenances (then by name: the same one every time)
    config = max(sorted({r.config for r in RUNS}),
                 key=lambda c: len({tuple(sorted(r.provenance.items())) for r in RUNS if r.config == c}))
    made = config_facts(config, ctx)
    assert len(made.valid) > 1 and max(made.valid_provenance) > 0  # places to keep
    back = FACTS.decode(FACTS.encode(made))
    assert isinstance(back.valid_provenance, Packed) and back.valid_provenance._items is None
    assert back.valid_provenance == made.valid_provenance and len(back.valid_provenance) == len(made.valid)
    assert FACTS.encode(back) == FACTS.encode(made)
