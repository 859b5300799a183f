"""Concurrent writers and posters against one knowledge base.

Three scenarios, each in separate ``triage`` processes as a CI fleet runs them:

* ``add-run``: PROCS processes, each recording RUNS different runs one after
  the other: PROCS x RUNS runs stored, no process fails, no duplicate;
* ``same run``: PROCS processes recording the same new run at once: every one
  exits 0 and there is one row;
* ``post``: POSTERS ``triage post`` at once on one PR, against the tests' fake
  GitHub, ROUNDS times from no comment: exactly one comment every round.

Usage::

    python bench/bench_concurrency.py                       # SQLite: 16 x 50, 16, 8 x 20
    python bench/bench_concurrency.py --db postgresql+psycopg://postgres@127.0.0.1/empty
    python bench/bench_concurrency.py --procs 4 --runs 3 --posters 4 --rounds 2   # make bench QUICK=1

Exits 1 when a guarantee does not hold.  The PostgreSQL database given is
used as it is: give an empty one (the benchmark's investigation is PR 30433).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import print_rows, verdict  # noqa: E402

PR = "30433"
REPO = "sgl-project/sglang"
CONFIG = "kimik26-fp8-1k1k-1p1d"


@dataclass
class Outcome:
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)  # "exit N: stderr", one per failed process
    rows: int = 0
    duplicates: int = 0
    comments: list[int] = field(default_factory=list)  # per post round


def triage(db: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``triage --db DB --rules ROOT/rules ARGS`` in a new process."""
    cmd = [sys.executable, "-m", "triage", "--db", db, "--rules", str(ROOT / "rules"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=600)


def _failure(r: subprocess.CompletedProcess) -> str | None:
    return None if r.returncode == 0 else f"exit {r.returncode}: {r.stderr.strip()[-300:]}"


def counts(db: str) -> tuple[int, int]:
    """(runs, identities stored more than once) of the benchmark's investigation."""
    from sqlalchemy import create_engine, text

    from triage.kb.store import resolve_url

    engine = create_engine(resolve_url(db))
    try:
        with engine.connect() as c:
            rows = c.execute(text("SELECT count(*) FROM run WHERE investigation_id = 'kimik26-disagg'")).scalar()
            dup = c.execute(text("SELECT count(*) FROM (SELECT run_id, config FROM run GROUP BY investigation_id, "
                                 "run_id, config HAVING count(*) > 1) d")).scalar()
    finally:
        engine.dispose()
    return int(rows or 0), int(dup or 0)


def prepare(db: str) -> None:
    """Create the knowledge base and load the rules once, before the crowd."""
    r = triage(db, "import", os.devnull)  # a new knowledge base, with the rules loaded
    if r.returncode != 0:
        raise SystemExit(f"cannot prepare {db}: {r.stderr.strip()}")


def add_runs(db: str, procs: int, runs: int, tag: str = "w") -> Outcome:
    """``procs`` processes, each adding ``runs`` different runs in turn."""

    def worker(p: int) -> list[str]:
        bad = []
        for i in range(runs):
            r = triage(db, "add-run", "--pr", PR, "--run-id", f"{tag}{p}-{i}", "--config", CONFIG,
                       "--status", "passed", "--metric", f"gsm8k=0.9{i % 10}/1319")
            if (f := _failure(r)) is not None:
                bad.append(f)
        return bad

    before, _ = counts(db)
    out = Outcome()
    start = time.perf_counter()
    with ThreadPoolExecutor(procs) as pool:
        for bad in pool.map(worker, range(procs)):
            out.failures += bad
    out.seconds = time.perf_counter() - start
    after, out.duplicates = counts(db)
    out.rows = after - before
    return out


def same_run(db: str, procs: int, run_id: str = "same-1") -> Outcome:
    """``procs`` processes recording one new run at once."""
    out = Outcome()
    start = time.perf_counter()
    with ThreadPoolExecutor(procs) as pool:
        results = list(pool.map(lambda _: triage(db, "add-run", "--pr", PR, "--run-id", run_id, "--config", CONFIG,
                                                 "--status", "failed", "--metric", "gsm8k=0.879/1319"), range(procs)))
    out.seconds = time.perf_counter() - start
    out.failures = [f for r in results if (f := _failure(r)) is not None]
    from sqlalchemy import create_engine, text

    from triage.kb.store import resolve_url

    engine = create_engine(resolve_url(db))
    with engine.connect() as c:
        out.rows = int(c.execute(text("SELECT count(*) FROM run WHERE run_id = :r"), {"r": run_id}).scalar() or 0)
    engine.dispose()
    out.duplicates = max(0, out.rows - 1)
    return out


def posts(dbs: list[str], posters: int, rounds: int, fake: object) -> Outcome:
    """``posters`` concurrent ``triage post`` (the i-th through ``dbs[i % len(dbs)]``),
    ``rounds`` times, each from a PR without a comment; counts the comments."""
    env = {"GITHUB_API_URL": fake.url, "GITHUB_TOKEN": fake.token}  # type: ignore[attr-defined]
    out = Outcome()
    start = time.perf_counter()
    for _ in range(rounds):
        with fake._lock:  # type: ignore[attr-defined]
            fake._comments[(REPO, int(PR))] = []  # type: ignore[attr-defined]
        with ThreadPoolExecutor(posters) as pool:
            results = list(pool.map(lambda i: triage(dbs[i % len(dbs)], "post", "--pr", PR, env=env), range(posters)))
        out.failures += [f for r in results if (f := _failure(r)) is not None]
        out.comments.append(len(fake.comments(REPO, int(PR))))  # type: ignore[attr-defined]
    out.seconds = time.perf_counter() - start
    return out


def run(db: str, procs: int, runs: int, posters: int, rounds: int) -> list[str]:
    """Every scenario against ``db``; prints the results, returns the failures."""
    from tests.support.fakegithub import FakeGitHub

    prepare(db)
    failures: list[str] = []
    rows: list[tuple[str, str]] = [("knowledge base", db.split("@")[-1]),
                                   ("machine", f"{os.cpu_count()} cores, load average {_load()} at the start")]

    many = add_runs(db, procs, runs)
    rows.append((f"add-run, {procs} processes x {runs}", f"{many.rows} runs, {len(many.failures)} errors, "
                 f"{many.duplicates} duplicates, {many.seconds:.1f} s "
                 f"({many.seconds / max(1, procs * runs):.2f} s per add-run)"))
    _progress(rows[-1])
    if many.failures or many.rows != procs * runs or many.duplicates:
        failures.append(f"add-run: {many.rows} of {procs * runs} runs, {many.duplicates} duplicates, "
                        f"errors: {many.failures[:3]}")

    same = same_run(db, procs)
    rows.append((f"same run, {procs} processes", f"{same.rows} row(s), {len(same.failures)} errors, {same.seconds:.1f} s"))
    _progress(rows[-1])
    if same.failures or same.rows != 1:
        failures.append(f"same run: {same.rows} rows, errors: {same.failures[:3]}")

    with FakeGitHub() as fake:
        posted = posts([db], posters, rounds, fake)
    rows.append((f"post, {posters} at once x {rounds} rounds",
                 f"comments per round {sorted(set(posted.comments))}, {len(posted.failures)} errors, "
                 f"{posted.seconds:.1f} s ({posted.seconds / max(1, rounds):.1f} s per round)"))
    if posted.failures or any(n != 1 for n in posted.comments):
        failures.append(f"post: comments per round {posted.comments}, errors: {posted.failures[:3]}")
    rows.append(("load average at the end", _load()))
    print_rows(rows)
    return failures


def _load() -> str:
    """The 1, 5 and 15 minute load averages (other work on the machine slows every process)."""
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _progress(row: tuple[str, str]) -> None:
    print(f"... {row[0]}: {row[1]}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", help="a SQLAlchemy URL (default: a new SQLite file in a temporary directory)")
    ap.add_argument("--procs", type=int, default=16, help="concurrent add-run processes (default 16)")
    ap.add_argument("--runs", type=int, default=50, help="runs each add-run process records (default 50)")
    ap.add_argument("--posters", type=int, default=8, help="concurrent triage post (default 8)")
    ap.add_argument("--rounds", type=int, default=20, help="rounds of concurrent posts (default 20)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or str(Path(tmp) / "kb.sqlite")
        return verdict([], run(db, args.procs, args.runs, args.posters, args.rounds))  # all of them: wrong results


if __name__ == "__main__":
    sys.exit(main())
