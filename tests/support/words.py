"""Investigations for the condition-word tests."""

from __future__ import annotations

import textwrap

import yaml

from triage.rules.engine.evaluate import Investigation, RunRec
from triage.rules.language.schema import RuleFile


HEAD = """
schema_version: 1
investigation:
  id: t
  repo: o/r
  pr: 1
  title: T
  metric: acc
  gate: 0.9
  references:
    good: {value: 0.95}
    bad: {value: 0.8}
    ref: {config: reference}
    old: {run: "77"}
"""


def inv(body: str, runs=()) -> Investigation:
    spec = RuleFile.model_validate(yaml.safe_load(textwrap.dedent(HEAD) + textwrap.dedent(body)))
    return Investigation(spec.investigation, spec.hypotheses, spec.recipes, spec.rules, spec.evidence, spec.bisects,
                         list(runs), {}, spec.exclusive)


def run(run_id: str, config: str, acc, status: str = "passed") -> RunRec:
    return RunRec(run_id, config, status, {"acc": (acc, None)} if acc is not None else {}, {})
