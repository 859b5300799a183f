"""What a config's runs say, updated from runs added since instead of worked out from all of them.

After ``add-run`` the evaluation updates the stored facts of the new run's
config from that run alone (``triage.rules.engine.facts.updated``) when it is the
newest of the config's runs or has no time; anything else (a run older than
the newest, a change to an earlier run) works them out from every run.  The
update must give, to the byte, what working them out again gives.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace as changed  # a run with some fields changed

from triage.rules.engine.context import Context
from triage.rules.engine.facts import FACTS, config_facts, updated
from triage.rules.engine.keys import Keys, keys_text
from triage.rules.engine.source import ListSource
from tests.support.bundled import INV, RUNS

CONFIG = "kimik26-fp8-1k1k-1p1d"
BASE = [r for r in RUNS if r.config == CONFIG]

run = st.tuples(
    st.sampled_from(["newest", "none", "tie", "older"]),
    st.sampled_from(["passed", "failed", "crashed", "error", "excluded"]),
    st.sampled_from([0.86, 0.879, 0.9, 0.93, 0.944, 0.95, 93.0]),
    st.sampled_from([{}, {"image": "a"}, {"image": "b"}, {"image": "a", "sha": "1"}, {"sha": "1", "image": "a"}]),
    st.booleans(),  # a known failure
    st.sampled_from([None, 1319, 200]),
)


def _run(i: int, spec: tuple, before: list):
    when, status, value, prov, sig, n = spec
    times = sorted(r.time for r in before if r.time)
    time = {"newest": f"2027-01-01T00:00:{i % 60:02d}+00:00" if not times else _after(times[-1]),
            "none": None, "tie": times[-1] if times else None,
            "older": "2020-01-01T00:00:00+00:00"}[when]
    excluded = status == "excluded"
    status = "failed" if excluded else status
    metrics = {} if status in ("crashed", "error") else {"gsm8k": (value, n), **({"ttft": (1.5, None)} if i % 3 else {})}
    return changed(BASE[0], run_id=f"new-{i}", status=status, metrics=metrics, provenance=dict(prov), time=time,
                   excluded=excluded, excluded_reason="drained" if excluded else None,
                   signature="init-abort" if sig and status in ("crashed", "error") else None, note=None)


def _after(time: str) -> str:
    return f"{int(time[:4]) + 1}{time[4:]}"  # a year later


def _facts(runs: list, config: str = CONFIG):
    ctx = Context(replace(INV, runs=runs, source=ListSource(runs)))
    return ctx, FACTS.decode(FACTS.encode(config_facts(config, ctx)))  # as stored and read back


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(BASE)), st.lists(run, min_size=1, max_size=12))  # more than 8: the keys split
def test_an_update_is_what_all_the_runs_say(keep: int, added: list) -> None:
    others = [r for r in RUNS if r.config != CONFIG]
    before = others + BASE[:keep]
    new: list = []
    for i, spec in enumerate(added):
        new.append(_run(i, spec, [r for r in before + new if r.config == CONFIG]))
    _, old = _facts(before)
    ctx, whole = _facts(before + new)
    got = updated(old, new, ctx)
    mine = [r for r in before if r.config == CONFIG]
    simple = True  # each new run the newest so far (strictly) or without a time
    for r in new:
        newest = max((x.time for x in mine if x.time), default=None)
        simple = simple and (r.time is None or newest is None or r.time > newest)
        mine.append(r)
    if simple:
        assert got is not None
    if got is not None:
        assert FACTS.encode(got) == FACTS.encode(whole)


def test_newest_runs_are_placed_among_the_stored_provenances_without_decoding_them() -> None:
    """A config whose every run records its own sha has a provenance per run: an add-run
    decoded them all (255,000 at a million runs) to place the new run's. The newest runs'
    provenances are found, and added, as JSON texts; the newest base run's provenance,
    which every recipe compares with, is kept with the facts, the list not looked into."""
    from triage.rules.engine.confounds import newest_base
    from triage.rules.engine.lazy import Lazy

    before = [r for r in RUNS if r.config != CONFIG] + BASE
    provs = [{"image": "a"}, {"sha": "1", "image": "a"}, {"image": "a", "sha": "1"}, {"image": "a"}]
    new: list = []
    for i, prov in enumerate(provs):
        new.append(_run(i, ("newest", "passed", 0.9, prov, False, 1319), [r for r in before + new if r.config == CONFIG]))
    _, old = _facts(before)
    ctx, whole = _facts(before + new)
    assert isinstance(old.provenances, Lazy)
    got = updated(old, new, ctx)
    assert got is not None and FACTS.encode(got) == FACTS.encode(whole)
    assert isinstance(got.provenances, Lazy) and got.provenances._items is None and old.provenances._items is None
    assert list(got.provenances) == list(whole.provenances)
    # the newest valid run's provenance, kept with the facts (stored, then read back)
    fresh = FACTS.decode(FACTS.encode(got))
    assert fresh.newest_provenance == whole.newest_provenance == tuple(new[-1].provenance.items())
    assert fresh.provenances._items is None
    # a run without a time goes in among the oldest: after one of its provenance, the places hold
    first = _run(10, ("none", "passed", 0.9, {"image": "z"}, False, 1319), before)
    _, old = _facts(before + [first])
    second = _run(11, ("none", "passed", 0.91, {"image": "z"}, False, 1319), before + [first])
    ctx2, whole = _facts(before + [first, second])
    again = updated(old, [second], ctx2)
    assert again is not None and FACTS.encode(again) == FACTS.encode(whole)
    assert again.provenances._items is None and old.provenances._items is None
    recipe = next(r for r in INV.recipes if r.base == CONFIG and not r.base_run)
    ctx.memo.piece = lambda _ctx, _name, compute, *a, **k: fresh  # its facts, as stored
    assert newest_base(recipe, ctx) == (fresh.valid[-1], dict(new[-1].provenance))
    assert fresh.provenances._items is None


def test_a_run_of_a_new_build_or_of_the_first_is_placed_without_going_through_the_stored_ones(monkeypatch) -> None:
    """The stored provenances are looked into as one text first: a provenance it does not hold
    (a run of a new build) is new, one it starts with is the first and one it ends with the last;
    none goes through the list item by item (73,000 at a million runs), nor does a new build's
    group of repeats go through the stored groups.  The places are in the order recorded, so a
    run without a time of a new provenance (the oldest by time) takes the next place: nothing is
    renumbered.  The places stay those of the whole facts."""
    from triage.rules.engine.lazy import Lazy

    looked: list[int] = []
    raws = Lazy.raws
    monkeypatch.setattr(Lazy, "raws", lambda self: looked.append(id(self)) or raws(self))
    before = [r for r in RUNS if r.config != CONFIG] + BASE
    first = _run(10, ("none", "passed", 0.9, {"image": "z"}, False, 1319), before)
    middle = dict(BASE[1].provenance)  # neither the first provenance recorded nor the last
    timed = _run(30, ("newest", "passed", 0.9, {"image": "t"}, False, 1319), before)
    cases = [("none", {"image": "z"}, [first]), ("none", {"image": "z", "sha": "9"}, [first]),
             ("newest", {"image": "new"}, []), ("newest", {"image": "new"}, [first]),
             ("newest", {"image": "z"}, [first]), ("none", {"image": "y"}, []), ("none", {}, []),
             ("none", dict(BASE[0].provenance), [first]), ("newest", middle, [first]),
             ("none", {"image": "y"}, [timed]), ("none", {"image": "t"}, [timed])]
    for i, (when, prov, earlier) in enumerate(cases):
        run = _run(20 + i, (when, "passed", 0.91, prov, False, 1319), before + earlier)
        _, old = _facts(before + earlier)
        ctx, whole = _facts(before + earlier + [run])
        looked.clear()
        got = updated(old, [run], ctx)
        assert got is not None and FACTS.encode(got) == FACTS.encode(whole), (when, prov)
        assert list(got.provenances) == list(whole.provenances) and got.valid_provenance == whole.valid_provenance
        if prov != middle:
            assert id(old.provenances) not in looked, (when, prov)
        if prov == {"image": "new"}:
            assert id(old.groups) not in looked, (when, prov)


def test_new_runs_join_the_stored_groups_of_repeats_without_decoding_them() -> None:
    """A config whose runs record many provenances has a group of repeats per provenance (21,000
    for the base of a wide investigation at a million runs): an add-run decoded them all to
    change one. A new run's group is found among the stored groups' JSON texts, and changed or
    added there; the warnings of disagreeing repeats are those of the whole facts."""
    from triage.rules.engine.lazy import Lazy

    before = [r for r in RUNS if r.config != CONFIG] + BASE
    mine = [r for r in before if r.config == CONFIG]
    known = dict(next(r for r in mine if r.metrics.get("gsm8k")).provenance)
    specs = [(0.5, known, 1319), (0.951, known, 1319), (0.9, {"image": "q"}, 1319), (0.95, {"image": "q"}, 200),
             (0.9, {"image": "q"}, 1319)]
    for cut in range(1, len(specs) + 1):
        new: list = []
        for i, (value, prov, n) in enumerate(specs[:cut]):
            new.append(_run(i, ("newest", "passed", value, prov, False, n),
                            [r for r in before + new if r.config == CONFIG]))
        _, old = _facts(before)
        ctx, whole = _facts(before + new)
        assert isinstance(old.groups, Lazy)
        got = updated(old, new, ctx)
        assert got is not None and FACTS.encode(got) == FACTS.encode(whole), cut
        assert isinstance(got.groups, Lazy) and got.groups._items is None and old.groups._items is None
        assert list(got.groups) == list(whole.groups) and got.repeats == whole.repeats
    assert any("disagree" in text for _, text in whole.repeats)  # the first new run's group says so


def test_many_runs_without_a_time_go_in_before_the_timed_ones() -> None:
    """Past a few runs added, the keys are split once and the rest go into the list."""
    before = [r for r in RUNS if r.config != CONFIG] + BASE
    new: list = []
    for i in range(12):
        new.append(_run(i, ("none" if i % 4 else "newest", "passed" if i % 3 else "crashed", 0.9, {}, False, 1319),
                        [r for r in before + new if r.config == CONFIG]))
    _, old = _facts(before)
    ctx, whole = _facts(before + new)
    got = updated(old, new, ctx)
    assert got is not None and FACTS.encode(got) == FACTS.encode(whole)


def test_a_run_older_than_the_newest_is_worked_out_from_all_runs() -> None:
    timed = RUNS + [_run(0, ("newest", "passed", 0.9, {}, False, 1319), BASE)]
    _, old = _facts(timed)
    for when in ("older", "tie"):
        late = _run(1, (when, "passed", 0.9, {}, False, 1319), [r for r in timed if r.config == CONFIG])
        ctx, _ = _facts(timed + [late])
        assert updated(old, [late], ctx) is None, when


def test_the_facts_keep_every_key_as_one_text() -> None:
    _, f = _facts(RUNS)
    assert isinstance(f.keys, Keys) and isinstance(f.valid, Keys)
    assert list(f.keys) == [k for k in f.keys.text.split("\x00")] and len(f.keys) == len(BASE)
    assert f.keys[-1] == list(f.keys)[-1] and f.keys[:2] == tuple(list(f.keys)[:2])


@given(st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1),
                min_size=0, max_size=5), st.text(st.characters(blacklist_characters="\x00",
                                                               blacklist_categories=("Cs",)), min_size=1))
def test_a_configs_keys_are_stored_as_their_ids_and_read_back_whole(ids: list, config: str) -> None:
    from triage.rules.engine.facts import _ids, _keys

    keys = [f"{i}/{config}" for i in ids]
    assert tuple(_keys(_ids(keys, config), config)) == tuple(keys)
    assert tuple(_keys(_ids(Keys(keys_text(keys)), config), config)) == tuple(keys)


@given(st.lists(st.tuples(st.sampled_from([None, "2026-01-01", "2026-01-02", "2026-01-03"]), st.booleans()),
                max_size=12))
def test_trailing_invalid_runs_are_counted_as_a_newest_first_walk_reads_them(runs: list) -> None:
    from triage.rules.engine.context import _run_order
    from triage.rules.engine.facts import _trailing

    recs = [changed(BASE[0], run_id=f"t{i}", time=when) for i, (when, _) in enumerate(runs)]
    why = {id(r): "crashed" for r, (_, ok) in zip(recs, runs) if not ok}  # those that decide nothing
    walked = 0
    for r in sorted(recs, key=_run_order, reverse=True):  # what the count means
        if id(r) not in why:
            break
        walked += 1
    assert _trailing(sorted(recs, key=_run_order), why) == walked


def test_an_evaluation_looks_into_each_configs_provenances_without_keeping_them() -> None:
    """Each run's provenance (a wide investigation's runs each record their own sha) is
    looked into to find a recipe's confounds and its base's newest run, then let go: the
    evaluation does not hold every run's provenance decoded to its end."""
    from dataclasses import replace

    from tests.support.bundled import outcome_of
    from tests.support.wideinv import wide_investigation
    from triage.rules.engine.evaluate import evaluate
    from triage.rules.engine.lazy import Lazy
    from triage.rules.engine.memo import Memo

    inv, records = wide_investigation(2, 400)
    memo = Memo()
    ev = evaluate(replace(inv, runs=list(records)), memo)
    facts = [v for name, v in memo._values.items() if name.startswith("f:")]
    assert ev.confounds and facts and all(isinstance(f.provenances, Lazy) for f in facts)
    assert [f.config for f in facts if f.provenances._items is not None] == []
    assert outcome_of(ev) == outcome_of(evaluate(replace(inv, runs=list(records))))


