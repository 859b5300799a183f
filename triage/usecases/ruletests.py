"""Unit tests for rule files: runs in, expected statuses out (as promtool does).

A test file (``*.test.yaml``, kept apart from the rule files)::

    rule_files: [../kimik26-disagg.yaml, ../signatures.yaml]   # relative to this file
    runs_file: ../../examples/kimik26-disagg.runs.jsonl       # optional: runs every case starts from
    tests:
      - name: a backend swap that recovers confirms the backend
        runs:                                                 # added to (or replacing) runs_file's
          - {run_id: "1", config: kimik26-fp8-1k1k-1p1d-aiterdecode, status: failed,
             metrics: {gsm8k: {value: 0.943, n: 1319}}}
        expect:
          attention-backend: confirmed
        bisects:                                              # optional
          image: {last_good: v0.5.13.post1-rocm720-mi35x-20260625}

Everything runs in memory through the engine: no knowledge base is touched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from triage.errors import InputError, Problem, RuleFileError


@dataclass
class CaseResult:
    file: str
    name: str
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _runrecs(records: list[Any], where: str, investigation: str,
             scales: Optional[Mapping[str, float]] = None) -> list[Any]:
    """The runs of a test case; ``scales``: the investigation's metrics' scales (none: every one on 1)."""
    from triage.ingest.records import record_to_input
    from triage.rules.engine.evaluate import RunRec

    out = []
    for i, rec in enumerate(records, 1):
        if isinstance(rec, dict):
            rec = {"investigation": investigation} | rec
        iid, data = record_to_input(rec, f"{where}: run {i}", lambda _: scales or {})
        if iid != investigation:
            continue
        out.append(RunRec(
            run_id=data.run_id, config=data.config, status=data.status or "failed",
            metrics={k: (v["value"], v.get("n")) for k, v in (data.metrics or {}).items()},
            provenance=data.provenance or {}, url=data.url, note=data.note,
            excluded=bool(data.excluded), excluded_reason=data.excluded_reason, signature=data.signature_id,
        ))
    return out


def run_test_file(path: Path) -> list[CaseResult]:
    """Evaluate every case of one test file."""
    import yaml

    from triage.rules.engine.evaluate import Investigation, SignatureInfo, evaluate
    from triage.rules.language.loader import load_rules
    from triage.rules.language.schema import outcome

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise InputError(f"{path}: cannot read the test file: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tests"), list) or not doc.get("rule_files"):
        raise RuleFileError([Problem(str(path), 1, 1, "a rule test file needs rule_files: [...] and tests: [...]")])
    unknown = set(doc) - {"rule_files", "runs_file", "tests"}
    if unknown:
        raise RuleFileError([Problem(str(path), 1, 1, f"unknown key(s): {', '.join(sorted(unknown))}")])
    ruleset = load_rules([path.parent / p for p in doc["rule_files"]])
    invs = ruleset.investigations
    if len(invs) != 1:
        raise InputError(f"{path}: rule_files must define exactly one investigation, found {len(invs)}")
    spec = invs[0].spec
    sigs = {s.id: SignatureInfo(s.id, s.cls, s.meaning, s.remedy, outcome(s.outcome) if s.outcome else None)
            for f in ruleset.files for s in f.spec.signatures}
    scales = {name: m.scale for name, m in spec.investigation.metrics.items() if m.scale}
    base_runs: list[Any] = []
    if doc.get("runs_file"):
        runs_path = path.parent / doc["runs_file"]
        try:
            lines = runs_path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise InputError(f"{path}: runs_file {runs_path}: {e.strerror}") from None
        records = [json.loads(x) for x in lines if x.strip()]
        base_runs = _runrecs(records, str(runs_path), spec.investigation.id, scales)
    results = []
    for i, case in enumerate(doc["tests"], 1):
        name = case.get("name", f"case {i}") if isinstance(case, dict) else f"case {i}"
        if not isinstance(case, dict) or not isinstance(case.get("expect", {}), dict):
            raise InputError(f"{path}: {name}: a case is a mapping with runs: and expect:")
        extra = _runrecs(case.get("runs") or [], f"{path}: {name}", spec.investigation.id, scales)
        keys = {r.key for r in extra}
        runs = [r for r in base_runs if r.key not in keys] + extra
        if case.get("only_these_runs"):
            runs = extra
        bundle = Investigation(spec.investigation, spec.hypotheses, spec.recipes, spec.rules, spec.evidence,
                               spec.bisects, runs, sigs, spec.exclusive)
        ev = evaluate(bundle)
        result = CaseResult(str(path), name)
        for hyp, want in (case.get("expect") or {}).items():
            got = ev.statuses.get(hyp)
            if got is None:
                result.failures.append(f"{hyp}: no such hypothesis")
            elif got != want:
                result.failures.append(f"{hyp}: expected {want}, got {got}")
        states = {b.id: b for b in ev.bisects}
        for bid, want in (case.get("bisects") or {}).items():
            b = states.get(bid)
            if b is None:
                result.failures.append(f"bisect {bid}: no such bisect")
                continue
            for key, value in want.items():
                got = getattr(b, key, None)
                got = list(got) if isinstance(got, tuple) else got
                if got != value:
                    result.failures.append(f"bisect {bid}.{key}: expected {value!r}, got {got!r}")
        results.append(result)
    return results


def find_test_files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(p.glob("*.test.yaml"))
        elif p.exists():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    if not out:
        raise InputError(f"no *.test.yaml files in {', '.join(paths)}")
    return out


def default_test_dirs(rule_paths: list[str]) -> list[str]:
    """``rules/tests`` beside each rules directory in use."""
    return [str(Path(p) / "tests") for p in rule_paths if (Path(p) / "tests").is_dir()]

