"""A config's runs pooled as the other side of a comparison, kept as a piece of their own
(``triage.rules.engine.pools``): after a run is added to that config, the pieces that
compare with it are worked out again from the pool updated with the new run, without
reading the config's thousands of runs, and say, to the byte, what a whole evaluation says."""

from __future__ import annotations

from dataclasses import replace

import pytest
from msgspec.structs import replace as changed  # a run with some fields changed

from tests.support.bundled import INV, RUNS, outcome_of, through_storage
from tests.support.wideinv import wide_investigation
from triage.rules.engine.evaluate import evaluate
from triage.rules.engine.memo import Memo
from triage.rules.engine.source import ListSource


class _Counting(ListSource):
    """A list of runs that counts which configs the engine read whole (not what working out
    a fingerprint or the runs appended reads here: a knowledge base reads neither)."""

    def __init__(self, runs: list) -> None:
        super().__init__(runs)
        self.whole: list[str] = []
        self._inside = False

    def config(self, name: str) -> list:
        if not self._inside:
            self.whole.append(name)
        return super().config(name)

    def _quietly(self, method, *args):
        self._inside = True
        try:
            return method(*args)
        finally:
            self._inside = False

    def appended(self, config: str, fingerprint: str):
        return self._quietly(super().appended, config, fingerprint)

    def fingerprint(self, token):
        return self._quietly(super().fingerprint, token)


def _added(inv, runs: list, config: str, value: float) -> list:
    """A new run of ``config`` like one of its runs, without provenance (as ``add-run`` records one
    given by hand): the bisects over the config, which read its runs of some provenance, hold."""
    like = next(r for r in runs if r.config == config and r.status in ("passed", "failed") and r.metrics)
    metric = inv.spec.metric
    new = changed(like, run_id="99999", status="failed", time="2027-01-01T00:00:00+00:00", provenance={},
                  metrics={**like.metrics, metric: (value, like.metrics[metric][1])})
    return [*runs, new]


def _reading_the_pool(memo: Memo, config: str) -> set[str]:
    """The pieces that compared with ``config``'s pool (their read of it: ``q``, config and metric)."""
    return {name for name, (reads, _) in memo.pieces.items()
            if any(kind == "q" and what.partition("\x1f")[0] == config for kind, what, _ in reads)}


@pytest.mark.parametrize("seed", [1, 2, 6])  # shapes whose rules or predictions compare with the base
def test_a_run_added_to_a_base_reads_none_of_its_runs_whole(seed: int) -> None:
    inv, records = wide_investigation(seed, 400)
    base = inv.spec.base
    memo = Memo()
    evaluate(replace(inv, runs=list(records)), memo)
    comparing = _reading_the_pool(memo, base)
    assert comparing and any(n.startswith("q:") for n in memo.pieces), "the base is pooled as a piece of its own"
    runs = _added(inv, list(records), base, 0.881)
    source = _Counting(runs)
    memo = through_storage(memo)
    got = evaluate(replace(inv, source=source), memo)
    # nor the runs of a recipe whose prediction compared with it: the whole evaluation pooled
    # that side too, from the runs it read anyway
    predicting = {n[2:].partition("\x1f")[0] for n in comparing if n.startswith("p:")}
    assert base not in source.whole and not predicting & set(source.whole), source.whole
    if seed != 1:  # seed 1's base is compared with by rules alone
        assert predicting
    assert comparing <= set(memo.worked)  # the rules and predictions compared with it, again
    assert outcome_of(got) == outcome_of(evaluate(replace(inv, runs=runs)))
    # and so again from the next one on
    runs = [*runs, changed(runs[-1], run_id="99998", time="2027-01-02T00:00:00+00:00")]
    source = _Counting(runs)
    memo = through_storage(memo)
    got = evaluate(replace(inv, source=source), memo)
    assert base not in source.whole and not predicting & set(source.whole), source.whole
    assert outcome_of(got) == outcome_of(evaluate(replace(inv, runs=runs)))


def test_the_bundled_pool_is_updated_from_a_new_run_of_its_config() -> None:
    memo = Memo()
    evaluate(replace(INV, runs=RUNS), memo)
    pools = [n for n in memo.pieces if n.startswith("q:")]
    assert pools, memo.pieces.keys()
    config = pools[0][2:].partition("\x1f")[0]
    comparing = _reading_the_pool(memo, config)
    runs = _added(INV, list(RUNS), config, 0.94)
    memo = through_storage(memo)
    source = _Counting(runs)
    got = evaluate(replace(INV, source=source), memo)
    assert config not in source.whole, source.whole
    assert pools[0] in memo.worked and comparing <= set(memo.worked)
    assert outcome_of(got) == outcome_of(evaluate(replace(INV, runs=runs)))


def test_a_pool_compared_with_itself_reads_its_runs() -> None:
    """A comparison whose subject's runs are among the pool's leaves them out: the pool's runs
    are read then, and say what a whole evaluation says."""
    from triage.rules.engine.context import Context
    from triage.rules.language.schema import Selector

    inv, records = wide_investigation(1, 150)
    base = inv.spec.base
    memo = Memo()
    ctx = Context(replace(inv, runs=list(records)))
    ctx.memo = memo
    memo.start("k")
    sel = Selector.model_validate({"config": base})
    own = [r.key for r in records if r.config == base][:2]
    plain = Context(replace(inv, runs=list(records)))
    for without in ([], own):
        got = ctx.pool(sel, inv.spec.metric, without)
        want = plain.pool(sel, inv.spec.metric, without)
        assert (bool(got[0]), *got[1:5]) == (bool(want[0]), *want[1:5])
        assert got[5] == (None if without else f"{base}\x1f{inv.spec.metric}")  # kept whole: named by its piece


