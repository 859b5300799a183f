"""A list written a batch at a time (``triage.render.jsonout.write_list``: ``runs list --format
json`` of a hundred thousand runs) is the text of the whole list, byte for byte."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.render.jsonout import dumps, write_list

_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                    st.text(max_size=6))
_value = st.recursive(_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                      max_leaves=8)


def _written(batches: list[list]) -> str:
    out: list[str] = []
    write_list(iter(batches), out.append)
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.dictionaries(st.text(max_size=5), _value, max_size=4), max_size=4), max_size=5))
def test_a_list_written_in_batches_is_the_whole_lists_text(batches: list[list]) -> None:
    whole = [item for batch in batches for item in batch]
    assert _written(batches) == dumps(whole) + "\n"
    if not any(isinstance(x, float) and x != x for item in whole for x in item.values()):  # no NaN at the top
        assert json.loads(_written(batches)) == json.loads(json.dumps(whole))


def test_the_empty_list_and_empty_batches() -> None:
    assert _written([]) == "[]\n" == dumps([]) + "\n"
    assert _written([[], [{"a": 1}], []]) == dumps([{"a": 1}]) + "\n"


def test_nothing_is_written_before_the_first_batch() -> None:
    """A use case that fails before its first batch (no such investigation) leaves the output
    empty, not an opened list."""
    out: list[str] = []

    def failing():
        raise LookupError("no investigation")
        yield []  # pragma: no cover

    with pytest.raises(LookupError):
        write_list(failing(), out.append)
    assert out == []
