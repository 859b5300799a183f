"""Investigations from a rule file's text, for the reference tests."""

from __future__ import annotations

import textwrap

import yaml

from triage.rules.engine.evaluate import Investigation
from triage.rules.language.schema import RuleFile


def inv(text: str, runs=()) -> Investigation:
    spec = RuleFile.model_validate(yaml.safe_load(textwrap.dedent(text)))
    return Investigation(spec=spec.investigation, hypotheses=spec.hypotheses, recipes=spec.recipes,
                         rules=spec.rules, evidence=spec.evidence, bisects=spec.bisects, runs=list(runs),
                         signatures={})
