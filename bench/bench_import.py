"""Benchmark: `triage import` of 100,000 runs against a bare sqlite3 executemany.

    .venv/bin/python bench/bench_import.py [--runs N] [--repeat R] [--limit X]

Generates (seeded, deterministic) N run records for the bundled investigation
in bench/out/ as JSON Lines, then, best of R each, each time into a fresh
SQLite knowledge base with the bundled rules already loaded:

  executemany  the same rows, already in their stored form (JSON text as
               triage writes it, timestamps as SQLAlchemy does), into the same schema
               (created from the project's own SQLModel.metadata, same
               PRAGMAs as triage), with Python's sqlite3 executemany and one
               commit: the cost of the inserts alone.
  import       triage's import in-process (`import_file` in one session,
               committed): read the file, parse and check every record,
               write them in bulk.  In-process, because that is the work the
               import does per row; the command's fixed costs (interpreter
               start-up, rule-file checks) and the one evaluation after the
               import are not per-row work and are timed apart:
  command      `triage import FILE` as a subprocess, end to end, including
               the evaluation of the investigation over all its runs.

Prints rows/s of each and the ratio import / executemany; exits 1 when the
ratio is below --limit (0.5), or when the knowledge base does not hold
exactly the generated runs afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from common import print_rows, verdict  # noqa: E402
from triage.ingest.records import check_record  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
SEED = 20260626
GENERATOR_VERSION = 1
INVESTIGATION = "kimik26-disagg"
CONFIGS = [
    "kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-mtp", "kimik26-fp8-1k1k-1p1d-aiterdecode",
    "kimik26-fp8-1k1k-1p1d-nocudagraph", "kimik26-fp8-1k1k-1p1d-mtp-specdecode", "kimik26-fp8-1k1k-1p1d-nsplit1",
    "kimik26-fp8-single-node", "kimik26-fp8-1k1k-1p1d-page256",
]
IMAGES = [f"v0.5.{v}-rocm720-mi35x-202606{d:02d}" for v, d in ((13, 23), (13, 24), (13, 25), (14, 26), (14, 27))]


def generate(path: Path, n: int) -> None:
    """n records, one JSON object a line, like `triage export` writes them."""
    r = random.Random(SEED)
    t0 = datetime(2026, 6, 1, tzinfo=timezone.utc)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for i in range(n):
            run_id = str(28_000_000_000 + i * 7 + r.randrange(7))
            metrics = {"gsm8k": {"value": round(r.uniform(0.86, 0.95), 3), "n": 1319}}
            if r.random() < 0.2:
                metrics["throughput"] = {"value": round(r.uniform(900, 1400), 1)}
            rec = {
                "investigation": INVESTIGATION,
                "run_id": run_id,
                "config": r.choice(CONFIGS),
                "status": r.choice(["passed", "failed", "failed", "crashed"]),
                "metrics": metrics,
                "provenance": {"sha": f"{r.randrange(16 ** 7):07x}", "image": r.choice(IMAGES),
                               "branch": r.choice(["main", "amd/kimik26-disagg-decode-repro"]), "runner": f"mi355x-{r.randrange(40)}"},
                "url": f"https://github.com/sgl-project/sglang/actions/runs/{run_id}",
                "time": (t0 + timedelta(seconds=i * 37)).isoformat(),
            }
            if r.random() < 0.1:
                rec["note"] = f"re-run {r.randrange(5)} after a runner lost communication"
            rec["excluded"] = False
            f.write(json.dumps(rec) + "\n")
    os.replace(tmp, path)


def stored_rows(path: Path) -> list[tuple]:
    """The records as the run table stores them (what executemany inserts)."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect

    from triage.kb import models as m
    from triage.kb.store import json_text

    dialect = sqlite_dialect.dialect()
    to_time = m.Run.__table__.c.time.type.dialect_impl(dialect).bind_processor(dialect)
    stamp = to_time(datetime.now(timezone.utc))
    rows = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            rec = check_record(json.loads(line), f"{path}:{no}")
            rows.append((INVESTIGATION, rec.run_id, rec.config, rec.status, json_text(rec.metrics), json_text(rec.provenance),
                         rec.url, to_time(rec.time) if rec.time else None, rec.note, None, None, None, 0, None, stamp, stamp))
    return rows


