"""Rule files checked: ``triage check`` (every problem, as path:line:col; what each valid file
declares; the warnings of the whole set and of each file).
"""

from __future__ import annotations

from typing import Any

KINDS = ("hypotheses", "recipes", "rules", "evidence", "bisects", "signatures", "extractors")


def check(targets: list[str], url: str, warnings: list) -> list[dict]:
    """Load the rule files ``targets`` (raising :class:`~triage.errors.RuleFileError` with every
    problem) and say what each declares: its path, investigation, repo, PR, the count of each
    kind of thing, and what its bisects decide.  ``warnings`` receives every warning: the
    loader's, sorted (also when it raises), then each file's, its configs checked against
    those the knowledge base at ``url`` recorded."""
    from triage.kb import configruns
    from triage.rules.engine.decides import describe
    from triage.rules.language.configcheck import config_problems
    from triage.rules.language.filecheck import direction_warnings, noise_warnings
    from triage.rules.language.loader import load_rules

    try:
        ruleset = load_rules(targets, warnings)
    finally:
        warnings.sort()
    recorded = configruns.recorded_configs(url, [f.spec.investigation.id for f in ruleset.files
                                                 if f.spec.investigation])
    files = []
    for f in ruleset.files:
        warnings += direction_warnings(f) + noise_warnings(f) + config_problems(f, recorded)
        files.append(_declared(f, describe))
    return files


def _declared(f: Any, describe: Any) -> dict:
    spec, inv = f.spec, f.spec.investigation
    return {"path": f.path, "investigation": inv.id if inv else None, "repo": inv.repo if inv else None,
            "pr": inv.pr if inv else None,
            "counts": {key: len(getattr(spec, key)) for key in KINDS if getattr(spec, key)},
            "decides": [said for said in map(describe, spec.bisects) if said]}