def test_a_group_of_repeats_is_found_by_where_its_text_starts_whatever_its_characters() -> None:
    """A new run's group is told among the stored groups by where its text starts in the stored
    list's, in bytes: provenances of several bytes a character, and one whose value spells
    another group's text, are found at their places, and one not stored is not."""
    from msgspec.json import encode

    from triage.rules.engine.facts import _group, _Groups, _row
    from triage.rules.engine.lazy import Lazy

    values = ["a", "é", "日本語", '[{"image":"a"},', "z" * 300, "b"]
    groups = [((("image", v),), i, (f"r{i}", 0.9, 1319), (f"r{i}", 0.91, 1319)) for i, v in enumerate(values)]
    text = encode([_row(g) for g in groups]).decode()
    ctx = Context(INV)
    found = _Groups(Lazy(text, _group), CONFIG, ctx)
    assert found._find(groups[0][0]) == 0

    class Unwalked(list):  # the stored groups, not gone through one at a time
        def __iter__(self):
            raise AssertionError("went through the stored groups")

    found.raws = Unwalked(found.raws)
    assert [found._find(g[0]) for g in reversed(groups)] == list(reversed(range(len(groups))))
    assert found._find((("image", "c"),)) is None and found._find((("node", "a"),)) is None
    assert _Groups(Lazy(text, _group), CONFIG, ctx)._find((("image", "x"),)) is None  # not in the text at all
