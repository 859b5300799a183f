"""Every shell block of the README runs as written, from a fresh copy of the
repository's files, and prints what the README shows.

The blocks run in order in one directory, as a reader following the README
would (state carries from one block to the next), with the installed
``triage`` first on PATH and GitHub answered by the tests' fake. A block
preceded by ``<!-- docs-test: skip REASON -->`` is not run (the install
commands, a server that keeps running); one preceded by ``<!-- docs-test:
fresh REASON -->`` runs in an empty directory of its own, as a new user's
would (the walk-through test). A line ``export GITHUB_TOKEN=…`` keeps the
fake's token. Every command must exit 0.

**Outputs.** Comment lines that start with ``#`` and three spaces right
after a command are what that command prints (stdout and stderr together).
A block that shows any runs one command at a time, and each command's
output must be the one shown, within this normalisation: runs of blank
space (line breaks included) count as one space, so the README may wrap a
line anywhere; ``…`` stands for any text (to leave out what does not
matter); times (``2026-07-01T03:14:15Z``, ``2026-07-01 03:14``) read
``<time>``, and the test's directory reads ``.``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = re.compile(r"<!--\s*docs-test:\s*(?:skip|fresh)\b(.*?)-->")
FRESH = re.compile(r"<!--\s*docs-test:\s*fresh\b(.*?)-->")


def shell_blocks(text: str, marker: re.Pattern = SKIP) -> list[tuple[int, str, str | None]]:
    """(line, body, reason or None) of every ```sh block: the reason of the ``marker``
    (skip or fresh) above it."""
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
            m = marker.search(before)
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


OUTPUT = "#   "  # a comment line after a command that shows what it prints


def steps(body: str) -> list[tuple[str, list[str] | None]]:
    """(command, the output lines the README shows after it or None) of a block, in order."""
    lines = body.splitlines()
    out: list[tuple[str, list[str] | None]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            assert not line.startswith(OUTPUT), f"output shown after no command: {line!r}"
            i += 1
            continue
        command = [line]
        while command[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            command.append(lines[i])
        i += 1
        shown = []
        while i < len(lines) and lines[i].startswith(OUTPUT):
            shown.append(lines[i][len(OUTPUT):])
            i += 1
        out.append(("\n".join(command), shown or None))
    return out


TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d| UTC)?")


def normalised(text: str, where: Path) -> str:
    """Output as the README shows it: the directory as ``.``, times as ``<time>``, blank runs as one space."""
    text = TIME.sub("<time>", text.replace(str(where), "."))
    return " ".join(text.split())


def shows(shown: list[str], printed: str, where: Path) -> bool:
    """Whether ``printed`` is what the README ``shown``, ``…`` standing for any text."""
    want = normalised("\n".join(shown), where)
    pattern = "".join(".*?" if part == "…" else re.escape(part) for part in re.split("(…)", want))
    return re.fullmatch(pattern, normalised(printed, where), re.S) is not None


def run_block(line: int, body: str, where: Path, env: dict) -> list[str]:
    """Run one block in ``where``: whole, or when it shows outputs, a command at a
    time with each output checked. Returns what each command printed."""
    body = _prepared(body)
    parts = steps(body)
    if not any(shown for _, shown in parts):
        parts = [(body, None)]
    printed = []
    for command, shown in parts:
        script = "set -euo pipefail\n{\n" + command + "\n} 2>&1"
        r = subprocess.run(["bash", "-c", script], cwd=where, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"README.md:{line}: exit {r.returncode}:\n{command}\n{r.stdout[-3000:]}"
        assert "Traceback" not in r.stdout, f"README.md:{line}:\n{r.stdout[-3000:]}"
        if shown is not None:
            assert shows(shown, r.stdout, where), (
                f"README.md:{line}: `{command.splitlines()[0]}` printed\n{r.stdout}\nwhere the README shows\n"
                + "\n".join(shown))
        printed.append(r.stdout)
    return printed


def _env(tmp_path: Path, fake_github) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIAGE_")}
    return env | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        "HOME": str(tmp_path),
        "COLUMNS": "110",
        "GITHUB_API_URL": fake_github.url,
        "GITHUB_TOKEN": fake_github.token,
    }


def test_readme_has_shell_blocks():
    blocks = shell_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len([b for b in blocks if b[2] is None]) >= 2
    assert sum(1 for _, body, _ in blocks for _, shown in steps(body) if shown) >= 8  # outputs are checked


@pytest.mark.slow
def test_every_readme_command_runs_as_written(tmp_path, fake_github):
    for name in ("rules", "examples", "templates"):
        shutil.copytree(ROOT / name, tmp_path / name)
    fake_github.add_pull("sgl-project/sglang", 30433)  # the bundled investigation's PR
    env = _env(tmp_path, fake_github)
    ran = 0
    for line, body, skip in shell_blocks((ROOT / "README.md").read_text(encoding="utf-8")):
        if skip is not None:
            continue
        run_block(line, body, tmp_path, env)
        ran += 1
    assert ran >= 2


def test_starting_an_investigation_of_your_own_reaches_a_verdict(tmp_path, fake_github):
    """The README's walk-through, exactly as written, in an empty directory: from
    `triage init` to a confirmed hypothesis, every output as shown."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Starting an investigation of your own", 1)[1].split("\n## ", 1)[0]
    offset = text[: text.index(section)].count("\n")
    blocks = [(offset + line, body) for line, body, fresh in shell_blocks(section, FRESH) if fresh is not None]
    assert blocks, "the walk-through block is marked <!-- docs-test: fresh … -->"
    where = tmp_path / "new-user"
    where.mkdir()
    printed = [out for line, body in blocks for out in run_block(line, body, where, _env(tmp_path, fake_github))]
    assert printed[0].startswith("wrote rules/") and '"status": "confirmed"' in printed[-1], printed[-1]
    assert sorted(p.name for p in where.iterdir()) == ["kb.sqlite", "rules"]


@pytest.mark.parametrize("name", ["aiterdecode-setup-error.log.gz", "nightly-base.log.gz"])
def test_example_logs_are_small_and_readable(name):
    import gzip

    path = ROOT / "examples" / "logs" / name
    assert path.stat().st_size < 4096
    text = gzip.open(path, "rt", encoding="utf-8").read()
    assert text.count("\n") >= 5 and all(re.match(r"\d{4}-\d\d-\d\dT", line) for line in text.splitlines())
