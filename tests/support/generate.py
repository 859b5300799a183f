"""A generated investigation far too big for one PR comment."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import yaml

HUGE_PR, HUGE_REPO = 9, "octo-org/octo-repo"
START = datetime(2026, 1, 1)


def write_huge(where: Path, runs: int = 3000, hypotheses: int = 12) -> tuple[Path, Path]:
    """``where/rules/huge.yaml`` and ``where/huge.jsonl``: ``runs`` runs with long notes.

    Every third run is the base config, the others are spread over one
    recipe per hypothesis; every tenth run crashed (a warning each, with its
    note).  Run ``k`` happened at minute ``k`` of 2026, so the oldest run has
    the smallest id.
    """
    spec = {
        "schema_version": 1,
        "investigation": {
            "id": "huge", "repo": HUGE_REPO, "pr": HUGE_PR, "title": "A huge investigation",
            "metric": "acc", "gate": 0.9, "base": "base",
            "references": {"bad": {"config": "base"}, "good": {"value": 0.95, "n": 1000}},
        },
        "hypotheses": [{"id": f"h{i}", "title": f"Hypothesis {i}: " + "a long title " * 8} for i in range(hypotheses)],
        "recipes": [
            {"id": f"r{i}", "base": "base", "change": f"change {i}: " + "x" * 80, "tests": [f"h{i}"],
             "predicts": {f"h{i}": "recovers"}, "run": "gh workflow run ci.yml -f configs={ids}"}
            for i in range(hypotheses)
        ],
        "rules": [
            {"id": f"rule{i}", "hypothesis": f"h{i}", "when": {"config": f"r{i}", "below": "gate"},
             "then": "supports", "because": "because " + "y" * 300 + " {{ value }}"}
            for i in range(hypotheses)
        ],
    }
    rules = where / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "huge.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    path = where / "huge.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for k in range(runs):
            crashed = k % 10 == 7
            rec = {
                "investigation": "huge",
                "run_id": str(10_000_000 + k),
                "config": "base" if k % 3 == 0 else f"r{k % hypotheses}",
                "status": "crashed" if crashed else "failed",
                "metrics": {} if crashed else {"acc": {"value": round(0.85 + (k % 17) / 1000, 3), "n": 1000}},
                "url": f"https://github.com/{HUGE_REPO}/actions/runs/{10_000_000 + k}",
                "time": (START + timedelta(minutes=k)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "note": f"note of run {k}: " + "z" * 400,
            }
            fh.write(json.dumps(rec) + "\n")
    return rules, path


def huge_model(where: Path, runs: int = 3000) -> dict:
    """The view model of the generated investigation, built without the CLI."""
    from triage.ingest.importer import import_file
    from triage.kb import store
    from triage.render.report import build
    from triage.rules.engine.evaluate import evaluate
    from triage.rules.language.loader import load_rules

    rules, path = write_huge(where, runs)
    url = f"sqlite:///{where / 'huge.sqlite'}"
    with store.session(url) as s:
        store.sync_rules(s, load_rules([str(rules)]))
        import_file(s, str(path))
        inv = store.find_investigation(s, HUGE_PR, HUGE_REPO)
        bundle = store.load_bundle(s, inv)
    return build(bundle, evaluate(bundle), runs_limit=None)
