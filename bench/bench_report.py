"""Benchmark: the report, add-run and import at scale, against the floor of their imports.

Every ratio is measured side by side in the same run: each sample is a pair,
the baseline and the command run one right after the other (their order
alternating), and the ratio is the median of the pairs' ratios.  Peak memory
is the command's maximum resident set (``wait4``).

  report   ``triage report --pr 30433 --format json`` on one investigation of
           1k / 10k / 100k runs, and on 100k runs beside 9 and 199 other
           investigations (100 runs each); rules and runs unchanged since the
           last evaluation (the usual case: a bot posting the same comment).
           Baseline: ``python -c "import sqlmodel, typer, yaml, jinja2, rapidfuzz"``;
           the reports beside other investigations also against the report of
           one investigation, side by side, for information: the 10% the issue
           allows is about what two interleaved runs of a 0.7 s command move by
           on a shared machine, so it is judged in instructions
           (``bench_instructions.py``).
  full     the same report with ``--full`` (a whole evaluation), 1k / 10k / 100k.
  add-run  one new run into the 100k knowledge base (a copy each time), then the
           evaluation it triggers.  Baseline: the import floor.  Then the
           report right after such an add-run (what a bot posts), against the
           same floor (information: the issue sets no limit for it).
  import   ``triage import`` of the 100k records into a new knowledge base, the
           whole command.  Baseline: a script that reads the same file with
           ``json.loads`` and writes the rows with ``sqlite3``'s ``executemany``.

The knowledge bases are generated once into ``bench/out/`` by
``bench/generate.py``.  ``--quick``: 1k runs only, one pair each, as a sanity
check.  Exit 1 when a limit of the issue is not met (unless ``--quick``).

Usage: .venv/bin/python bench/bench_report.py [--pairs N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import compile_bytecode, print_rows, verdict  # noqa: E402


def build(out: Path, runs: int, investigations: int = 1, others_runs: int = 100) -> Path:
    """``generate.build`` in a process of its own: the records it makes would grow this
    process, and a child forked from it starts with its peak (it would floor every
    command's measured peak memory)."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "generate.py"), str(out),
                           "--runs", str(runs), "--investigations", str(investigations),
                           "--others-runs", str(others_runs)], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


OUT = Path(__file__).resolve().parent / "out"
PY = sys.executable
FLOOR = [PY, "-c", "import sqlmodel, typer, yaml, jinja2, rapidfuzz"]
BASELINE_IMPORT = r"""
import json, sqlite3, sys
rows = []
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        r = json.loads(line)
        rows.append((r["investigation"], r["run_id"], r["config"], r["status"], json.dumps(r.get("metrics", {})),
                     json.dumps(r.get("provenance", {})), r.get("url"), r.get("time"), r.get("note"),
                     r.get("signature"), bool(r.get("excluded")), r.get("excluded_reason")))
db = sqlite3.connect(sys.argv[2])
db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE run (pk INTEGER PRIMARY KEY, investigation_id TEXT, run_id TEXT, config TEXT, status TEXT,"
           " metrics JSON, provenance JSON, url TEXT, time DATETIME, note TEXT, signature_id TEXT, excluded BOOLEAN,"
           " excluded_reason TEXT, UNIQUE (investigation_id, run_id, config))")
db.executemany("INSERT INTO run (investigation_id, run_id, config, status, metrics, provenance, url, time, note,"
               " signature_id, excluded, excluded_reason) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
db.commit()
"""


