"""Wide investigations as the engine takes them: random shapes from ``bench/wide.py``
at a twentieth of their full size (recipes on recipes, rules over ad hoc configs, three
bisects, three metrics, runs that each record their own provenance)."""

from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path

import yaml

from bench import wide
from triage.rules.engine.evaluate import Investigation, SignatureInfo
from triage.rules.language.loader import load_rules
from triage.usecases.ruletests import _runrecs

ROOT = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=8)
def wide_investigation(seed: int, runs: int) -> tuple[Investigation, tuple]:
    """The investigation of ``seed`` at a twentieth of the full shape, with ``runs`` runs."""
    shape = wide.Shape.of(seed, 0.05)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wide.yaml"
        path.write_text(yaml.safe_dump(wide.spec(shape), sort_keys=False), encoding="utf-8")
        ruleset = load_rules([path, ROOT / "rules" / "signatures.yaml"])
    spec = ruleset.investigations[0].spec
    sigs = {s.id: SignatureInfo(s.id, s.cls, s.meaning, s.remedy) for f in ruleset.files for s in f.spec.signatures}
    records = _runrecs(list(wide.records(shape, runs)), "runs", spec.investigation.id)
    inv = Investigation(spec.investigation, spec.hypotheses, spec.recipes, spec.rules, spec.evidence,
                        spec.bisects, records, sigs, spec.exclusive)
    return inv, tuple(records)
