"""The hostile-input corpus (tests/hostile/*.case; see tests/hostile/README.md).

Each case runs ``triage`` in its own process against a copy of one seeded
knowledge base and must: exit 2 with exactly the expected stderr lines, take
under 5 s of CPU and 300 MB (the process's peak RSS), and leave the
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
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
BASE = HOSTILE / "base"
CASES = sorted(HOSTILE.glob("*.case"))
ROOT = Path(__file__).resolve().parents[2]

# Seconds of CPU (user + system): what a case costs, whatever else the
# machine runs at the time; wall time is only kept from hanging.
MAX_SECONDS = 5.0
MAX_WALL = 60.0
MAX_RSS = 300 << 20


# --------------------------------------------------------------------------
# Payloads too big to keep in the repository


def _gzip_bomb(path: Path) -> None:
    """8 GiB of one letter (no newline) in about 8 MB of gzip."""
    block = gzip.compress(b"a" * (64 << 20), compresslevel=9)
    with path.open("wb") as f:
        for _ in range(128):  # concatenated gzip members form one stream
            f.write(block)


def _long_line(path: Path) -> None:
    """One 200 MB line, then a short one."""
    with path.open("wb") as f:
        chunk = b"x" * (1 << 20)
        for _ in range(200):
            f.write(chunk)
        f.write(b"\ndone\n")


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


def _bad_scalars(path: Path) -> None:
    """YAML scalars whose construction fails: dates that are no dates, a date
    as a key, !!int and !!float of text, an integer of 5,000 digits."""
    path.write_text("schema_version: 1\ninvestigation: {id: t2, repo: o/r2, pr: 2, title: T, metric: acc}\n"
                    "a: 2001-13-01\nb: 2026-02-30\n2026-01-01: x\nc: !!int abc\nd: !!float abc\n"
                    f"e: {'9' * 5000}\n")


def _fifo(path: Path) -> None:
    """A named pipe that nobody writes: opening it would block for ever."""
    os.mkfifo(path)


def _long_record(path: Path) -> None:
    """One 20 MiB line of records (the limit in force is 16 MiB)."""
    with path.open("wb") as f:
        for _ in range(20):
            f.write(b"x" * (1 << 20))
        f.write(b"\n")


def _long_title(path: Path) -> None:
    """A rule file whose title holds 20,000 characters (the limit is 10,000)."""
    path.write_text("schema_version: 1\ninvestigation: {id: t9, repo: o/r9, pr: 9, metric: acc, title: "
                    + "T" * 20_000 + "}\n")


def _deep_first_line(path: Path) -> None:
    """A first line nested 5,000 deep: deeper than Python's JSON reader recurses."""
    path.write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}\n")


def _huge_json(path: Path) -> None:
    """A 1 GB file, sparse: it costs no disk."""
    with path.open("wb") as f:
        f.write(b'{"results": {')
        f.truncate(1 << 30)


def _deep_results(path: Path) -> None:
    """lm-eval results whose task nests 100,000 arrays deep."""
    path.write_text('{"results": {"t": ' + "[" * 100_000 + "]" * 100_000 + '}, "n-samples": {}}')


def _many_values(path: Path) -> None:
    """Ten million empty arrays: 30 MB."""
    path.write_text('{"results": {"t": [' + "[]," * 10_000_000 + "[]]}}")


def _deep_xml(path: Path) -> None:
    """Test suites nested 100,000 deep."""
    path.write_text("<testsuites>" + "<testsuite>" * 100_000 + "</testsuite>" * 100_000 + "</testsuites>")


def _many_cases(path: Path) -> None:
    """150,000 test cases: 3 MB."""
    with path.open("w") as f:
        f.write("<testsuite>")
        for _ in range(15):
            f.write('<testcase name="t"/>' * 10_000)
        f.write("</testsuite>")


MAKERS = {"gzip-bomb": _gzip_bomb, "long-line": _long_line, "deep-json": _deep_json,
          "many-errors": _many_errors, "bad-scalars": _bad_scalars, "fifo": _fifo, "long-record": _long_record,
          "long-title": _long_title, "deep-first-line": _deep_first_line,
          "huge-json": _huge_json, "deep-results": _deep_results, "many-values": _many_values,
          "deep-xml": _deep_xml, "many-cases": _many_cases}


