"""Headless Chromium (Debian's) on a page: its DOM, or a screenshot."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed (.ci/run installs it)")
    pytest.skip("chromium is not installed (apt-get install -y chromium)")


def browse(url: str, where: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--hide-scrollbars", f"--user-data-dir={where / 'chromium-profile'}", "--window-size=1280,4000",
            *extra, url]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)
