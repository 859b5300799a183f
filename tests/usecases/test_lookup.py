"""The use cases behind `runs list`, `bisect`, `similar` and `history`, called directly."""

from __future__ import annotations

import pytest

from triage.errors import InputError
from triage.kb import store
from triage.usecases import lookup
from triage.usecases.runs import delete

PR, RUN = 30433, "28903343346"


def test_the_lookups_return_what_the_commands_show(seeded):
    url = store.resolve_url(None)
    rows, _ = lookup.runs(url, PR, None)
    assert len(rows) == 33 and RUN in {r.run_id for r in rows}
    model = lookup.bisects(url, PR, None)
    assert [b["id"] for b in lookup.bisects(url, PR, None, ["image"])["bisects"]] == ["image"]
    assert len(model["bisects"]) >= 1
    with pytest.raises(InputError, match="--id 'nope': no such bisect; known: "):
        lookup.bisects(url, PR, None, ["nope"])
    with pytest.raises(InputError, match="--hypothesis 'nope': no such hypothesis"):
        lookup.similar(url, PR, None, ["nope"])
    targets, matches = lookup.similar(url, PR, None, undecided=True)
    assert matches == []  # no other investigation
    delete(url, RUN, "recorded on the wrong PR", pr=PR)
    found = lookup.history(url, PR, None)
    assert [(d.run_id, d.because) for d in found["deleted_runs"]] == [(RUN, "recorded on the wrong PR")] * len(
        found["deleted_runs"]) and found["deleted_runs"]
    assert found["changes"] and all(e.retired_at is not None for e in found["retired"])
