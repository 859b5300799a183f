"""The GitHub fixtures the bot's tests are built against live in the project, with their sources."""

from __future__ import annotations

import json

from tests.support.fakegithub import fixtures_dir


def test_every_fixture_is_in_the_project_and_parses():
    root = fixtures_dir()
    assert root.is_relative_to(fixtures_dir().parents[1])  # tests/fixtures/github
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json"))
    for name in ("rest/issues.list-comments.json", "rest/actions.list-jobs-for-workflow-run.json",
                 "webhooks/workflow_run.completed.json", "webhooks/workflow_run.completed.with-pull-requests.json",
                 "webhooks/issue_comment.created.json"):
        assert name in files
    for name in files:
        json.loads((root / name).read_text(encoding="utf-8"))
    sources = (root / "README.md").read_text(encoding="utf-8")
    for name in files:
        assert name.rpartition("/")[2].removesuffix(".json") in sources, f"{name}: no source in README.md"


def test_a_skip_for_missing_fixtures_fails_in_ci(pytester, monkeypatch):
    pytester.makeconftest("from tests.conftest import pytest_runtest_makereport  # noqa: F401\n")
    pytester.makepyfile("import pytest\n\ndef test_x():\n    pytest.skip('shared GitHub fixtures not available')\n")
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    monkeypatch.delenv("CI")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
