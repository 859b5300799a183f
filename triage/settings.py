"""What the environment configures, read once: :class:`Settings`.

The edges read it (the command line for each command it runs, ``create_app``
for a server, a test for what it tests) and pass it down: no other module of
``triage`` reads the environment.  The limits (:mod:`triage.limits`) are read
by code too deep to be handed them, so the edge sets them with
:func:`triage.limits.configure`.

Nothing here is checked against what a command needs: a value is refused
where it is used (a bad ``GITHUB_API_URL`` by a command that talks to GitHub,
a bad ``TRIAGE_DASHBOARD_URL`` by ``post`` and ``serve``), so a command that
does not use it is not stopped by it.  README.md lists every variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from triage import limits

__all__ = ["PARALLEL_RUNS", "Settings"]

#: Runs at least, for an evaluation in two processes (after an import, or ``report --full``).
PARALLEL_RUNS = 20_000


@dataclass(frozen=True)
class Settings:
    """The configuration of one command or one server.  ``Settings()`` is the
    default of everything, with no cache of parsed rule files;
    :meth:`from_env` reads the environment."""

    db: Optional[str] = None  # TRIAGE_DB: the knowledge base when --db does not name one
    rules: Optional[tuple[str, ...]] = None  # TRIAGE_RULES: rule files or directories (None: unset)
    templates: Optional[str] = None  # TRIAGE_TEMPLATES: a directory whose templates override ours
    cache_dir: Optional[Path] = None  # TRIAGE_CACHE, XDG_CACHE_HOME: parsed rule files (None: off)
    parallel_runs: Optional[int] = PARALLEL_RUNS  # TRIAGE_PARALLEL_RUNS (None: off)
    color: bool = True  # NO_COLOR
    github_api_url: Optional[str] = None  # GITHUB_API_URL (None: https://api.github.com)
    github_token: Optional[str] = None  # GITHUB_TOKEN, else GH_TOKEN
    app_id: Optional[str] = None  # TRIAGE_APP_ID: post and serve as a GitHub App
    app_private_key: Optional[str] = None  # TRIAGE_APP_PRIVATE_KEY: the App's key, PEM
    app_private_key_file: Optional[str] = None  # TRIAGE_APP_PRIVATE_KEY_FILE: a file holding it
    webhook_secret: Optional[str] = None  # TRIAGE_WEBHOOK_SECRET
    dashboard_url: Optional[str] = None  # TRIAGE_DASHBOARD_URL: the dashboard's public address
    limits: Mapping[str, float] = field(default_factory=limits.defaults)  # TRIAGE_MAX_*: every limit in force

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None) -> "Settings":
        """The settings ``env`` gives (default: this process's environment); an
        empty variable is an unset one."""
        env = os.environ if env is None else env

        def get(name: str) -> Optional[str]:
            return env.get(name) or None

        rules = get("TRIAGE_RULES")
        return cls(
            db=get("TRIAGE_DB"),
            rules=tuple(p for p in rules.split(os.pathsep) if p) if rules else None,
            templates=get("TRIAGE_TEMPLATES"),
            cache_dir=_cache_dir(get("TRIAGE_CACHE"), get("XDG_CACHE_HOME")),
            parallel_runs=_parallel_runs(env.get("TRIAGE_PARALLEL_RUNS", "")),
            color=not env.get("NO_COLOR"),
            github_api_url=get("GITHUB_API_URL"),
            github_token=get("GITHUB_TOKEN") or get("GH_TOKEN"),
            app_id=(env.get("TRIAGE_APP_ID") or "").strip() or None,
            app_private_key=get("TRIAGE_APP_PRIVATE_KEY"),
            app_private_key_file=get("TRIAGE_APP_PRIVATE_KEY_FILE"),
            webhook_secret=get("TRIAGE_WEBHOOK_SECRET"),
            dashboard_url=get("TRIAGE_DASHBOARD_URL"),
            limits={name: limits.parse(env.get(limit.env), limit.default) for name, limit in limits.LIMITS.items()},
        )


def _cache_dir(value: Optional[str], xdg: Optional[str]) -> Optional[Path]:
    """``$TRIAGE_CACHE`` (``off``: none), else ``$XDG_CACHE_HOME/triage`` or ``~/.cache/triage``."""
    if value == "off":
        return None
    if value:
        return Path(value)
    return Path(xdg or os.path.join(os.path.expanduser("~"), ".cache")) / "triage"


def _parallel_runs(raw: str) -> Optional[int]:
    """``off`` (None), a positive number of runs, else the default (as a bound, not an error)."""
    raw = raw.strip().lower()
    if raw == "off":
        return None
    return int(raw) if raw.isdigit() and int(raw) > 0 else PARALLEL_RUNS


def without_pydantic_plugins() -> None:
    """Turn off Pydantic's search for plugins (among every installed distribution's entry
    points, when its first model is defined), unless ``PYDANTIC_DISABLE_PLUGINS`` is set:
    triage uses none, and the search costs every command 10-15 ms."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
