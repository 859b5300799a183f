"""Mermaid's own parser, for checking the diagrams the renderers write."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest


CHECKER = Path(__file__).resolve().parents[1] / "mermaid"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI needs the Mermaid syntax check")
    pytest.skip(reason)


def _install(npm: str) -> None:
    """``npm ci`` once: the test processes that need the checker take turns (one
    installing while another reads ``node_modules`` would find it half there)."""
    import fcntl

    installed = CHECKER / "node_modules" / ".package-lock.json"
    lock = CHECKER / "package-lock.json"
    with (CHECKER / ".install.lock").open("w") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)
        if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
            return
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=CHECKER,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            _unavailable("npm ci in tests/mermaid failed: " + (r.stderr.strip().splitlines() or ["?"])[-1])


@pytest.fixture(scope="session")
def mermaid_parse():
    """``parse(diagrams)`` -> one ``{"ok": bool, "type"|"error": str}`` per diagram."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        _unavailable("node and npm are needed for the Mermaid syntax check")
    _install(npm)

    def parse(diagrams: list[str]) -> list[dict]:
        r = subprocess.run([node, "check.mjs"], cwd=CHECKER, input=json.dumps(diagrams), capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    return parse
