"""A selector's runs pooled once per evaluation (``Context.pool``): what selecting,
filtering and measuring them say, less the compared runs, and what they read noted
for every piece that asks, not only the first."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.rules.engine.context import FAIL_RATE, Context
from tests.support.bundled import through_storage
from triage.rules.engine.memo import Memo, track
from triage.rules.engine.records import Investigation, RunRec
from triage.rules.language.schema import InvestigationSpec, Selector

CONFIGS = ["a", "b", "c"]

runs_st = st.lists(st.builds(
    lambda i, config, node, status, value, excluded: RunRec(
        run_id=str(i), config=config, status=status,
        metrics={"acc": (value, 1319)} if value is not None else {},
        provenance={"node": node} if node is not None else {}, excluded=excluded),
    st.integers(0, 30), st.sampled_from(CONFIGS), st.one_of(st.none(), st.sampled_from(["n1", "n2"])),
    st.sampled_from(["passed", "failed", "crashed"]),
    st.one_of(st.none(), st.sampled_from([0.86, 0.88, 0.93, 0.94])), st.booleans()), max_size=40)

selector_st = st.builds(
    lambda config, run, node: Selector.model_validate(
        {k: v for k, v in (("config", config), ("run", run), ("provenance", node and {"node": node})) if v}),
    st.one_of(st.none(), st.sampled_from(CONFIGS), st.just(["a", "c"])),
    st.one_of(st.none(), st.sampled_from(["1", "2", "1/a"]), st.just(["3", "4", "5"])),
    st.one_of(st.none(), st.sampled_from(["n1", ["n1", "n2"]])))


def _ctx(runs: list[RunRec]) -> Context:
    spec = InvestigationSpec.model_validate({"id": "x", "pr": 1, "repo": "o/r", "title": "t", "metric": "acc",
                                             "gate": 0.9, "failure": ["failed"]})
    return Context(Investigation(spec=spec, runs=runs))


def _expected(ctx: Context, sel: Selector, metric: str, without: list[str]) -> tuple:
    every = [r for r in ctx.select(sel) if ctx.valid(r) and ctx.has_metric(r, metric)]
    runs = [r for r in every if r.key not in set(without)]
    measure = ctx.measure(runs, metric) if runs else None
    label = ctx.label(runs, counted=metric == FAIL_RATE) if runs else ""
    return len(runs), len(runs) < len(every), measure, label, list(dict.fromkeys(r.key for r in runs))


@settings(max_examples=300, deadline=None)
@given(runs_st, st.lists(selector_st, min_size=1, max_size=4), st.sampled_from(["acc", FAIL_RATE]),
       st.lists(st.integers(0, 39), max_size=5), st.one_of(st.none(), st.integers(0, 40)))
def test_a_pool_is_what_selecting_and_measuring_its_runs_say(runs, selectors, metric, left_out, seen) -> None:
    """Asked again (the same selector, or another of the same runs) with other runs left
    out, a pool says what working it out afresh says, in a context that never pooled.
    ``seen``: the pools of an evaluation that saw the first ``seen`` runs are kept (a
    config's pool as a piece, read back as the knowledge base gives it) and updated."""
    ctx = _ctx(runs)
    if seen is not None:
        before = _ctx(runs[:seen])
        before.memo = Memo()
        before.memo.start("k")
        for sel in selectors:
            before.pool(sel, metric)
        ctx.memo = through_storage(before.memo)
        ctx.memo.start("k")
    without = [runs[i].key for i in left_out if i < len(runs)]
    for sel in selectors + selectors:
        for left in ([], without):
            got = ctx.pool(sel, metric, left)
            want = _expected(_ctx(runs), sel, metric, left)
            assert got[0] == want[0] and got[1:5] == want[1:]
            # the piece that keeps the keys is named only for a config's pool, nothing left out
            assert got[5] is None or (not got[1] and got[5] == f"{sel.config}\x1f{metric}" and got[4] is not None)


def test_a_pooled_selection_notes_what_it_read_for_every_piece_that_asks() -> None:
    runs = [RunRec(str(i), "a" if i % 2 else "b", "passed", {"acc": (0.9 + i / 100, 1319)}) for i in range(6)]
    ctx = _ctx(runs)
    sel = Selector.model_validate({"config": ["a", "b"]})
    reads = []
    for _ in range(2):  # the second piece finds the pool made: it must note the same reads
        with track(ctx) as seen:
            assert ctx.pool(sel, "acc")[0] == 6
        reads.append(dict(seen))
    assert reads[0] == reads[1] and {("c", "a"), ("c", "b")} <= set(reads[1])
    with track(ctx) as outer:  # a piece around the one that pools sees its reads too
        with track(ctx) as inner:
            ctx.pool(Selector.model_validate({"config": "a", "provenance": {"node": "n1"}}), "acc")
    assert ("c", "a") in inner and inner == outer


def test_a_pool_is_of_its_own_evaluation() -> None:
    """The next evaluation (a new context) pools the runs as they are then: a new run of
    the config is in it."""
    runs = [RunRec(str(i), "a", "passed", {"acc": (0.9, 1319)}) for i in range(3)]
    sel = Selector.model_validate({"config": "a"})
    assert _ctx(runs).pool(sel, "acc")[2].value == 0.9
    more = runs + [RunRec("9", "a", "passed", {"acc": (0.6, 1319)})]
    again = _ctx(more).pool(sel, "acc")
    assert again[0] == 4 and again[2].value == pytest.approx(0.825)
