"""Incremental evaluation on wide investigations: random shapes from ``bench/wide.py``
(recipes on recipes, rules over ad hoc configs, three bisects, three metrics, runs
that each record their own provenance), at small sizes.

As in test_incremental.py, edits arrive one after another, and at every step the
evaluation that reuses the stored pieces must equal, to the byte, a whole one.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace as changed  # a run with some fields changed

from bench import wide
from tests.support.bundled import edited_alike
from tests.support.wideinv import wide_investigation
from triage.rules.engine.evaluate import evaluate


edit = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 10_000), st.sampled_from(["passed", "failed", "crashed", "error"]),
              st.sampled_from([0.87, 0.88, 0.92, 0.95]), st.booleans(), st.booleans()),
    st.tuples(st.just("value"), st.integers(0, 10_000), st.sampled_from([0.87, 0.93, 0.95])),
    st.tuples(st.just("exclude"), st.integers(0, 10_000)),
    st.tuples(st.just("delete"), st.integers(0, 10_000)),
)


def _apply(runs: list, e: tuple, step: int) -> list:
    """One edit: a new run shaped like an existing one (its config, maybe its provenance
    with another sha), a changed reading, an exclusion, a deletion."""
    runs = list(runs)
    i = e[1] % len(runs)
    r = runs[i]
    if e[0] == "add":
        _, _, status, value, new_sha, newest = e
        prov = dict(r.provenance, sha=f"{step:07x}") if new_sha else r.provenance
        metrics = {} if status in ("crashed", "error") else {**r.metrics, wide.METRIC: (value, wide.N)}
        when = "2027-01-01T00:00:00+00:00" if newest else r.time
        runs.append(changed(r, run_id=f"9{step:04d}", status=status, metrics=metrics, provenance=prov, time=when,
                            signature="init-abort" if status == "error" else None))
    elif e[0] == "value" and wide.METRIC in r.metrics:
        runs[i] = changed(r, metrics={**r.metrics, wide.METRIC: (e[2], wide.N)})
    elif e[0] == "exclude":
        runs[i] = changed(r, excluded=not r.excluded, excluded_reason="drained node")
    elif e[0] == "delete" and len(runs) > 1:
        del runs[i]
    return runs


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6), st.sampled_from([150, 400]), st.lists(edit, min_size=1, max_size=5))
def test_reusing_pieces_equals_a_whole_evaluation_on_wide_shapes(seed: int, size: int, edits: list) -> None:
    inv, records = wide_investigation(seed, size)
    edited_alike(inv, list(records), edits, _apply)


def test_a_wide_shape_is_wide_and_varied_by_its_seed() -> None:
    """What the generator promises at a small size: matrix runs sharing a workflow run id,
    crashed runs, three metrics, every bisect's kind; and two seeds give two shapes."""
    inv, runs = wide_investigation(1, 400)
    assert len({r.config for r in runs if r.run_id == runs[0].run_id}) >= 1
    assert any(len({r.config for r in runs if r.run_id == x.run_id}) > 1 for x in runs)
    assert any(r.status == "crashed" for r in runs) and {"acc", "throughput", "latency"} <= {
        m for r in runs for m in r.metrics}
    assert [b.axis for b in inv.bisects] == ["sha", "image", ["python", "image"]]
    other, _ = wide_investigation(2, 400)
    assert (len(inv.recipes), len(inv.rules), len(inv.hypotheses)) != (
        len(other.recipes), len(other.rules), len(other.hypotheses))
    ev = evaluate(inv)
    assert ev.confounds and ev.recipes and ev.suggestions


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 6))
def test_rivals_from_the_table_are_those_each_recipe_tells_apart(seed: int) -> None:
    """The table (kept through its stored form) tells two hypotheses apart exactly where
    a recipe's prediction or a rule over its runs reads them differently."""
    import json

    from triage.rules.next.discriminate import RIVALS, _configs_read, reading, rival_table, telling_apart

    inv, _ = wide_investigation(seed, 150)
    table = rival_table(inv)
    assert RIVALS.decode(json.loads(json.dumps(RIVALS.encode(table)))) == table
    over = {r.id: [x for x in inv.rules if x.then != "inconclusive" and r.id in _configs_read(x.when)]
            for r in inv.recipes}
    hyps = [h.id for h in inv.hypotheses]
    for a in hyps:
        for b in hyps:
            want = [r.id for r in inv.recipes if reading(r, a, over[r.id]) != reading(r, b, over[r.id])]
            assert telling_apart(inv, a, b, RIVALS.decode(RIVALS.encode(table))) == want, (a, b)


def test_the_confound_warnings_are_kept_with_each_recipes_confounds(monkeypatch) -> None:
    """What each recipe's confounds say in the warnings is worked out with its piece and kept:
    an evaluation that reuses the pieces groups no confounded run again (a wide investigation
    at a million runs spent 0.15 s of each add-run on it), and says what a whole one says."""
    from tests.support.bundled import through_storage
    from triage.rules.engine.memo import Memo
    from triage.rules.engine.records import Confounds

    inv, records = wide_investigation(2, 400)
    memo = Memo()
    whole = evaluate(replace(inv, runs=list(records)), memo)
    said = [w for w in whole.warnings if w.kind == "confound"]
    assert said
    regrouped: list[int] = []
    plain = Confounds.groups
    monkeypatch.setattr(Confounds, "groups", lambda self: regrouped.append(1) or plain(self))
    again = evaluate(replace(inv, runs=list(records)), through_storage(memo))
    assert [w for w in again.warnings if w.kind == "confound"] == said and not regrouped


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([1, 2, 6]), st.lists(edit, min_size=2, max_size=6))
def test_a_rule_over_several_configs_pooled_equals_a_whole_evaluation(seed: int, edits: list) -> None:
    """Edits to the runs a rule over several configs reads (its configs' and its base's),
    one after another: the rule worked out again from the configs' pools and facts says, at
    every step, to the byte, what a whole evaluation says."""
    inv, records = wide_investigation(seed, 400)
    rules = [r for r in inv.rules if isinstance(r.when.config, list) and len(r.when.config) > 1]
    read = {c for r in rules for c in r.when.config} | {inv.spec.base}

    def apply(runs: list, e: tuple, step: int) -> list:
        # the edit's run among those the rules read (the index counted in them)
        at = [i for i, r in enumerate(runs) if r.config in read]
        return _apply(runs, (e[0], at[e[1] % len(at)], *e[2:]), step)

    assert rules
    edited_alike(inv, list(records), edits, apply)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 6))
def test_an_item_is_marked_confounded_when_a_run_it_rests_on_is(seed: int) -> None:
    """Items are looked through for the confounded runs of the configs they read alone: the
    mark is the one a look at every confounded run gives."""
    from triage.rules.engine.memo import Memo

    inv, _ = wide_investigation(seed, 400)
    ev = evaluate(inv, Memo())  # kept in pieces: each item knows the configs its runs can be of
    confounded = {c.run for c in ev.confounds}
    assert confounded
    marked = [e for e in ev.evidence if "confounded" in e.flags]
    assert marked
    for e in ev.evidence:
        assert ("confounded" in e.flags) == (not confounded.isdisjoint(e.runs)), (e.rule, e.hypothesis)
