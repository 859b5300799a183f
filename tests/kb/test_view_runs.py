"""The runs a view looks up by key (triage.render.runs): many keys' configs at once
say what each key's alone says."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.render.runs import ListRuns, SourceRuns
from triage.rules.engine.keys import SEP, Keys

NAMES = st.text(alphabet="ab/", min_size=1, max_size=4)


class _Source:
    """A run source as the view asks it: its configs, and runs by (run id, config)."""

    def __init__(self, runs: list, configs: list[str]) -> None:
        self.runs = {(r.run_id, r.config): r for r in runs}
        self._configs = configs
        self.asked = 0

    def configs(self) -> list[str]:
        return self._configs

    def by_keys(self, pairs: list) -> list:
        self.asked += 1
        return [self.runs[p] for p in pairs if p in self.runs]

    def refs_by_keys(self, pairs: list) -> list:
        self.asked += 1
        return [(r.run_id, r.config, r.url) for r in self.by_keys(pairs)]


def _run(run_id: str, config: str) -> SimpleNamespace:
    return SimpleNamespace(run_id=run_id, config=config, key=f"{run_id}/{config}", url=f"u/{run_id}/{config}")


@settings(max_examples=300, deadline=None)
@given(configs=st.lists(NAMES, max_size=4, unique=True),
       ids=st.lists(st.tuples(NAMES, st.integers(0, 3)), max_size=8),
       keys=st.lists(st.one_of(st.integers(0, 7), st.text(alphabet="ab/", max_size=6)), max_size=12),
       before=st.lists(st.integers(0, 11), max_size=4))
def test_configs_of_many_keys_are_each_keys_config(configs, ids, keys, before) -> None:
    """Run ids and configs that hold a "/" themselves, keys of no run, of an unknown
    config, keys looked up before: the batch says what each key says alone."""
    runs = list({(i, configs[c]): _run(i, configs[c]) for i, c in ids if c < len(configs)}.values())
    named = [runs[k].key if isinstance(k, int) and k < len(runs) else str(k) for k in keys]
    one, many = (SourceRuns(_Source(runs, configs + ["unseen"]), None) for _ in range(2))
    for view in (one, many):
        view.prefetch([named[i] for i in before if i < len(named)])
    expected = {c for k in named if (c := one.config_of(k)) is not None}
    as_text = SourceRuns(_Source(runs, configs + ["unseen"]), None)  # the keys as a piece reads them back
    as_text.prefetch([named[i] for i in before if i < len(named)])
    if "" not in named:  # an empty key joins to no key at all
        assert as_text.configs_of(Keys(SEP.join(named))) == expected
    assert many.configs_of(named) == expected
    every = ListRuns(runs)
    assert every.configs_of(named) == {c for k in named if (c := every.config_of(k)) is not None}
    # keys looked up by name only (the view's links) say what keys looked up whole say, and
    # name the runs the same
    whole, by_name = (SourceRuns(_Source(runs, configs + ["unseen"]), None) for _ in range(2))
    for view in (whole, by_name):
        view.prefetch([named[i] for i in before if i < len(named)])
    whole.prefetch(named)
    by_name.prefetch_refs(named)
    assert by_name.configs_of(named) == whole.configs_of(named)
    if "" not in named:
        assert by_name.configs_of(Keys(SEP.join(named))) == whole.configs_of(Keys(SEP.join(named)))
    assert [by_name.config_of(k) for k in named] == [whole.config_of(k) for k in named]
    for key in named:
        run = one.get(key)
        assert by_name.ref(key) == ((run.run_id, run.config, run.url) if run is not None else None)
        if sum(r.key == key for r in runs) == 1:  # a key two runs share: each view names one of them
            assert by_name.ref(key) == every.ref(key)
        assert by_name.get(key) is run or by_name.get(key) == run  # a run named by name is read whole when asked
    # runs the evaluation names already (a recipe's first runs): named alike, without a lookup
    # when their key is theirs alone
    primed = SourceRuns(_Source(runs, configs + ["unseen"]), None)
    primed.named_as((r.key, r.run_id, r.config, r.url) for r in runs[::2])
    primed.prefetch_refs(named)
    assert [primed.ref(k) for k in named] == [by_name.ref(k) for k in named]
    assert [primed.config_of(k) for k in named] == [by_name.config_of(k) for k in named]


def test_the_usual_keys_configs_ask_the_knowledge_base_nothing() -> None:
    runs = [_run(str(i), "base" if i % 2 else "eager") for i in range(1000)] + [_run("1", "fp8/eager")]
    source = _Source(runs, ["base", "eager", "fp8/eager"])
    view = SourceRuns(source, None)
    assert view.configs_of(r.key for r in runs[:1000]) == {"base", "eager"}
    assert source.asked == 0
    # "1/fp8/eager": run 1 of fp8/eager, or run 1/fp8 of eager; looked up
    assert view.configs_of(["1/fp8/eager"]) == {"fp8/eager"} and source.asked == 1


def test_runs_named_already_are_not_looked_up_unless_another_run_may_share_their_key() -> None:
    runs = [_run("1", "base"), _run("2", "eager"), _run("1", "fp8/eager"), _run("1/fp8", "eager")]
    source = _Source(runs, ["base", "eager", "fp8/eager"])
    view = SourceRuns(source, None)
    view.named_as((r.key, r.run_id, r.config, r.url) for r in runs[:3])
    view.prefetch_refs(["1/base", "2/eager"])
    assert source.asked == 0 and view.ref("2/eager") == ("2", "eager", "u/2/eager")
    view.prefetch_refs(["1/fp8/eager"])  # run 1 of fp8/eager, or run 1/fp8 of eager: looked up
    assert source.asked > 0 and view.ref("1/fp8/eager") == ("1", "fp8/eager", "u/1/fp8/eager")