def run(cmd: list[str], env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (MiB) of one command."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode() if p.stderr else ""
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {err}")
    return wall, usage.ru_maxrss // 1024


def pairs(base, cmd, n: int, prepare=None) -> dict:
    """``n`` interleaved (baseline, command) pairs: median times, ratio and peak memory."""
    bt, ct, ratios, peak = [], [], [], 0
    for i in range(n):
        if prepare is not None:
            prepare()
        if i % 2 == 0:
            b, _ = run(base())
            c, mem = run(cmd())
        else:
            c, mem = run(cmd())
            b, _ = run(base())
        bt.append(b)
        ct.append(c)
        ratios.append(c / b)
        peak = max(peak, mem)
    return {"base": statistics.median(bt), "cmd": statistics.median(ct), "ratio": statistics.median(ratios),
            "peak": peak, "n": n}


def triage(kb: Path, *args: str) -> list[str]:
    return [PY, "-m", "triage", "--db", str(kb), "--rules", str(kb.parent / "rules"), *args]


def fmt(r: dict) -> str:
    return (f"{r['cmd']:.2f} s vs {r['base']:.2f} s: ratio {r['ratio']:.2f} (median of {r['n']} pairs), "
            f"peak {r['peak']} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="1k runs only, one pair each")
    a = ap.parse_args()
    n = 1 if a.quick else a.pairs
    os.environ.setdefault("TRIAGE_CACHE", str(OUT / "cache"))
    compile_bytecode()
    sizes = [1_000] if a.quick else [1_000, 10_000, 100_000]
    rows, failures, results = [], [], {}
    floor = lambda: FLOOR  # noqa: E731

    for size in sizes:
        kb = build(OUT / f"kb-{size}", size)
        run(triage(kb, "report", "--pr", "30433", "--format", "json"))  # the evaluation the report then reuses
        r = pairs(floor, lambda: triage(kb, "report", "--pr", "30433", "--format", "json"), n)
        results[("report", size, 1)] = r
        rows.append((f"report --format json, {size:,} runs", fmt(r)))
    if not a.quick:
        one = OUT / "kb-100000" / "kb.sqlite"
        for invs in (10, 200):
            kb = build(OUT / f"kb-100000x{invs}", 100_000, invs, 100)
            run(triage(kb, "report", "--pr", "30433", "--format", "json"))
            r = pairs(floor, lambda: triage(kb, "report", "--pr", "30433", "--format", "json"), n)
            results[("report", 100_000, invs)] = r
            rows.append((f"report --format json, 100,000 runs, {invs} investigations", fmt(r)))
            # against the one-investigation report side by side: floors measured at other moments
            # move the ratios to the floor by more than the 10% this compares
            r = pairs(lambda: triage(one, "report", "--pr", "30433", "--format", "json"),
                      lambda: triage(kb, "report", "--pr", "30433", "--format", "json"), n)
            results[("beside", invs)] = r
            rows.append(("  … against 1 investigation, side by side", fmt(r)))
    for size in sizes:
        kb = OUT / f"kb-{size}" / "kb.sqlite"
        r = pairs(floor, lambda: triage(kb, "report", "--pr", "30433", "--format", "json", "--full"), n)
        rows.append((f"report --full (a whole evaluation), {size:,} runs", fmt(r)))

    big = OUT / f"kb-{sizes[-1]}"
    scratch = Path(tempfile.mkdtemp(prefix="bench-addrun-"))
    copy = scratch / "kb.sqlite"
    shutil.copytree(big / "rules", scratch / "rules")
    counter = iter(range(10**6))
    # The knowledge base as it is between two add-runs: its rule files known at the path the
    # commands name (a knowledge base read with rules from another place loads them as new
    # files first, which a team's next add-run does not), a run written by this triage (one
    # made by an older one works its configs' numbers out whole on its next write) and its
    # evaluation stored.
    known = scratch / "known.sqlite"
    shutil.copy(big / "kb.sqlite", known)
    run(triage(known, "add-run", "--pr", "30433", "--run-id", "3999999999", "--config", "kimik26-fp8-1k1k-1p1d",
               "--status", "failed", "--metric", "gsm8k=0.879/1319"))
    run(triage(known, "report", "--pr", "30433", "--format", "json"))

    def fresh_copy() -> None:
        for p in scratch.glob("kb.sqlite*"):
            p.unlink()
        shutil.copy(known, copy)
        # on disk, as a knowledge base is between two commands: else the add-run's first
        # sync of the file (SQLite's checkpoint on closing) writes out the copy's 80 MB
        fd = os.open(copy, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def add_run() -> list[str]:
        return triage(copy, "add-run", "--pr", "30433", "--run-id", f"4{next(counter):09d}",
                      "--config", "kimik26-fp8-1k1k-1p1d", "--status", "failed", "--metric", "gsm8k=0.881/1319")

    r = pairs(floor, add_run, n, prepare=fresh_copy)
    results[("add-run",)] = r
    rows.append((f"add-run of one new run into {sizes[-1]:,} runs", fmt(r)))

    def after_add_run() -> None:  # the report a bot posts right after a run is added
        fresh_copy()
        run(add_run())

    r = pairs(floor, lambda: triage(copy, "report", "--pr", "30433", "--format", "json"), n, prepare=after_add_run)
    rows.append((f"report right after that add-run, {sizes[-1]:,} runs", fmt(r)))

    records = big / "runs.jsonl"
    script = scratch / "baseline.py"
    script.write_text(BASELINE_IMPORT)

    def clean() -> None:
        for p in scratch.glob("*.sqlite*"):
            p.unlink()

    r = pairs(lambda: [PY, str(script), str(records), str(scratch / "base.sqlite")],
              lambda: triage(scratch / "kb.sqlite", "import", str(records)), max(1, min(n, 3)), prepare=clean)
    results[("import",)] = r
    rows.append((f"import of {sizes[-1]:,} records, whole command vs json.loads + executemany", fmt(r)))
    shutil.rmtree(scratch, ignore_errors=True)
    print_rows(rows)

    if a.quick:
        return verdict([])
    r100 = results[("report", 100_000, 1)]
    if r100["ratio"] > 2:
        failures.append(f"report, 100k runs: {r100['ratio']:.2f} × the floor (limit 2)")
    if r100["peak"] >= 150:
        failures.append(f"report, 100k runs: peak {r100['peak']} MiB (limit 150)")
    above = {s: results[("report", s, 1)]["cmd"] - results[("report", s, 1)]["base"] for s in sizes}
    if above[100_000] > 100 * max(above[1_000], 0.01):
        failures.append("report: the time above the floor grows faster than the runs")
    # "within 10% from 1 to 200 investigations" is judged by bench_instructions.py, in instructions:
    # on a 0.6-0.8 s command, the side-by-side times above move by as much as the limit
    if results[("add-run",)]["ratio"] > 1.3:
        failures.append(f"add-run: {results[('add-run',)]['ratio']:.2f} × the floor (limit 1.3)")
    imp = results[("import",)]
    if imp["ratio"] > 2:
        failures.append(f"import: {imp['ratio']:.2f} × json.loads + executemany (limit 2)")
    if imp["peak"] >= 200:
        failures.append(f"import: peak {imp['peak']} MiB (limit 200)")
    return verdict(failures)


if __name__ == "__main__":
    raise SystemExit(main())
