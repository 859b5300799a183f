"""A stored view (written and read with msgspec) reads back as ``json.dumps`` and ``json.loads`` would give it."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_RUNS

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1),
                    st.floats(allow_nan=False, allow_infinity=False), st.text())
views = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(), inner, max_size=4)),
                     max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), views, max_size=5))
def test_the_stored_text_reads_back_as_the_standard_librarys(data) -> None:
    from msgspec.json import decode, encode

    text = encode(data).decode()  # as triage.kb.snapshot.write stores it
    standard = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    assert decode(text) == json.loads(standard) == json.loads(text) == data


def test_a_view_reads_back_as_written(cli, rules_dir, tmp_path) -> None:
    from triage.kb import snapshot, store

    url = f"sqlite:///{tmp_path / 'kb.sqlite'}"
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    view = {"model": {"title": "GSM8K — 0.94 → 0.88 ✓", "n": [1, 2.5, None, True], "nested": {"k": ["é"]}}}
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        snapshot.write(s, iid, "fp", view)
    with store.session(url) as s:
        got = snapshot.read(s, iid, "fp")
        assert snapshot.read(s, iid, "another") is None
    assert got is not None and got["model"] == view["model"]