def test_a_pool_no_piece_asked_for_is_kept_for_the_next_evaluation() -> None:
    """An evaluation whose pieces that compare with a pool are all reused keeps the pool's
    piece as it is: the one after, which compares with it again, updates it."""
    inv, records = wide_investigation(2, 400)
    base = inv.spec.base
    memo = Memo()
    evaluate(replace(inv, runs=list(records)), memo)
    pool = next(n for n in memo.pieces if n.startswith(f"q:{base}\x1f"))
    other = next(c for c in dict.fromkeys(r.config for r in records) if c != base and not c.startswith(base))
    runs = _added(inv, list(records), other, 0.9)
    memo = through_storage(memo)
    evaluate(replace(inv, runs=runs), memo)
    assert pool in memo.pieces and pool not in memo.worked
    runs = _added(inv, runs, base, 0.881)
    source = _Counting(runs)
    memo = through_storage(memo)
    got = evaluate(replace(inv, source=source), memo)
    assert base not in source.whole and pool in memo.worked
    assert outcome_of(got) == outcome_of(evaluate(replace(inv, runs=runs)))


def test_a_pool_of_a_config_named_with_the_separator_holds_while_its_runs_do() -> None:
    """A config may be named with any text, the separator of a pool's name too (a metric's
    name holds none): what a piece read of its pool is of that config."""
    from triage.rules.engine.context import Context
    from triage.rules.engine.memo import _holds
    from triage.rules.engine.pools import pooled, token

    config = "odd\x1fconfig"
    runs = [changed(RUNS[0], run_id=str(i), config=config) for i in range(3)]
    ctx = Context(replace(INV, runs=runs))
    kind, what = token(config, "gsm8k")
    fp = ctx.source.fingerprint(("c", config))
    assert not _holds(ctx, [[kind, what, fp]])  # no such pool kept: a piece that named it is worked out again
    ctx.memo.start("k")
    pooled(ctx, config, "gsm8k")
    assert _holds(ctx, [[kind, what, fp]]) and not _holds(ctx, [[kind, what, "another"]])
    assert _configs_read_of(kind, what) == frozenset({config})


def _configs_read_of(kind: str, what: str) -> frozenset:
    from triage.rules.engine.evaluate import _configs_read

    return _configs_read(([[kind, what, ""]], None))


@pytest.mark.parametrize("seed", [1, 2, 6])  # shapes with a rule over a recipe and an ad hoc config
def test_a_rule_over_several_configs_compared_with_the_base_reads_none_of_their_runs(seed: int) -> None:
    """A rule of a recipe and an ad hoc config (``config: [A, B]``) worked out again because its
    base changed takes their pools and facts, as a prediction does: from the second run added
    to the base on (the first pools them), none of their runs is read, and it says, to the
    byte, what a whole evaluation says."""
    inv, records = wide_investigation(seed, 400)
    rules = [r for r in inv.rules if isinstance(r.when.config, list) and len(r.when.config) > 1]
    assert rules, "the shape has a rule over several configs"
    over = {c for rule in rules for c in rule.when.config}
    memo = Memo()
    runs = list(records)
    evaluate(replace(inv, runs=runs), memo)
    for step in range(3):
        runs = _added(inv, runs, inv.spec.base, 0.881 + step / 1000)
        runs[-1] = changed(runs[-1], run_id=f"9999{step}", time=f"2027-01-0{step + 1}T00:00:00+00:00")
        source = _Counting(runs)
        memo = through_storage(memo)
        got = evaluate(replace(inv, source=source), memo)
        read = set(source.whole)  # by the evaluation (what it says is read from the source after)
        assert {f"r:{rule.id}" for rule in rules} <= set(memo.worked)  # compared with the base: again
        assert not step or not over & read, sorted(over & read)
        assert outcome_of(got) == outcome_of(evaluate(replace(inv, runs=runs)))


def test_a_rule_over_several_configs_one_of_them_without_a_valid_run_reads_as_a_whole_evaluation() -> None:
    """Of a rule's configs, one has no valid run (all excluded): the pooled runs are those of
    the other, labelled as one config's (with their count), as a whole evaluation says."""
    inv, records = wide_investigation(1, 400)
    rule = next(r for r in inv.rules if isinstance(r.when.config, list) and len(r.when.config) > 1)
    gone = rule.when.config[-1]
    runs = [changed(r, excluded=True, excluded_reason="drained node") if r.config == gone else r for r in records]
    assert any(r.config == gone for r in runs) and any(r.config == rule.when.config[0] for r in runs)
    memo = Memo()
    evaluate(replace(inv, runs=runs), memo)
    for step in range(2):
        runs = _added(inv, runs, inv.spec.base, 0.881 + step / 1000)
        runs[-1] = changed(runs[-1], run_id=f"9999{step}", time=f"2027-01-0{step + 1}T00:00:00+00:00")
        memo = through_storage(memo)
        got = evaluate(replace(inv, runs=runs), memo)
        assert f"r:{rule.id}" in memo.worked
        assert outcome_of(got) == outcome_of(evaluate(replace(inv, runs=runs)))
