"""The bundled investigation as the engine takes it, and random edits to it (incremental evaluation)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Callable

from hypothesis import strategies as st
from msgspec.structs import replace as changed  # a run with some fields changed

from triage.rules.engine.evaluate import Investigation, SignatureInfo, evaluate
from triage.rules.language.loader import load_rules
from triage.rules.engine.memo import Memo
from triage.usecases.ruletests import _runrecs


ROOT = Path(__file__).resolve().parents[2]


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


def apply_edit(runs: list, e: tuple, step: int) -> list:
    runs = list(runs)
    if e[0] == "add":
        _, config, status, value, image, sig = e
        base = next((r for r in runs if r.config == config), None)
        prov = dict(base.provenance) if base is not None else {}
        if image:
            prov["image"] = image
        metrics = {} if status in ("crashed", "error") else {"gsm8k": (value, 1319)}
        runs.append(changed(RUNS[0], run_id=f"9{step:04d}", config=config, status=status, metrics=metrics,
                            provenance=prov, time=f"2026-08-{1 + step % 28:02d}T00:00:00+00:00",
                            signature="init-abort" if status == "error" and sig else None))
    elif runs:
        i = e[1] % len(runs)
        r = runs[i]
        if e[0] == "value" and "gsm8k" in r.metrics:
            runs[i] = changed(r, metrics={**r.metrics, "gsm8k": (e[2], 1319)})
        elif e[0] == "exclude":
            runs[i] = changed(r, excluded=not r.excluded, excluded_reason="drained node")
        elif e[0] == "delete":
            del runs[i]
    return runs


def outcome_of(ev) -> tuple:
    readings = {k: ev.readings.get(k) for k in sorted(ev.invalid) + sorted(ev.readings)}
    return (ev.evidence, ev.statuses, ev.references, ev.bisects, ev.suggestions, ev.warnings, ev.untested,
            ev.recipes, ev.confounds, ev.next_level, list(ev.invalid.items()), readings)


def through_storage(memo: Memo) -> Memo:
    """The memo as the knowledge base gives it back: what each piece read through JSON
    text, its data through msgpack (``triage.kb.pieces``)."""
    from msgspec import msgpack

    pieces = {name: [json.loads(json.dumps(reads)), msgpack.decode(msgpack.encode(data))]
              for name, (reads, data) in memo.pieces.items()}
    again = Memo({n: (p[0], p[1]) for n, p in pieces.items()}, memo.key)
    again.code = memo.code
    return again


def edited_alike(inv: Investigation, runs: list, edits: list, apply: Callable[[list, tuple, int], list]) -> None:
    """Apply ``edits`` one after another; after each, the evaluation reusing the stored
    pieces of the one before must equal a whole one."""
    memo = Memo()
    evaluate(replace(inv, runs=runs), memo)
    for step, e in enumerate(edits):
        runs = apply(runs, e, step)
        whole = evaluate(replace(inv, runs=runs))
        memo = through_storage(memo)
        again = evaluate(replace(inv, runs=runs), memo)
        assert outcome_of(again) == outcome_of(whole), f"{inv.spec.id}, step {step}: {e}"
