"""The command line: parse, call, print. No SQL and no rule logic here.

One module per group of commands; importing the package registers them all
on ``app`` (the order of the imports is the order of ``triage --help``).
"""

from importlib import import_module

from triage.cli.base import (
    app,
    db_app,
    evidence_app,
    hoist_global_options,
    main,
    runs_app,
    signatures_app,
)

# registered in this order, the order of `triage --help`
for _group in ("record", "reports", "rulefiles", "experiments", "github", "logs", "db"):
    import_module(f"triage.cli.{_group}")

__all__ = ["app", "db_app", "evidence_app", "hoist_global_options", "main", "runs_app", "signatures_app"]
