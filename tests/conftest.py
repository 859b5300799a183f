"""Shared fixtures: an isolated knowledge base, the CLI in-process, goldens."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "rules"
EXAMPLE_RUNS = ROOT / "examples" / "kimik26-disagg.runs.jsonl"
GOLDEN = Path(__file__).resolve().parent / "golden"

pytest_plugins = ["tests.support.fakegithub", "tests.support.mermaid", "tests.support.serve", "pytester"]

# `make mutation` sets TRIAGE_MUTATION: each mutant runs the tests that cover it
# many times over, so Hypothesis tries fewer examples, the same ones each time
# (a mutant killed or not by chance would make the score noise).
MUTATION = bool(os.environ.get("TRIAGE_MUTATION"))


def _hypothesis_profiles() -> None:
    try:
        from hypothesis import settings
    except ImportError:
        return
    if MUTATION:
        settings.register_profile("mutation", max_examples=20, derandomize=True, database=None, deadline=None)
        settings.load_profile("mutation")
    # the property tests of the statistics: 300 examples each (TRIAGE_STATS_EXAMPLES: as many as it
    # says, `make stats-deep`), or the mutation profile's
    examples = int(os.environ.get("TRIAGE_STATS_EXAMPLES") or 300)
    settings.register_profile("stats-properties", settings.get_profile("mutation") if MUTATION else None,
                              **({} if MUTATION else {"max_examples": examples}), deadline=None)


_hypothesis_profiles()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from the current output")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """No GitHub token of the fake in any test's output, failures included.

    Captured output and logs that show one fail the test; a failure report
    that shows one (an assertion on a header, say) has it masked.
    """
    from tests.support.fakegithub import TOKENS_IN_USE

    outcome = yield
    report = outcome.get_result()
    tokens = sorted(TOKENS_IN_USE, key=len, reverse=True)

    def mask(text: str) -> str:
        for token in tokens:
            text = text.replace(token, "***")
        return text

    # each phase's report repeats the earlier phases' sections: judge its own
    leaked = [title for title, content in report.sections
              if title.endswith(report.when) and mask(content) != content]
    report.sections = [(title, mask(content)) for title, content in report.sections]
    if report.failed and report.longrepr is not None:
        text = str(report.longrepr)
        if mask(text) != text:
            report.longrepr = mask(text) + "\n(a GitHub token in this report was masked)"
    elif leaked and report.passed:
        report.outcome = "failed"
        report.longrepr = f"a GitHub token appeared in the test's output ({', '.join(leaked)})"
    _no_skip_for_missing_fixtures(report)


def _no_skip_for_missing_fixtures(report: pytest.TestReport) -> None:
    """In CI a test skipped for missing fixtures fails: the fixtures are part of the project."""
    if not (os.environ.get("CI") and report.skipped and isinstance(report.longrepr, tuple)):
        return
    reason = str(report.longrepr[-1])
    if "fixture" in reason.lower() and "not available" in reason.lower():
        report.outcome = "failed"
        report.longrepr = f"skipped for missing fixtures in CI: {reason}"


def without_written(jsonl: str) -> str:
    """Exported runs without ``updated_at`` (when each was written in its
    knowledge base), to compare what two knowledge bases hold."""
    import json

    recs = [json.loads(x) for x in jsonl.splitlines()]
    assert all(rec.pop("updated_at") for rec in recs)
    return "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in recs)


@dataclass
class Result:
    code: int
    out: str
    err: str


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in its own directory with its own knowledge base."""
    monkeypatch.chdir(tmp_path)
    for var in ("TRIAGE_DB", "TRIAGE_RULES", "TRIAGE_TEMPLATES", "GITHUB_TOKEN", "GH_TOKEN", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COLUMNS", "110")
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path.parent / f"{tmp_path.name}.cache"))


@pytest.fixture(autouse=True)
def _default_limits() -> Iterator[None]:
    """Every test starts with the limits at their defaults, whatever a command run in
    this process before set (:func:`triage.limits.configure`, at each command's start)."""
    from triage import limits
    from triage.settings import Settings

    limits.configure(Settings())
    yield
    limits.configure(Settings())


@pytest.fixture
def limits_from() -> Callable[..., None]:
    """``limits_from(TRIAGE_MAX_TEXT="100", ...)``: these limits in force for the rest of the
    test, read as a command reads them (the limits go back to their defaults after it)."""
    from triage import limits
    from triage.settings import Settings

    return lambda **env: limits.configure(Settings.from_env(env))


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    """Under `make mutation`, every cache of the package starts empty: a result
    kept from the unmutated code (``stats.compare`` keeps its answers) would
    hide the mutant it should have run through."""
    if not MUTATION:
        return
    for name, module in list(sys.modules.items()):
        if name == "triage" or name.startswith("triage."):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear):
                    clear()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """Run ``triage ARGS`` in-process; returns (exit code, stdout, stderr)."""
    from triage.cli import main

    def run(*args: str) -> Result:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    """A copy of the bundled rules (and example runs) in the test directory."""
    dest = tmp_path / "rules"
    shutil.copytree(RULES, dest)
    shutil.copytree(EXAMPLE_RUNS.parent, tmp_path / "examples")
    return dest


@pytest.fixture
def seeded(cli, rules_dir: Path) -> Path:
    """The bundled investigation loaded into ./kb.sqlite."""
    r = cli("import", str(EXAMPLE_RUNS))
    assert r.code == 0, r.err
    return rules_dir


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare text with tests/golden/NAME; --update-golden rewrites it."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if request.config.getoption("--update-golden"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"no golden file {path.name}; run pytest --update-golden once and review it"
        assert text == path.read_text(encoding="utf-8")

    return check
