"""What a run's confounds add to its reading (``Readings.note``) is the same whether the
view looked its runs up together first (``Readings.expect_notes``, each part gone through
once for all of them) or asks one run at a time (each part indexed whole): on wide
investigations, for a recipe's first runs, the newest runs, runs of no confound and keys
of no run."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.wideinv import wide_investigation
from triage.rules.engine.evaluate import evaluate


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.integers(0, 2**16))
def test_notes_looked_up_together_are_those_looked_up_alone(seed: int, pick: int) -> None:
    inv, records = wide_investigation(seed, 400)
    alone, together = evaluate(inv).readings, evaluate(inv).readings
    shown = [row[0] for st_ in evaluate(inv).recipes for row in st_.shown]
    rnd = random.Random(pick)
    keys = shown + [r.key for r in rnd.sample(records, 60)] + ["no-such/run", f"{records[0].run_id}/no-such-config"]
    rnd.shuffle(keys)
    together.expect_notes(keys[: len(keys) // 2])  # some looked up ahead, the rest one at a time
    together.expect_notes(keys[len(keys) // 4:])  # overlapping: none of them twice
    said = [alone.note(k) for k in keys]
    assert [together.note(k) for k in keys] == said
    assert any(said) and not all(said)  # confounded runs and others among them
