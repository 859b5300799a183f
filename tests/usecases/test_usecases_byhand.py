"""The use cases behind `runs exclude|include`, `bisect mark` and `evidence add`,
called directly as the server calls them: what they return, and that a refused
one writes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from triage.errors import InputError
from triage.kb import models as m
from triage.kb import store
from triage.usecases import byhand
from triage.usecases.runs import set_excluded

PR, RUN, POINT = 30433, "28903343346", "v0.5.14-rocm720-mi35x-20260626"


@pytest.fixture
def url(seeded):
    return store.resolve_url(None)


def test_exclude_and_include_return_the_legs(url):
    legs = set_excluded(url, RUN, True, "plain main", pr=PR)
    assert legs and {run for run, _ in legs} == {RUN}
    with store.session(url) as s:
        assert all(r.excluded for r in store.find_runs(s, "kimik26-disagg", RUN, None))
    assert set_excluded(url, RUN, False, None) == legs
    with pytest.raises(InputError, match="--because must say why"):
        set_excluded(url, RUN, True, "  ")
    with pytest.raises(InputError, match="no run 1 in the knowledge base"):
        set_excluded(url, "1", True, "x")


def test_mark_and_evidence_say_what_they_did_and_a_refused_one_writes_nothing(url):
    said, changed = byhand.mark(url, PR, None, "image", POINT, "bad", "local run", "alice")
    assert said == f"marked image {POINT} bad (manual)" and isinstance(changed, dict)
    said, _ = byhand.evidence(url, PR, None, "runtime-args", "rules_out", "flags identical", "alice")
    assert said == "recorded manual evidence for runtime-args: rules_out"
    for bad, message in [(lambda: byhand.mark(url, PR, None, "image", "nope", "bad", "x"), "not a point"),
                         (lambda: byhand.mark(url, PR, None, "image", POINT, "maybe", "x"), "expected good or bad"),
                         (lambda: byhand.evidence(url, PR, None, "no-such", "supports", "x"), "no such hypothesis")]:
        with pytest.raises(InputError, match=message):
            bad()
    with store.session(url) as s:
        assert len(s.execute(select(m.BisectMark)).all()) == 1
        assert len(s.execute(select(m.ManualEvidence).where(m.ManualEvidence.source == "cli")).all()) == 1
