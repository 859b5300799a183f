"""The head of a rule file the rule-language tests add to."""

from __future__ import annotations


HEAD = """
schema_version: 1
investigation:
  id: t
  repo: o/r
  pr: 1
  title: T
  metric: acc
  gate: 0.5
  references:
    bad: {value: 0.1, n: 100}
    good: {value: 0.8, n: 100}
"""
