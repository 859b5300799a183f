"""Every shell block of the README runs as written, from a fresh copy of the repository's files.

The blocks run in order in one directory, as a reader following the README
would (state carries from one block to the next), with the installed
``triage`` first on PATH and GitHub answered by the tests' fake. A block
preceded by ``<!-- docs-test: skip REASON -->`` is not run (the install
commands, a server that keeps running); a line ``export GITHUB_TOKEN=…``
keeps the fake's token.  Every command must exit 0.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\b(.*?)-->")


def shell_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(line, body, skip reason or None) of every ```sh block."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() in ("```sh", "```bash", "```console"):
            start = i
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            before = "\n".join(lines[max(0, start - 3):start])
            m = SKIP.search(before)
            out.append((start + 1, "\n".join(body), m.group(1).strip() if m else None))
        i += 1
    return out


def _prepared(body: str) -> str:
    kept = []
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("source .venv/bin/activate"):
            continue  # triage is already first on PATH
        if re.match(r"export (GITHUB_TOKEN|GH_TOKEN)=…", s):
            continue  # a placeholder: the fake's token is set
        kept.append(line)
    return "\n".join(kept)


def test_readme_has_shell_blocks():
    blocks = shell_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len([b for b in blocks if b[2] is None]) >= 2


def test_every_readme_command_runs_as_written(tmp_path, fake_github):
    for name in ("rules", "examples", "templates"):
        shutil.copytree(ROOT / name, tmp_path / name)
    fake_github.add_pull("sgl-project/sglang", 30433)  # the bundled investigation's PR
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIAGE_")}
    env |= {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        "HOME": str(tmp_path),
        "COLUMNS": "110",
        "GITHUB_API_URL": fake_github.url,
        "GITHUB_TOKEN": fake_github.token,
    }
    ran = 0
    for line, body, skip in shell_blocks((ROOT / "README.md").read_text(encoding="utf-8")):
        if skip is not None:
            continue
        script = "set -euo pipefail\n" + _prepared(body)
        r = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, f"README.md:{line}: the block failed (exit {r.returncode}):\n{r.stderr[-3000:]}"
        assert "Traceback" not in r.stderr, f"README.md:{line}:\n{r.stderr[-3000:]}"
        ran += 1
    assert ran >= 2


@pytest.mark.parametrize("name", ["aiterdecode-setup-error.log.gz", "nightly-base.log.gz"])
def test_example_logs_are_small_and_readable(name):
    import gzip

    path = ROOT / "examples" / "logs" / name
    assert path.stat().st_size < 4096
    text = gzip.open(path, "rt", encoding="utf-8").read()
    assert text.count("\n") >= 5 and all(re.match(r"\d{4}-\d\d-\d\dT", line) for line in text.splitlines())
