"""A whole evaluation worked out a config at a time (``evaluate.work_through``, what a
large import does in one process): each config's runs are let go once the units that
read them are worked out, the evaluation that takes the pieces in reads hardly a run
again, and it equals, to the byte, a whole evaluation."""

from __future__ import annotations

from dataclasses import replace

import pytest
from msgspec.structs import replace as changed  # a run with some fields changed

from tests.support.bundled import INV, outcome_of
from tests.support.wideinv import wide_investigation
from triage.rules.engine.evaluate import evaluate, work_through
from triage.rules.engine.memo import Memo
from triage.rules.engine.source import ListSource


class _Forgetting(ListSource):
    """A list of runs that says which configs are held: read in batches, let go one at a time."""

    def __init__(self, runs: list) -> None:
        super().__init__(runs)
        self.held: set[str] = set()
        self.most = 0  # the most configs held at once
        self.reads: list[str] = []  # every config asked for, in order
        self.forgotten: list[str] = []
        self.batches: list[list[int]] = []  # the runs of each config read in one go, per go

    def read(self, configs: list[str]) -> None:
        self.held.update(configs)
        self.most = max(self.most, len(self.held))
        self.batches.append([self.size(c) for c in configs])

    def size(self, config: str) -> int:
        return len(ListSource.config(self, config))  # not a read

    def forget(self, config: str) -> None:
        self.held.discard(config)
        self.forgotten.append(config)

    def config(self, name: str) -> list:
        self.reads.append(name)
        self.held.add(name)
        self.most = max(self.most, len(self.held))
        return super().config(name)


def _check(inv) -> _Forgetting:
    source = _Forgetting(list(inv.runs))
    inv = replace(inv, source=source)
    memo = Memo()
    work_through(inv, memo, source.read, source.forget, source.size)
    source.reads.clear()
    got = evaluate(inv, memo)
    # every piece taken in: the runs read again are only those a suggestion looks at outside
    # the pieces (whether a rule's config has a valid run yet), a config or two
    assert len(set(source.reads)) <= max(2, len(source.configs()) // 10), source.reads
    whole = Memo()
    assert outcome_of(got) == outcome_of(evaluate(replace(inv, source=None), whole))
    assert memo.pieces == whole.pieces and sorted(memo.worked) == sorted(whole.worked)
    # each config let go once, a recipe's base too (its runs pooled once, as a piece of their own)
    assert len(source.forgotten) == len(set(source.forgotten))
    assert set(source.forgotten) == set(source.configs())
    return source


def test_the_bundled_investigation_a_config_at_a_time() -> None:
    _check(INV)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_wide_investigations_a_config_at_a_time_hold_a_part_of_their_configs(seed: int, monkeypatch) -> None:
    from triage.rules.engine import evaluate as module

    monkeypatch.setattr(module, "_READ_AT_ONCE", 4)  # (64 at full size: these have a few dozen configs)
    inv, _ = wide_investigation(seed, 1_500)
    source = _check(inv)
    configs = len(source.configs())
    # the bisects and rules read what they read first, held until the config's own turn;
    # the others are read four at a time and let go
    assert configs > 20 and source.most < configs - 4, (source.most, configs)


def test_a_config_named_with_the_separator_of_piece_names() -> None:
    """A config may be named with any text, the separator of a prediction's piece name too."""
    run = changed(INV.runs[0], config="odd\x1fconfig", run_id="99")
    _check(replace(INV, runs=[*INV.runs, run]))


def test_configs_are_read_in_goes_of_about_so_many_runs(monkeypatch) -> None:
    """An investigation's first configs (its base, its nightlies) may hold most of its runs:
    a go reads configs until it holds about ``_READ_RUNS`` runs, not a number of configs."""
    from triage.rules.engine import evaluate as module

    monkeypatch.setattr(module, "_READ_RUNS", 150)
    inv, _ = wide_investigation(1, 1_500)
    source = _check(inv)
    assert len(source.batches) > 3
    for sizes in source.batches:  # the last config read may take a go past the limit
        assert sum(sizes[:-1]) < 150 and len(sizes) <= module._READ_AT_ONCE, sizes
