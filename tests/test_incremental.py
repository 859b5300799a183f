"""Incremental evaluation: reusing the pieces of the last evaluation gives, to the byte, a whole evaluation.

The engine is run on the bundled investigation while random edits (new runs,
changed readings, crashes, known failures, exclusions, deletions, new bisect
probes) arrive one after another; at every step the evaluation that reuses
the stored pieces (through their JSON text, as the knowledge base keeps them)
must equal a whole one.  The knowledge base's side (fingerprints from the
index, pieces in their table) is checked through the CLI in test_scale.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.rules.engine import Investigation, SignatureInfo, evaluate
from triage.rules.loader import load_rules
from triage.rules.memo import Memo
from triage.rules.testing import _runrecs

ROOT = Path(__file__).resolve().parent.parent


def _bundle() -> tuple[Investigation, list]:
    ruleset = load_rules([ROOT / "rules" / "kimik26-disagg.yaml", ROOT / "rules" / "signatures.yaml"])
    spec = next(i for i in ruleset.investigations if i.spec.investigation.id == "kimik26-disagg").spec
    sigs = {s.id: SignatureInfo(s.id, s.cls, s.meaning, s.remedy) for f in ruleset.files for s in f.spec.signatures}
    lines = (ROOT / "examples" / "kimik26-disagg.runs.jsonl").read_text(encoding="utf-8").splitlines()
    runs = _runrecs([json.loads(x) for x in lines if x.strip()], "runs", "kimik26-disagg")
    inv = Investigation(spec.investigation, spec.hypotheses, spec.recipes, spec.rules, spec.evidence,
                        spec.bisects, runs, sigs, spec.exclusive)
    return inv, runs


INV, RUNS = _bundle()
CONFIGS = sorted({r.config for r in RUNS}) + ["kimik26-fp8-1k1k-1p1d-new"]
IMAGES = sorted({r.provenance["image"] for r in RUNS if "image" in r.provenance})

edit = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(CONFIGS), st.sampled_from(["passed", "failed", "crashed", "error"]),
              st.sampled_from([0.86, 0.879, 0.9, 0.93, 0.944, 0.95]), st.one_of(st.none(), st.sampled_from(IMAGES)),
              st.booleans()),
    st.tuples(st.just("value"), st.integers(0, 10_000), st.sampled_from([0.87, 0.9, 0.944])),
    st.tuples(st.just("exclude"), st.integers(0, 10_000)),
    st.tuples(st.just("delete"), st.integers(0, 10_000)),
)


def _apply(runs: list, e: tuple, step: int) -> list:
    runs = list(runs)
    if e[0] == "add":
        _, config, status, value, image, sig = e
        base = next((r for r in runs if r.config == config), None)
        prov = dict(base.provenance) if base is not None else {}
        if image:
            prov["image"] = image
        metrics = {} if status in ("crashed", "error") else {"gsm8k": (value, 1319)}
        runs.append(replace(RUNS[0], run_id=f"9{step:04d}", config=config, status=status, metrics=metrics,
                            provenance=prov, time=f"2026-08-{1 + step % 28:02d}T00:00:00+00:00",
                            signature="init-abort" if status == "error" and sig else None))
    elif runs:
        i = e[1] % len(runs)
        r = runs[i]
        if e[0] == "value" and "gsm8k" in r.metrics:
            runs[i] = replace(r, metrics={**r.metrics, "gsm8k": (e[2], 1319)})
        elif e[0] == "exclude":
            runs[i] = replace(r, excluded=not r.excluded, excluded_reason="drained node")
        elif e[0] == "delete":
            del runs[i]
    return runs


def _seen(ev) -> tuple:
    readings = {k: ev.readings.get(k) for k in sorted(ev.invalid) + sorted(ev.readings)}
    return (ev.evidence, ev.statuses, ev.references, ev.bisects, ev.suggestions, ev.warnings, ev.untested,
            ev.recipes, ev.confounds, ev.next_level, list(ev.invalid.items()), readings)


def _stored(memo: Memo) -> Memo:
    """The memo as the knowledge base gives it back: what each piece read through JSON
    text, its data through msgpack (``triage.kb.pieces``)."""
    from msgspec import msgpack

    pieces = {name: [json.loads(json.dumps(reads)), msgpack.decode(msgpack.encode(data))]
              for name, (reads, data) in memo.pieces.items()}
    again = Memo({n: (p[0], p[1]) for n, p in pieces.items()}, memo.key)
    again.code = memo.code
    return again


@settings(max_examples=25, deadline=None)
@given(st.lists(edit, min_size=1, max_size=6))
def test_reusing_pieces_equals_a_whole_evaluation(edits: list) -> None:
    edited_alike(INV, list(RUNS), edits, _apply)


def edited_alike(inv: Investigation, runs: list, edits: list, apply: Callable[[list, tuple, int], list]) -> None:
    """Apply ``edits`` one after another; after each, the evaluation reusing the stored
    pieces of the one before must equal a whole one."""
    memo = Memo()
    evaluate(replace(inv, runs=runs), memo)
    for step, e in enumerate(edits):
        runs = apply(runs, e, step)
        whole = evaluate(replace(inv, runs=runs))
        memo = _stored(memo)
        again = evaluate(replace(inv, runs=runs), memo)
        assert _seen(again) == _seen(whole), f"{inv.spec.id}, step {step}: {e}"


def test_a_new_run_works_out_only_what_reads_its_config() -> None:
    memo = Memo()
    evaluate(replace(INV, runs=RUNS), memo)
    assert len(memo.worked) == len(memo.pieces)  # the first evaluation works out every piece
    config = "kimik26-fp8-1k1k-1p1d-page256"
    runs = RUNS + [replace(RUNS[0], run_id="1", config=config, status="passed", metrics={"gsm8k": (0.94, 1319)},
                           provenance={}, time="2026-08-01T00:00:00+00:00")]
    memo = _stored(memo)
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
    crashed = replace(RUNS[0], run_id="1", config=base, status="crashed", metrics={}, provenance={},
                      time="2026-08-01T00:00:00+00:00")
    memo = _stored(memo)
    evaluate(replace(INV, runs=RUNS + [crashed]), memo)
    assert on_base and f"f:{base}" in memo.worked and not set(on_base) & set(memo.worked)
    valid = replace(crashed, run_id="2", status="failed", metrics={"gsm8k": (0.88, 1319)}, provenance={"sha": "x"})
    memo = _stored(memo)
    ev = evaluate(replace(INV, runs=RUNS + [crashed, valid]), memo)
    whole = evaluate(replace(INV, runs=RUNS + [crashed, valid]))
    assert set(on_base) <= set(memo.worked) and ev.confounds == whole.confounds


def test_nothing_changed_works_out_nothing() -> None:
    memo = Memo()
    evaluate(replace(INV, runs=RUNS), memo)
    memo = _stored(memo)
    evaluate(replace(INV, runs=RUNS), memo)
    assert memo.worked == []


def test_good_and_bad_of_one_value_are_said_not_a_crash() -> None:
    bad = next(i for i, r in enumerate(RUNS) if r.run_id == "28873810961")  # the bad reference's run
    runs = _apply(RUNS, ("value", bad, 0.944), 0)  # now as good as good (0.944)
    ev = evaluate(replace(INV, runs=runs))
    assert any("good and bad are the same value (0.944)" in w.message for w in ev.warnings)


def test_a_fingerprint_tells_plain_data_apart_and_takes_anything():
    from triage.rules.memo import fingerprint

    state = [["b1", "p3", "bad", "run-1/c\x00run-2/c"], 0.878, None, 1319]
    assert fingerprint(state) == fingerprint([list(x) if isinstance(x, list) else x for x in state])
    assert fingerprint(state) != fingerprint([["b1", "p3", "bad", "run-1/c\x00run-3/c"], 0.878, None, 1319])
    assert fingerprint([0.878]) != fingerprint([0.8780000000000001])  # floats exactly
    assert fingerprint(["a", "b"]) != fingerprint(["ab"])
    assert len(fingerprint(2**70)) == 24 == len(fingerprint(object))  # not plain: its repr
