"""The code's layout holds: imports point down the layers, and modules and
functions stay within their sizes (files ≤ 600 lines, functions ≤ 80).

What breaks a rule today is listed below, each entry a debt: a new import up
the layers, a new cycle between packages or a new oversized function fails
here, and so does an entry that no longer breaks its rule (take it off the
list: the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "triage"

# Each package may import the packages of lower levels (and its own), never higher ones
# nor its siblings on the same level (but the shared modules of level 0).
LEVELS = {
    "errors": 0, "inputs": 0, "limits": 0, "numbers": 0, "sandbox": 0, "settings": 0, "stamp": 0,  # shared by all
    "__init__": 0,
    "github": 1,  # the REST client and the comment's text: no knowledge base, no rules
    "rules": 1,  # the language, the decisions, the engine: pure
    "render": 2,  # reads what the engine decided
    "kb": 3,  # stores rules, runs and evaluations
    "ingest": 4,  # reads CI's output into the knowledge base
    "views": 5,  # the view model: knowledge base, engine and renderer together
    "usecases": 6,  # what a user does: record, report, post
    "serve": 7,  # the webhook server and the dashboard
    "cli": 8, "__main__": 9,
}

# Imports that run up the layers today: (importing file, imported module).  None: keep it so.
KNOWN_UPWARD: set[tuple[str, str]] = set()

# The rooms of rules/: the language, the decisions, the engine, what comes next.
RULES_ROOMS = {"language", "decisions", "engine", "next"}

FILE_LINES, FUNCTION_LINES = 600, 80
KNOWN_LONG_FILES: set[str] = set()
KNOWN_LONG_FUNCTIONS: set[tuple[str, str]] = set()


def _sources() -> dict[str, ast.Module]:
    return {path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted(PACKAGE.rglob("*.py")) if "migrations" not in path.parts}


def _imports(tree: ast.Module) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("triage."):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("triage.")}
    return found


def _package(name: str) -> str:
    return name.split("/", 1)[0].removesuffix(".py")


def test_every_package_has_a_level():
    assert {_package(f) for f in _sources()} <= set(LEVELS) | {"bundled"}


def test_rules_has_its_rooms_and_nothing_outside_them():
    rules = {f.split("/")[1] for f in _sources() if f.startswith("rules/")}
    assert rules == RULES_ROOMS | {"__init__.py"}


def test_imports_point_down_the_layers():
    upward = set()
    for file, tree in _sources().items():
        own = _package(file)
        for module in _imports(tree):
            other = module.split(".")[1]
            if other != own and LEVELS.get(other, 0) >= LEVELS[own] and LEVELS.get(other, 0) > 0:
                upward.add((file, module))
    assert upward - KNOWN_UPWARD == set(), "an import up the layers"
    assert KNOWN_UPWARD - upward == set(), "no longer imported up the layers: take it off KNOWN_UPWARD"


def test_no_cycle_between_packages_but_the_known_ones():
    edges: dict[str, set[str]] = {}
    for file, tree in _sources().items():
        own = _package(file)
        for module in _imports(tree):
            if (file, module) not in KNOWN_UPWARD and module.split(".")[1] != own:
                edges.setdefault(own, set()).add(module.split(".")[1])

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges.get(start, ()))

    assert [p for p in edges if reaches(p, p, {p})] == []


def test_only_the_settings_read_the_environment():
    """``os.environ`` and ``os.getenv`` are read in triage/settings.py alone: every other module
    is handed a :class:`triage.settings.Settings` (or the values it needs) by an edge."""
    readers = set()
    for file, tree in _sources().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT and \
                    isinstance(node.value, ast.Name) and node.value.id == "os":
                readers.add(file)
            elif isinstance(node, ast.ImportFrom) and node.module == "os" and \
                    any(a.name in ENVIRONMENT for a in node.names):
                readers.add(file)
    assert readers == {"settings.py"}


ENVIRONMENT = {"environ", "environb", "getenv", "getenvb"}


def test_files_and_functions_stay_within_their_sizes():
    long_files, long_functions = set(), set()
    for file, tree in _sources().items():
        if (PACKAGE / file).read_text(encoding="utf-8").count("\n") > FILE_LINES:
            long_files.add(file)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    node.end_lineno - node.lineno + 1 > FUNCTION_LINES:
                long_functions.add((file, node.name))
    assert long_files - KNOWN_LONG_FILES == set(), f"a module over {FILE_LINES} lines"
    assert long_functions - KNOWN_LONG_FUNCTIONS == set(), f"a function over {FUNCTION_LINES} lines"
    assert (KNOWN_LONG_FILES - long_files, KNOWN_LONG_FUNCTIONS - long_functions) == (set(), set()), \
        "within its size now: take it off the list"


def test_test_modules_do_not_import_each_other():
    """What several test modules share lives in tests/support/ (or conftest.py), not in a test module."""
    tests = PACKAGE.parent / "tests"
    found = sorted((path.relative_to(tests).as_posix(), module)
                   for path in tests.rglob("*.py") for module in _imports_of_tests(ast.parse(path.read_text("utf-8")))
                   if any(part.startswith("test_") for part in module.split(".")[1:]))
    assert found == []


def test_tests_are_laid_out_like_the_package():
    """Each test module sits in the folder of what it tests (tests/rules/, tests/kb/, …; tests/project/:
    the whole product), and the helpers in tests/support/."""
    tests = PACKAGE.parent / "tests"
    rooms = {"rules", "kb", "ingest", "render", "github", "serve", "usecases", "cli", "project"}
    assert sorted(p.name for p in tests.glob("test_*.py")) == []
    assert {p.parent.name for p in tests.rglob("test_*.py")} <= rooms
    assert sorted(p.name for p in tests.glob("*.py")) == ["__init__.py", "conftest.py"]


def _imports_of_tests(tree: ast.Module) -> set[str]:
    return {name for node in ast.walk(tree)
            for name in ([node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0
                         else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if name.startswith("tests.")}
