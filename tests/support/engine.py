"""Small hand-built investigations for the engine (no database)."""

from __future__ import annotations

import textwrap

import yaml

from triage.rules.engine.evaluate import Investigation, RunRec, evaluate
from triage.rules.language.schema import RuleFile


BASE = """
schema_version: 1
investigation:
  id: t
  repo: o/r
  pr: 1
  title: T
  metric: acc
  gate: 0.92
  references:
    bad: {value: 0.878, n: 1319}
    good: {value: 0.944, n: 1319}
hypotheses:
  - {id: backend, title: Backend}
  - {id: graph, title: Graph}
  - {id: mode, title: Mode}
recipes:
  - id: swap
    base: base
    change: backend a -> b
    vary: {backend: b}
    tests: [backend, mode]
    predicts: {backend: recovers, mode: same_as_bad}
    run: ci run -f configs={ids}
  - id: eager
    base: base
    vary: {graph: off}
    tests: [graph]
    predicts: {graph: recovers}
    run: ci run -f configs={ids}
"""


def inv(extra: str = "", runs: list[RunRec] = (), base: str = BASE, signatures=None) -> Investigation:
    data = yaml.safe_load(textwrap.dedent(base) + textwrap.dedent(extra))
    spec = RuleFile.model_validate(data)
    return Investigation(
        spec=spec.investigation,
        hypotheses=spec.hypotheses,
        recipes=spec.recipes,
        rules=spec.rules,
        evidence=spec.evidence,
        bisects=spec.bisects,
        runs=list(runs),
        signatures=signatures or {},
    )


def run(run_id: str, config: str, acc=None, n=1319, status="failed", **kw) -> RunRec:
    metrics = {"acc": (acc, n)} if acc is not None else {}
    metrics.update(kw.pop("metrics", {}))
    return RunRec(run_id=run_id, config=config, status=status, metrics=metrics, **kw)


BISECT = """
bisects:
  - id: image
    axis: image
    points: [d1, d2, d3, d4, d5]
    good_when: {at_least: gate}
    run: ci run -f image={point}
"""


def bisect_of(runs, extra=BISECT, signatures=None):
    ev = evaluate(inv(extra, runs, signatures=signatures))
    (b,) = ev.bisects
    return ev, b


def img(run_id, image, acc=None, **kw):
    return run(run_id, "x", acc, provenance={"image": image}, **kw)


RANKING = BASE.split("hypotheses:")[0] + """
hypotheses:
  - {id: h1, title: One}
  - {id: h2, title: Two}
  - {id: h3, title: Three}
  - {id: h4, title: Four}
recipes:
  - id: narrow
    tests: [h1]
    predicts: {h1: recovers}
    run: ci -f configs={ids}
  - id: wide
    predicts: {h1: recovers, h2: recovers, h3: same_as_bad}
    run: ci -f configs={ids}
  - id: pricey
    predicts: {h1: recovers, h2: recovers}
    cost: 4
    run: ci -f configs={ids}
"""

PARENT = BASE.split("hypotheses:")[0] + """
hypotheses:
  - {id: h, title: H}
recipes:
  - id: child
    base: parent
    predicts: {h: unchanged}
    run: ci -f configs={ids}
"""
