"""A JSON Lines record read on the fast path (``records.quick_line``: msgspec, which keeps the
last of a key given twice) only when no key of it stands twice; any other line goes the slow
way, which refuses a key given twice."""

from __future__ import annotations

import json
import re

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.ingest import records
from triage.ingest.records import quick_line

name = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF, blacklist_characters='"\\'), min_size=1,
               max_size=6)
text = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), min_size=1, max_size=12)
metric = st.builds(lambda v, n: {"value": v, **({"n": n} if n else {})},
                   st.floats(0, 1), st.one_of(st.none(), st.integers(1, 5000)))
record = st.fixed_dictionaries(
    {"run_id": st.from_regex(r"[0-9]{1,8}", fullmatch=True), "config": st.sampled_from(["base", "r1", "n/a"]),
     "status": st.sampled_from(["passed", "failed", "crashed"])},
    optional={"metrics": st.dictionaries(st.sampled_from(["acc", "n", "value", "sha", "lat"]), metric, max_size=3),
              "provenance": st.dictionaries(st.sampled_from(["sha", "image", "n", "value", "status"]), text,
                                            max_size=3),
              "note": text, "url": text,
              # fields given as their default: keys of the line that the record does not show
              "investigation": st.none(), "signature": st.none(), "excluded": st.just(False),
              "excluded_reason": st.none()})
#: How a line's keys and values are separated: json.dumps's own, and whitespace before a colon.
separators = st.sampled_from([(", ", ": "), (",", ":"), (", ", " : "), (",\t", "\t:"), (",\r", "\r:")])


def _pairs(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) < len(keys):
        raise KeyError("twice")
    return dict(pairs)


def _has_a_key_twice(line: str) -> bool:
    try:
        json.loads(line, object_pairs_hook=_pairs)
    except KeyError:
        return True
    return False


def _again(line: str, rng) -> str:
    """The line with one of its keys given again, somewhere in its object, its value a copy."""
    spots = [m for m in re.finditer(r'"((?:[^"\\]|\\.)*)"\s*:\s*("(?:[^"\\]|\\.)*"|[-0-9.eE+]+|true|false|null)',
                                    line)]
    if not spots:
        return line
    m = spots[rng.randrange(len(spots))]
    return line[:m.end()] + ", " + m.group(0) + line[m.end():]


def _counted_before(raw: bytes, rec: tuple, ns: int) -> bool:
    """How keys given twice were found before: each name counted wherever its quoted form
    stands in the line (a value spelling a key counted too; a key spelled with an escape not)."""
    count = raw.count
    if any(count(f'"{name}"'.encode()) > 1 for name in records.FIELDS):
        return True
    metrics = rec[4]
    if metrics and (count(b'"value"') > len(metrics)
                    or count(b'"n"') > sum(m.n is not None for m in metrics.values())):
        return True
    return any(count(f'"{k}"'.encode()) > 1 for part in (rec[4], rec[5]) for k in part)


def _before(line: bytes):
    now = records._twice
    records._twice = _counted_before
    try:
        return quick_line(line)
    finally:
        records._twice = now


@settings(max_examples=500, deadline=None)
@given(record, st.randoms(use_true_random=False), st.booleans(), st.booleans(), separators)
def test_a_line_with_a_key_twice_goes_the_slow_way(rec: dict, rng, twice: bool, escaped: bool, seps) -> None:
    line = json.dumps(rec, ensure_ascii=escaped, separators=seps)
    if twice:
        line = _again(line, rng)
    got = quick_line(line.encode())
    if _has_a_key_twice(line):
        assert got is None, line
        return
    before = _before(line.encode())
    if got is not None and before is not None:
        assert got == before, line
    if ":" not in line.replace('": ', ""):  # no colon but the keys': the fast way whenever it was before
        assert got is not None or before is None, line


def test_a_key_spelled_with_an_escape_is_the_same_key() -> None:
    line = '{"run_id": "1", "config": "base", "status": "passed", "run\\u005fid": "2"}'
    assert _has_a_key_twice(line) and quick_line(line.encode()) is None


@pytest.mark.parametrize("line", [
    '{"run_id": "1", "config": "base", "status": "passed", "url": null, "url": "x"}',
    '{"run_id": "1", "config": "base", "status": "passed", "excluded": false, "excluded": true}',
    '{"run_id": "1", "config": "base", "status": "passed", "metrics": {}, "metrics": {"acc": {"value": 1}}}',
    '{"run_id": "1", "config": "base", "status": "passed", "url": "x", "url": null}',
    '{"run_id": "1", "config": "base", "status": "passed", "note": "a", "note"\t: "b"}',
    '{"run_id": "1", "config": "base", "status": "passed", "note": "a", "note"\r: "b"}',
])
def test_a_field_given_twice_once_as_its_default_goes_the_slow_way(line: str) -> None:
    """A field given as its default (null, false, {}) is a key the record does not show: given
    twice so, or with whitespace before its colon, it is still found."""
    assert _has_a_key_twice(line) and quick_line(line.encode()) is None


def test_fields_given_as_their_default_once_go_the_fast_way() -> None:
    line = ('{"investigation": null, "run_id": "1", "config": "base", "status": "passed", "metrics": {},'
            ' "provenance": {}, "url": null, "excluded": false, "updated_at": null}')
    assert quick_line(line.encode()) == quick_line(b'{"run_id": "1", "config": "base", "status": "passed"}')


def test_a_value_that_reads_like_a_key_is_not_one() -> None:
    line = '{"run_id": "1", "config": "base", "status": "passed", "note": "config", "url": "status"}'
    assert not _has_a_key_twice(line) and quick_line(line.encode()) is not None


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["acc", "top1", "9lives", "a b", "lat.p50", "x:y", "_x", "é"]),
                       st.builds(lambda v, n: {"value": v, **({"n": n} if n else {})},
                                 st.sampled_from([-0.5, 0.0, 0.3, 1.0, 1.5, 93.0]),
                                 st.one_of(st.none(), st.integers(1, 5000))), max_size=3))
def test_metrics_the_slow_path_refuses_never_go_the_fast_way(metrics: dict) -> None:
    """A metric name of another form, or a proportion (a value with an n) off [0, 1], goes the
    slow way, which refuses it or checks it on the metric's scale; what the fast way reads,
    the slow way reads alike."""
    from triage.errors import InputError
    from triage.ingest.records import check_record

    rec = {"run_id": "1", "config": "base", "status": "passed", "metrics": metrics}
    got = quick_line(json.dumps(rec).encode())
    try:
        slow = check_record(rec, "x:1")
    except InputError:
        assert got is None
        return
    if got is not None:
        assert {k: (m.value, m.n) for k, m in got[4].items()} == {k: (v["value"], v.get("n"))
                                                                  for k, v in slow[4].items()}
    proportions_in_range = all(0 <= v["value"] <= 1 for v in metrics.values() if "n" in v)
    assert (got is not None) == proportions_in_range
