"""What the package imports is what it declares, and nothing else."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported_modules() -> dict[str, str]:
    """Top-level module name -> the first file that imports it, over triage/ (lazy imports included)."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "triage").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.partition(".")[0], str(path.relative_to(ROOT)))
    return found


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    specs = list(project["dependencies"])
    for extra, deps in project.get("optional-dependencies", {}).items():
        if extra != "test":
            specs += deps
    return {re.split(r"[\s\[<>=!~;]", s, maxsplit=1)[0].lower().replace("_", "-") for s in specs}


def test_every_imported_package_is_declared():
    dists = packages_distributions()
    declared = _declared()
    missing = {}
    for module, where in _imported_modules().items():
        if module == "triage" or module in sys.stdlib_module_names or module == "__future__":
            continue
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not names & declared:
            missing[module] = (sorted(names), where)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_every_declared_runtime_package_is_imported():
    dists = packages_distributions()
    imported = set()
    for module in _imported_modules():
        imported |= {d.lower().replace("_", "-") for d in dists.get(module, [])}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {re.split(r"[\s\[<>=!~;]", s, maxsplit=1)[0].lower().replace("_", "-") for s in project["dependencies"]}
    # declared only to pin a lower bound of a package that another one brings
    unused = runtime - imported
    assert not unused, f"declared but never imported: {sorted(unused)}"