def fresh_kb(where: Path) -> str:
    """A knowledge base with the bundled rules loaded and no runs; returns its URL."""
    where.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "rules", where / "rules", dirs_exist_ok=True)
    db = where / "kb.sqlite"
    for p in where.glob("kb.sqlite*"):
        p.unlink()
    triage = Path(sys.executable).parent / "triage"
    subprocess.run([str(triage), "--db", str(db), "check"], cwd=where, check=True, stdout=subprocess.DEVNULL)
    # a command that may start a knowledge base: it loads the rule files into it
    subprocess.run([str(triage), "--db", str(db), "signatures", "list"], cwd=where, check=True,
                   stdout=subprocess.DEVNULL)
    return f"sqlite:///{db}"


COLUMNS = ("investigation_id, run_id, config, status, metrics, provenance, url, time, note, log_excerpt, "
           "signature_id, signature_line, excluded, excluded_reason, created_at, updated_at")


def time_executemany(where: Path, rows: list[tuple]) -> float:
    url = fresh_kb(where)
    con = sqlite3.connect(url[len("sqlite:///"):])
    for pragma in ("PRAGMA foreign_keys=ON", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"):
        con.execute(pragma)
    sql = f"INSERT INTO run ({COLUMNS}) VALUES ({', '.join('?' * 16)})"
    t = time.perf_counter()
    con.executemany(sql, rows)
    con.commit()
    elapsed = time.perf_counter() - t
    con.close()
    return elapsed


def time_import(where: Path, path: Path, n: int) -> float:
    from triage.ingest.importer import import_file
    from triage.kb import store
    from triage.kb.db import _engines

    url = fresh_kb(where)
    _engines.clear()
    store.get_engine(url)  # opening the knowledge base is not per-row work (nor timed for executemany)
    t = time.perf_counter()
    with store.session(url) as s:
        result = import_file(s, str(path))
    elapsed = time.perf_counter() - t
    _engines.pop(url).dispose()
    if result.total != n or result.created != n:
        raise SystemExit(f"import: {result.total} records, {result.created} new; expected {n}")
    return elapsed


def time_command(where: Path, path: Path) -> float:
    fresh_kb(where)
    triage = Path(sys.executable).parent / "triage"
    t = time.perf_counter()
    subprocess.run([str(triage), "import", str(path)], cwd=where, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def count_runs(where: Path) -> int:
    con = sqlite3.connect(where / "kb.sqlite")
    try:
        return con.execute("select count(*) from run").fetchone()[0]
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--limit", type=float, default=0.5, help="smallest allowed ratio of rows/s, import / executemany")
    ap.add_argument("--no-command", action="store_true", help="skip the end-to-end `triage import` subprocess")
    args = ap.parse_args(argv)

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"import-{args.runs}-v{GENERATOR_VERSION}.jsonl"
    if not path.exists():
        t = time.perf_counter()
        generate(path, args.runs)
        print(f"generated {path.relative_to(ROOT)} in {time.perf_counter() - t:.1f} s")
    rows = stored_rows(path)
    n = len(rows)

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        best_em = best_imp = float("inf")
        for _ in range(args.repeat):  # alternate, so that both see the same machine
            best_em = min(best_em, time_executemany(base / "em", rows))
            best_imp = min(best_imp, time_import(base / "imp", path, n))
        ok = count_runs(base / "em") == n and count_runs(base / "imp") == n
        cmd = None if args.no_command else time_command(base / "cmd", path)
        ok = ok and (cmd is None or count_runs(base / "cmd") == n)

    ratio = best_em / best_imp  # rows/s of import over rows/s of executemany
    size = path.stat().st_size
    out = [
        ("records", f"{path.relative_to(ROOT)}: {n:,} runs, {size / 1e6:.1f} MB of JSON Lines"),
        ("sqlite3 executemany", f"{best_em:.3f} s  {n / best_em:>9,.0f} rows/s  (best of {args.repeat})"),
        ("import (in-process)", f"{best_imp:.3f} s  {n / best_imp:>9,.0f} rows/s  (best of {args.repeat})"),
        ("ratio import / executemany", f"{ratio:.2f}  (limit {args.limit:g})"),
    ]
    if cmd is not None:
        out.append(("`triage import` command", f"{cmd:.3f} s  {n / cmd:>9,.0f} rows/s  (start-up, import, one evaluation)"))
    print_rows(out)
    failures = []
    if ratio < args.limit:
        failures.append(f"import reached {ratio:.2f} of executemany's rows/s (limit {args.limit:g})")
    return verdict(failures, [] if ok else ["the knowledge base does not hold exactly the generated runs"])


if __name__ == "__main__":
    sys.exit(main())
