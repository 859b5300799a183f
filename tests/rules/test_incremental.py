"""Incremental evaluation: reusing the pieces of the last evaluation gives, to the byte, a whole evaluation.

The engine is run on the bundled investigation while random edits (new runs,
changed readings, crashes, known failures, exclusions, deletions, new bisect
probes) arrive one after another; at every step the evaluation that reuses
the stored pieces (through their JSON text, as the knowledge base keeps them)
must equal a whole one.  The knowledge base's side (fingerprints from the
index, pieces in their table) is checked through the CLI in test_scale.py.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace as changed  # a run with some fields changed

from triage.rules.engine.evaluate import evaluate
from triage.rules.engine.memo import Memo
from tests.support.bundled import INV, RUNS, apply_edit, edit, edited_alike, through_storage


@settings(max_examples=25, deadline=None)
@given(st.lists(edit, min_size=1, max_size=6))
def test_reusing_pieces_equals_a_whole_evaluation(edits: list) -> None:
    edited_alike(INV, list(RUNS), edits, apply_edit)


def test_a_new_run_works_out_only_what_reads_its_config() -> None:
    memo = Memo()
    evaluate(replace(INV, runs=RUNS), memo)
    assert len(memo.worked) == len(memo.pieces)  # the first evaluation works out every piece
    config = "kimik26-fp8-1k1k-1p1d-page256"
    runs = RUNS + [changed(RUNS[0], run_id="1", config=config, status="passed", metrics={"gsm8k": (0.94, 1319)},
                           provenance={}, time="2026-08-01T00:00:00+00:00")]
    memo = through_storage(memo)
    evaluate(replace(INV, runs=runs), memo)
    assert f"f:{config}" in memo.worked
    assert 0 < len(memo.worked) < len(memo.pieces) / 3, memo.worked
    untouched = [n for n in memo.pieces if n.startswith("f:") and n != f"f:{config}"]
    assert untouched and not set(untouched) & set(memo.worked)


def test_a_recipes_confounds_are_worked_out_again_only_when_its_base_run_changes() -> None:
    """A recipe's confounds compare its runs with the newest valid run of its base config:
    a crashed base run leaves them as they were; a new valid one is the run compared with."""
    base = INV.spec.base
    on_base = [f"c:{r.id}" for r in INV.recipes if r.base == base and not r.base_run]
    memo = Memo()
    evaluate(replace(INV, runs=RUNS), memo)
    crashed = changed(RUNS[0], run_id="1", config=base, status="crashed", metrics={}, provenance={},
                      time="2026-08-01T00:00:00+00:00")
    memo = through_storage(memo)
    evaluate(replace(INV, runs=RUNS + [crashed]), memo)
    assert on_base and f"f:{base}" in memo.worked and not set(on_base) & set(memo.worked)
    valid = changed(crashed, run_id="2", status="failed", metrics={"gsm8k": (0.88, 1319)}, provenance={"sha": "x"})
    memo = through_storage(memo)
    ev = evaluate(replace(INV, runs=RUNS + [crashed, valid]), memo)
    whole = evaluate(replace(INV, runs=RUNS + [crashed, valid]))
    assert set(on_base) <= set(memo.worked) and ev.confounds == whole.confounds


def test_nothing_changed_works_out_nothing() -> None:
    memo = Memo()
    evaluate(replace(INV, runs=RUNS), memo)
    memo = through_storage(memo)
    evaluate(replace(INV, runs=RUNS), memo)
    assert memo.worked == []


def test_good_and_bad_of_one_value_are_said_not_a_crash() -> None:
    bad = next(i for i, r in enumerate(RUNS) if r.run_id == "28873810961")  # the bad reference's run
    runs = apply_edit(RUNS, ("value", bad, 0.944), 0)  # now as good as good (0.944)
    ev = evaluate(replace(INV, runs=runs))
    assert any("good and bad are the same value (0.944)" in w.message for w in ev.warnings)


def test_a_fingerprint_tells_plain_data_apart_and_takes_anything():
    from triage.rules.engine.memo import fingerprint

    state = [["b1", "p3", "bad", "run-1/c\x00run-2/c"], 0.878, None, 1319]
    assert fingerprint(state) == fingerprint([list(x) if isinstance(x, list) else x for x in state])
    assert fingerprint(state) != fingerprint([["b1", "p3", "bad", "run-1/c\x00run-3/c"], 0.878, None, 1319])
    assert fingerprint([0.878]) != fingerprint([0.8780000000000001])  # floats exactly
    assert fingerprint(["a", "b"]) != fingerprint(["ab"])
    assert len(fingerprint(2**70)) == 24 == len(fingerprint(object))  # not plain: its repr


def test_a_recipes_shown_runs_are_read_again_only_when_its_runs_change() -> None:
    """What the Experiments table shows of a recipe's first runs is kept as a piece: a new
    valid base run (which changes every confound of a recipe on the base) reads no recipe's
    runs again; a run of the recipe does, and it then shows that run too."""
    base = INV.spec.base
    recipe = next(r.id for r in INV.recipes if r.base == base and any(x.config == r.id for x in RUNS))
    shown = [f"x:{r.id}" for r in INV.recipes]
    memo = Memo()
    evaluate(replace(INV, runs=RUNS), memo)
    valid = changed(RUNS[0], run_id="1", config=base, status="failed", metrics={"gsm8k": (0.88, 1319)},
                    provenance={"sha": "x"}, time="2026-08-01T00:00:00+00:00")
    memo = through_storage(memo)
    evaluate(replace(INV, runs=RUNS + [valid]), memo)
    assert f"f:{base}" in memo.worked and not set(shown) & set(memo.worked)
    own = changed(valid, run_id="2", config=recipe, metrics={"gsm8k": (0.9312, 1319)}, time="2026-07-01T00:00:00+00:00")
    memo = through_storage(memo)
    ev = evaluate(replace(INV, runs=RUNS + [valid, own]), memo)
    assert [n for n in memo.worked if n in shown] == [f"x:{recipe}"]
    state = next(st for st in ev.recipes if st.recipe == recipe)
    assert own.key in [row[0] for row in state.shown] and any(row[4] == 0.9312 for row in state.shown)
    assert ev.recipes == evaluate(replace(INV, runs=RUNS + [valid, own])).recipes