# --------------------------------------------------------------------------
# Cases


@dataclass
class Case:
    name: str
    what: str = ""
    files: list[str] = field(default_factory=list)
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
        elif key == "file":
            case.files.append(value)
        elif key == "make":
            case.make = value
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


# The child's peak RSS, as wait4 reports it, counts the memory of the process
# it was forked from (Linux keeps the high-water mark across exec): a small
# launcher runs triage and reports the peak of its own child instead.
LAUNCHER = """
import resource, subprocess, sys
code = subprocess.call([sys.executable, "-m", "triage", *sys.argv[2:]])
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss * 1024} {usage.ru_utime + usage.ru_stime}")
sys.exit(code)
"""


def run_triage(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str, float, int]:
    """(exit code, stdout, stderr, CPU seconds, peak RSS in bytes) of one triage process."""
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("TRIAGE_", "GITHUB_", "GH_"))}
    full_env.update({"TRIAGE_DB": "kb.sqlite", "TRIAGE_RULES": "rules",
                     "COLUMNS": "110", "PYTHONPATH": str(ROOT)}, **env)
    with open(cwd / ".out", "wb") as out, open(cwd / ".err", "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(cwd / ".rss"), *args], cwd=cwd, env=full_env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        wall = time.perf_counter() - start
    rss, cpu = (cwd / ".rss").read_text().split()
    assert wall < MAX_WALL, f"took {wall:.1f} s of wall time"
    return (code, (cwd / ".out").read_text("utf-8", "replace"), (cwd / ".err").read_text("utf-8", "replace"),
            float(cpu), int(rss))


def copy_kb(seeded: Path, where: Path) -> None:
    """The seeded directory, its knowledge base told where its rule file now is."""
    shutil.copytree(seeded, where, dirs_exist_ok=True)
    con = sqlite3.connect(where / "kb.sqlite")
    with con:
        con.execute("update rulesource set path = replace(path, ?, ?)", (str(seeded), str(where)))
    con.close()


def write_files(case: Case, where: Path) -> None:
    """The payload into the case's files: the first one made by ``make`` if
    it names a maker; payloads of several files are split by ``--- next`` lines."""
    payloads = case.payload.split(b"\n--- next\n")
    assert len(payloads) == len(case.files) or not case.files, f"{case.name}: one payload per file"
    for i, (name, payload) in enumerate(zip(case.files, payloads)):
        target = where / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if case.make and i == 0:
            MAKERS[case.make](target)
        else:
            target.write_bytes(payload)


def dump(db: Path) -> list[str]:
    con = sqlite3.connect(db)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 60


@dataclass
class Outcome:
    code: int
    err: str
    seconds: float
    rss: int
    before: list[str]
    after: list[str]


def run_case(path: Path, seeded: Path, where: Path) -> Outcome:
    case = parse(path)
    copy_kb(seeded, where)
    write_files(case, where)
    before = dump(where / "kb.sqlite")
    code, _, err, seconds, rss = run_triage(case.run, where, case.env)
    after = dump(where / "kb.sqlite")
    shutil.rmtree(where)  # some payloads are hundreds of MB
    return Outcome(code, err, seconds, rss, before, after)


@pytest.fixture(scope="session")
def outcomes(seeded_kb: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every case, run a few at a time (each process is measured on its own)."""
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("hostile-cases")
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        futures = {p.stem: pool.submit(run_case, p, seeded_kb, root / p.stem) for p in CASES}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.slow  # one fixture runs every case in a few processes first (about 45 s)
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_hostile_case(path: Path, outcomes: dict[str, Outcome]):
    case, got = parse(path), outcomes[path.stem]
    assert "Traceback" not in got.err, got.err[-3000:]
    assert got.code == 2, (got.code, got.err[-2000:])
    assert got.err.splitlines() == case.expect
    assert got.seconds < MAX_SECONDS, f"took {got.seconds:.1f} s of CPU"
    assert got.rss < MAX_RSS, f"peak RSS {got.rss >> 20} MB"
    assert got.after == got.before
