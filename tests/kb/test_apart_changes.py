"""Where a config's long texts changed since they were written whole (``triage.kb.apart``): one
stretch of each text replaced, found by the common start and end, and read back as it is now."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.kb import apart

_TEXT = st.text(alphabet="ab]\x00", max_size=12)


def _stored(written: list[str], now: list[str]) -> list:
    """A group's texts as a stored piece holds them, read: each a ``Text`` of one ``_Later``
    whose texts as written whole are ``written``."""
    later = apart._Later.__new__(apart._Later)  # read already: no session to read them in
    later.written, later.texts = list(written), list(written)
    return [apart.Text(later, i) for i in range(len(written))]


@given(st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=3))
@settings(max_examples=400, deadline=None)
def test_each_text_is_read_back_as_it_is_now(pairs: list) -> None:
    written, now = [w for w, _ in pairs], [n for _, n in pairs]
    was = _stored(written, now)
    saved = (apart.TAIL_FROM, apart.TAIL_SHARE)
    apart.TAIL_FROM, apart.TAIL_SHARE = 0, 1e9
    try:
        changes = apart._tail(now, was, tuple(range(len(now))))
    finally:
        apart.TAIL_FROM, apart.TAIL_SHARE = saved
    if changes is None:  # texts now empty, and written whole so: nothing else is
        assert not "".join(now) and "".join(written)
        return
    for text, before, (cut, put, resume) in zip(now, written, changes):
        assert 0 <= cut <= resume <= len(before)
        assert apart.spliced(before, cut, put, resume) == text
        # the least stretch: what stands before and after it is the longest alike
        assert cut == apart._same_start(text, before)


@given(_TEXT, _TEXT)
@settings(max_examples=400, deadline=None)
def test_the_common_start_and_end_are_the_longest_and_do_not_overlap(a: str, b: str) -> None:
    cut = apart._same_start(a, b)
    start = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    assert cut == start
    for most in range(min(len(a), len(b)) - cut + 1):
        keep = apart._same_end(a, b, most)
        end = 0
        while end < most and a[len(a) - end - 1] == b[len(b) - end - 1]:
            end += 1
        assert keep == end


def test_texts_that_shrank_past_their_share_are_written_whole(monkeypatch) -> None:
    """What is replaced counts as well as what replaces it: a text that lost most of itself is
    written whole, not read back whole and cut each time."""
    monkeypatch.setattr(apart, "TAIL_FROM", 0)
    written = ["k" * 100]
    assert apart._tail(["k" * 95], _stored(written, written), (0,)) == [[95, "", 100]]
    assert apart._tail(["k" * 10], _stored(written, written), (0,)) is None
    assert apart._tail(["k" * 100 + "x" * 90], _stored(written, written), (0,)) is None
