"""The settings: every variable the README documents, read once per command into
:class:`triage.settings.Settings`, and refused where it is used when it is bad."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from triage import limits
from triage.errors import InputError
from triage.settings import PARALLEL_RUNS, Settings


def test_the_defaults():
    got = Settings.from_env({})
    assert got == Settings(cache_dir=Path(os.path.expanduser("~")) / ".cache" / "triage")
    assert (got.db, got.rules, got.templates, got.github_api_url, got.github_token, got.app_id,
            got.app_private_key, got.app_private_key_file, got.webhook_secret, got.dashboard_url) == (None,) * 10
    assert got.parallel_runs == PARALLEL_RUNS == 20_000 and got.color is True
    assert got.limits == limits.defaults() and got.limits["text"] == 1 << 20
    assert Settings().cache_dir is None  # nothing configured: no cache of rule files


@pytest.mark.parametrize("env, field, value", [
    ({"TRIAGE_DB": "postgresql+psycopg://u@h/db"}, "db", "postgresql+psycopg://u@h/db"),
    ({"TRIAGE_DB": ""}, "db", None),
    ({"TRIAGE_RULES": os.pathsep.join(["a", "", "b/c.yaml"])}, "rules", ("a", "b/c.yaml")),
    ({"TRIAGE_RULES": os.pathsep}, "rules", ()),  # set, naming nothing: no rule files (not ./rules)
    ({"TRIAGE_TEMPLATES": "mine"}, "templates", "mine"),
    ({"TRIAGE_CACHE": "/c"}, "cache_dir", Path("/c")),
    ({"TRIAGE_CACHE": "off", "XDG_CACHE_HOME": "/x"}, "cache_dir", None),
    ({"XDG_CACHE_HOME": "/x"}, "cache_dir", Path("/x/triage")),
    ({"TRIAGE_PARALLEL_RUNS": "5"}, "parallel_runs", 5),
    ({"TRIAGE_PARALLEL_RUNS": " Off "}, "parallel_runs", None),
    ({"TRIAGE_PARALLEL_RUNS": "0"}, "parallel_runs", PARALLEL_RUNS),  # not a positive number: the default
    ({"TRIAGE_PARALLEL_RUNS": "many"}, "parallel_runs", PARALLEL_RUNS),
    ({"NO_COLOR": "1"}, "color", False),
    ({"NO_COLOR": ""}, "color", True),
    ({"GITHUB_API_URL": "https://ghe.example.com/api/v3"}, "github_api_url", "https://ghe.example.com/api/v3"),
    ({"GH_TOKEN": "gh"}, "github_token", "gh"),
    ({"GITHUB_TOKEN": "github", "GH_TOKEN": "gh"}, "github_token", "github"),
    ({"GITHUB_TOKEN": "", "GH_TOKEN": "gh"}, "github_token", "gh"),
    ({"TRIAGE_APP_ID": " 4242 "}, "app_id", "4242"),
    ({"TRIAGE_APP_ID": "  "}, "app_id", None),
    ({"TRIAGE_APP_PRIVATE_KEY": "PEM"}, "app_private_key", "PEM"),
    ({"TRIAGE_APP_PRIVATE_KEY_FILE": "app.pem"}, "app_private_key_file", "app.pem"),
    ({"TRIAGE_WEBHOOK_SECRET": "s" * 32}, "webhook_secret", "s" * 32),
    ({"TRIAGE_DASHBOARD_URL": "https://triage.example.com/"}, "dashboard_url", "https://triage.example.com/"),
])
def test_each_variable(env, field, value):
    assert getattr(Settings.from_env(env), field) == value


@pytest.mark.parametrize("raw, value", [("100", 100), ("0.5", 0.5), ("0", 1 << 20), ("-3", 1 << 20),
                                        ("inf", 1 << 20), ("nan", 1 << 20), ("lots", 1 << 20), ("", 1 << 20)])
def test_a_limit_is_a_positive_number_else_its_default(raw, value):
    assert Settings.from_env({"TRIAGE_MAX_TEXT": raw}).limits["text"] == value


def test_every_limit_has_its_variable():
    env = {limit.env: "7" for limit in limits.LIMITS.values()}
    assert Settings.from_env(env).limits == {name: 7 for name in limits.LIMITS}


def test_limits_are_in_force_once_configured():
    limits.configure(Settings.from_env({"TRIAGE_MAX_TEXT": "100", "TRIAGE_MAX_STEP_SECONDS": "0.5"}))
    assert (limits.get("text"), limits.seconds("stuck_seconds"), limits.get("log_line")) == (100, 0.5, 8 << 20)
    limits.configure(Settings())
    assert limits.get("text") == 1 << 20


def test_the_environment_is_read_when_asked_and_the_settings_stay(monkeypatch):
    monkeypatch.setenv("TRIAGE_DB", "one.sqlite")
    first = Settings.from_env()
    monkeypatch.setenv("TRIAGE_DB", "two.sqlite")
    assert (first.db, Settings.from_env().db) == ("one.sqlite", "two.sqlite")
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.db = "three.sqlite"  # type: ignore[misc]


def test_each_command_reads_the_environment_as_it_starts(cli, monkeypatch, tmp_path: Path):
    """In one process (a test, a shell's loop over ``main``) each command sees the environment of its start."""
    for name in ("one.sqlite", "two.sqlite"):
        monkeypatch.setenv("TRIAGE_DB", name)
        assert cli("import", os.devnull).code == 0
    assert (tmp_path / "one.sqlite").exists() and (tmp_path / "two.sqlite").exists()


def test_each_command_sets_the_limits_as_it_starts(cli, seeded, monkeypatch, tmp_path: Path):
    (tmp_path / "runs.jsonl").write_text('{"run_id": "1", "config": "c", "status": "passed", "note": "' + "x" * 200 + '"}\n')
    monkeypatch.setenv("TRIAGE_MAX_TEXT", "100")
    r = cli("import", "runs.jsonl", "--pr", "30433")
    assert r.code == 2 and "TRIAGE_MAX_TEXT" in r.err, r.err
    monkeypatch.delenv("TRIAGE_MAX_TEXT")
    assert limits.get("text") == 100  # in force until the next command starts
    r = cli("import", "runs.jsonl", "--pr", "30433")
    assert r.code == 0 and limits.get("text") == 1 << 20, r.err


def test_bad_values_are_refused_where_they_are_used(tmp_path: Path):
    """As before: a bad GITHUB_API_URL by what talks to GitHub, a bad TRIAGE_DASHBOARD_URL by
    post and serve, an App without its key by what posts as the App; each a clear InputError."""
    from triage.github.checks import validate_dashboard_url
    from triage.github.client import GitHubClient
    from triage.serve.auth import from_settings

    bad = Settings.from_env({"GITHUB_API_URL": "api.github.com", "TRIAGE_DASHBOARD_URL": "javascript:alert(1)",
                             "TRIAGE_APP_ID": "4242", "TRIAGE_APP_PRIVATE_KEY_FILE": str(tmp_path / "none.pem")})
    with pytest.raises(InputError, match="check GITHUB_API_URL"):
        GitHubClient(bad.github_api_url, bad.github_token)
    with pytest.raises(InputError, match="TRIAGE_DASHBOARD_URL must be the dashboard's http"):
        validate_dashboard_url(bad.dashboard_url)
    with pytest.raises(InputError, match="TRIAGE_APP_PRIVATE_KEY_FILE .*none.pem: No such file"):
        from_settings(bad)
    with pytest.raises(InputError, match="give the App's private key in TRIAGE_APP_PRIVATE_KEY"):
        from_settings(dataclasses.replace(bad, app_private_key_file=None))
