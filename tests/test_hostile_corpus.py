"""The hostile-input corpus (tests/hostile/*.case; see tests/hostile/README.md).

Each case runs ``triage`` in its own process against a copy of one seeded
knowledge base and must: exit 2 with exactly the expected stderr lines, take
under 5 s and 300 MB (the child's peak RSS, from ``wait4``), and leave the
knowledge base's dump unchanged.
"""

from __future__ import annotations

import gzip
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HOSTILE = Path(__file__).resolve().parent / "hostile"
BASE = HOSTILE / "base"
CASES = sorted(HOSTILE.glob("*.case"))
ROOT = Path(__file__).resolve().parents[1]

MAX_SECONDS = 5.0
MAX_RSS = 300 << 20


# --------------------------------------------------------------------------
# Payloads too big to keep in the repository


def _gzip_bomb(path: Path) -> None:
    """8 GiB of zeros (no newline) in about 8 MB of gzip."""
    block = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
    with path.open("wb") as f:
        for _ in range(128):  # concatenated gzip members form one stream
            f.write(block)


def _long_line(path: Path) -> None:
    """One 200 MB line, then a line the extractor reads."""
    with path.open("wb") as f:
        chunk = b"x" * (1 << 20)
        for _ in range(200):
            f.write(chunk)
        f.write(b"\nacc=0.5\n")


def _deep_json(path: Path) -> None:
    """A record whose metrics nest 100,000 arrays deep."""
    path.write_text('{"investigation": "base", "run_id": "9", "config": "c9", "status": "passed", "metrics": '
                    + "[" * 100_000 + "]" * 100_000 + "}\n")


def _many_errors(path: Path) -> None:
    """64 MiB of 'error: x' lines (the limit in force is 16 MiB)."""
    with path.open("wb") as f:
        line = b"error: x\n" * (1 << 16)
        for _ in range(64 << 20 // len(line)):
            f.write(line)


MAKERS = {"gzip-bomb": _gzip_bomb, "long-line": _long_line, "deep-json": _deep_json,
          "many-errors": _many_errors}


# --------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    what: str = ""
    file: str | None = None
    make: str | None = None
    run: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    expect: list[str] = field(default_factory=list)
    payload: bytes = b""


def parse(path: Path) -> Case:
    raw = path.read_bytes()
    head, sep, payload = raw.partition(b"\n---\n")
    assert sep, f"{path.name}: no '---' line"
    case = Case(path.stem, payload=payload)
    for line in head.decode("utf-8").splitlines():
        assert line.startswith("# ") and ": " in line, f"{path.name}: bad header line {line!r}"
        key, value = line[2:].split(": ", 1)
        if key == "case":
            case.what = value
        elif key in ("file", "make"):
            setattr(case, key, value)
        elif key == "run":
            case.run = shlex.split(value)
        elif key == "env":
            name, _, v = value.partition("=")
            case.env[name] = v
        elif key == "expect":
            case.expect.append(value)
        else:
            raise AssertionError(f"{path.name}: unknown header {key!r}")
    assert case.what and case.run and case.expect, f"{path.name}: needs case, run and expect"
    return case


@pytest.fixture(scope="session")
def seeded_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base investigation and its runs, imported once."""
    where = tmp_path_factory.mktemp("hostile-base")
    (where / "rules").mkdir()
    shutil.copy(BASE / "base.yaml", where / "rules" / "base.yaml")
    code, _, err, _, _ = run_triage(["import", str(BASE / "runs.jsonl")], where, {})
    assert code == 0, err
    return where


def run_triage(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str, float, int]:
    """(exit code, stdout, stderr, seconds, peak RSS in bytes) of one triage process."""
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("TRIAGE_", "GITHUB_", "GH_"))}
    full_env.update({"TRIAGE_DB": "kb.sqlite", "TRIAGE_RULES": "rules",
                     "COLUMNS": "110", "PYTHONPATH": str(ROOT)}, **env)
    with open(cwd / ".out", "wb") as out, open(cwd / ".err", "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "triage", *args], cwd=cwd, env=full_env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        killer = threading.Timer(60, lambda: os.kill(proc.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    return (proc.returncode, (cwd / ".out").read_text("utf-8", "replace"), (cwd / ".err").read_text("utf-8", "replace"),
            seconds, usage.ru_maxrss * 1024)


def dump(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 60


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_hostile_case(path: Path, seeded_kb: Path, tmp_path: Path):
    case = parse(path)
    shutil.copytree(seeded_kb, tmp_path, dirs_exist_ok=True)
    if case.file:
        target = tmp_path / case.file
        target.parent.mkdir(parents=True, exist_ok=True)
        if case.make:
            MAKERS[case.make](target)
        else:
            target.write_bytes(case.payload)
    before = dump(tmp_path / "kb.sqlite")
    code, out, err, seconds, rss = run_triage(case.run, tmp_path, case.env)
    assert "Traceback" not in err, err[-3000:]
    assert code == 2, (code, err[-2000:])
    assert err.splitlines() == case.expect
    assert seconds < MAX_SECONDS, f"took {seconds:.1f} s"
    assert rss < MAX_RSS, f"peak RSS {rss >> 20} MB"
    assert dump(tmp_path / "kb.sqlite") == before
