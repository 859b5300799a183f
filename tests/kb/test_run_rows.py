"""A run read back from its stored row (``triage.kb.investigations.runs_of_rows``): the usual
form is decoded and checked in one pass; any other form a knowledge base may hold (a value
out of range or not a number, an ``n`` that is not a whole number, a provenance value that is
not text: an older triage wrote them) reads as it always did, one value at a time."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.kb.investigations import _computable, runs_of_rows


def _row(metrics: str, provenance: str, pk: int = 1) -> tuple:
    return ("r1", "c", "passed", metrics, provenance, None, None, None, 0, None, None, pk)


def _slow(metrics: str, provenance: str) -> tuple[dict, dict]:
    """What a run read one value at a time holds."""
    return _computable(json.loads(metrics)), {k: str(v) for k, v in json.loads(provenance).items()}


@pytest.mark.parametrize("metrics, expected", [
    ('{"acc": {"value": 0.5, "n": 10}}', {"acc": (0.5, 10)}),
    ('{"acc": {"value": 3}}', {"acc": (3.0, None)}),  # a whole number: a float for the engine
    ('{"acc": {"value": 1e15}, "b": {"value": -1e15}}', {"acc": (1e15, None), "b": (-1e15, None)}),
    ('{"acc": {"value": 1e16}, "b": {"value": 2}}', {"b": (2.0, None)}),  # out of range: kept, not computed
    ('{"acc": {"value": -1e300}}', {}),
    ('{"acc": {"value": true}}', {"acc": (1.0, None)}),
    ('{"acc": {"value": 0.5, "n": 10.0}}', {"acc": (0.5, 10.0)}),
    ('{"acc": {"value": 0.5, "n": null, "unit": "%"}}', {"acc": (0.5, None)}),
    ('{}', {}),
])
def test_a_runs_metrics_read_back(metrics: str, expected: dict) -> None:
    (run,) = runs_of_rows([[_row(metrics, "{}")]])
    assert run.metrics == expected
    assert all(type(value) is float for value, _ in run.metrics.values())


@pytest.mark.parametrize("provenance, expected", [
    ('{"image": "v1"}', {"image": "v1"}),
    ('{"image": 3, "node": "n1"}', {"image": "3", "node": "n1"}),
    ('{"flag": true}', {"flag": "True"}),
])
def test_a_runs_provenance_read_back(provenance: str, expected: dict) -> None:
    (run,) = runs_of_rows([[_row("{}", provenance)]])
    assert run.provenance == expected


_value = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-10**17, 10**17), st.booleans())
_metric = st.fixed_dictionaries({"value": _value},
                                optional={"n": st.one_of(st.none(), st.integers(0, 10**6), st.floats(0, 1e6))})
_names = st.text("abcxyz_", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.dictionaries(_names, _metric, max_size=4),
                          st.dictionaries(_names, st.one_of(st.text(max_size=5), st.integers(), st.booleans()),
                                          max_size=3)), min_size=1, max_size=6))
def test_runs_read_back_as_one_value_at_a_time(stored: list) -> None:
    rows = [_row(json.dumps(m), json.dumps(p), pk) for pk, (m, p) in enumerate(stored, 1)]
    runs = runs_of_rows([rows])
    for run, (m, p) in zip(runs, stored):
        metrics, provenance = _slow(json.dumps(m), json.dumps(p))
        assert run.metrics == metrics
        assert [type(v) for v, _ in run.metrics.values()] == [float] * len(metrics)
        assert [type(n) for _, n in run.metrics.values()] == [type(n) for _, n in metrics.values()]
        assert run.provenance == provenance
