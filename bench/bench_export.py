"""Benchmark: what reads every run of an investigation, and a nightly's import into an evaluated one.

On the 100k-run knowledge bases of ``bench_report.py`` (the bundled investigation
recycled, and a wide one per ``--wide`` seed), each a copy with its evaluation stored
by a ``report`` first, side by side with a floor in interleaved pairs (medians of the
pairs' ratios, in wall and in CPU time; peak memory is the command's maximum
resident set):

  export     ``triage export --pr N -o runs.jsonl``: every run, as ``import`` reads
             them.  Floor: a script that reads the same rows with ``sqlite3`` and
             writes each as a JSON line (``json.dumps``).
  runs list  ``triage runs list --pr N --format json``: every run.  Floor: the same
             script.
  nightly    ``triage import`` of one new run for each config the investigation's
             runs name, all of one workflow run (a nightly's matrix), into the
             evaluated knowledge base (a copy each time): the writes and the
             evaluation they leave stale.  Floor: the reports' (``python -c "import
             sqlmodel, typer, yaml, jinja2, rapidfuzz"``).

Checked: the export holds a line per run, the list an entry per run, the nightly's
import says each of its runs is new (exit 1 otherwise).  Limits (README): export and
``runs list --format json`` hold under 100 MiB at 100,000 runs (exit 3 over it); the
ratios are shown, not judged.

Usage: .venv/bin/python bench/bench_export.py [--runs N] [--pairs N] [--wide SEED ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_report import FLOOR, OUT, PY, fmt, pairs, run, targets, triage  # noqa: E402
from common import compile_bytecode, print_rows, verdict  # noqa: E402

#: Peak memory of export and ``runs list --format json`` at 100,000 runs, at most (MiB).
MOST_MIB = 100

#: The floor of export and ``runs list``: every run's row read and written as a JSON line.
ROWS_FLOOR = r"""
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
with open(sys.argv[2], "w") as out:
    for row in db.execute("SELECT run_id, config, status, metrics, provenance, url, time, note, signature_id,"
                          " excluded, excluded_reason, updated_at FROM run ORDER BY pk"):
        out.write(json.dumps(row) + "\n")
"""


def nightly(kb: Path, out: Path) -> int:
    """One new run of each config the investigation's runs name, all of one workflow run, as
    JSON Lines at ``out``, from each config's newest run; how many."""
    db = sqlite3.connect(kb)
    try:
        rows = db.execute("SELECT r.investigation_id, r.config, r.status, r.metrics, r.provenance FROM run r"
                          " JOIN (SELECT config, max(pk) AS top FROM run GROUP BY config) n"
                          " ON r.pk = n.top ORDER BY r.config").fetchall()
    finally:
        db.close()
    with out.open("w") as fh:
        for iid, config, status, metrics, provenance in rows:
            fh.write(json.dumps({"investigation": iid, "run_id": "88000000001", "config": config,
                                 "status": status, "metrics": json.loads(metrics),
                                 "provenance": {**json.loads(provenance), "sha": "nightly-bench"},
                                 "url": "https://github.com/o/r/actions/runs/88000000001",
                                 "time": "2027-01-01T00:00:00Z"}) + "\n")
    return len(rows)


def measure(name: str, kb: Path, pr: str, n: int) -> tuple[list, list, list]:
    """The three pairs on ``kb``; the rows to print, what is over its limit, what is wrong."""
    rows: list = []
    over: list = []
    wrong: list = []
    scratch = Path(tempfile.mkdtemp(prefix="bench-export-"))
    try:
        shutil.copytree(kb.parent / "rules", scratch / "rules")
        evaluated, copy = scratch / "evaluated.sqlite", scratch / "kb.sqlite"
        shutil.copy(kb, evaluated)
        run(triage(evaluated, "report", "--pr", pr, "--format", "json"))  # its evaluation stored
        with sqlite3.connect(evaluated) as db:
            count = db.execute("SELECT count(*) FROM run").fetchone()[0]
        floor = scratch / "floor.py"
        floor.write_text(ROWS_FLOOR)
        exported, listed, floored = scratch / "runs.jsonl", scratch / "list.json", scratch / "floor.jsonl"
        base = lambda: [PY, str(floor), str(evaluated), str(floored)]  # noqa: E731
        r = pairs(base, lambda: triage(evaluated, "export", "--pr", pr, "-o", str(exported)), n)
        rows.append((f"{name}: export of {count:,} runs vs rows read and written as JSON lines", fmt(r)))
        lines = sum(1 for _ in exported.open())
        if lines != count:
            wrong.append(f"{name}: the export holds {lines:,} lines for {count:,} runs")
        if r["peak"] > MOST_MIB:
            over.append(f"{name}: export peaks at {r['peak']} MiB (limit {MOST_MIB})")
        r = pairs(base, lambda: _listing(evaluated, pr, listed), n)
        rows.append((f"{name}: runs list --format json, {count:,} runs, vs the same", fmt(r)))
        entries = _entries(listed)
        if entries != count:
            wrong.append(f"{name}: runs list holds {entries:,} entries for {count:,} runs")
        if r["peak"] > MOST_MIB:
            over.append(f"{name}: runs list --format json peaks at {r['peak']} MiB (limit {MOST_MIB})")
        matrix = nightly(evaluated, scratch / "nightly.jsonl")

        def fresh() -> None:
            for p in scratch.glob("kb.sqlite*"):
                p.unlink()
            shutil.copy(evaluated, copy)

        r = pairs(lambda: FLOOR, lambda: triage(copy, "import", str(scratch / "nightly.jsonl")), n, prepare=fresh)
        rows.append((f"{name}: import of a nightly's {matrix} runs (one a config) into {count:,}", fmt(r)))
        said = run_output(triage(copy, "import", str(scratch / "nightly.jsonl")), fresh)
        if f"{matrix} new" not in said:
            wrong.append(f"{name}: the nightly's import said {said.strip()!r}, not {matrix} new runs")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows, over, wrong


def _listing(kb: Path, pr: str, out: Path) -> list[str]:
    """``runs list --format json`` with its output to ``out`` (through a shell: ``run`` reads none)."""
    command = " ".join(f"'{part}'" for part in triage(kb, "runs", "list", "--pr", pr, "--format", "json"))
    return ["sh", "-c", f"{command} > '{out}'"]


def _entries(path: Path) -> int:
    """How many entries a JSON list holds, counted by a process of its own: decoded here, it
    would grow this process, and every command forked from it would start with that peak."""
    done = subprocess.run([PY, "-c", "import json, sys; print(len(json.load(open(sys.argv[1]))))", str(path)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def run_output(cmd: list[str], prepare) -> str:
    """What a command prints, on a fresh copy."""
    prepare()
    done = subprocess.run(cmd, capture_output=True, text=True)
    return done.stdout + done.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--wide", type=int, nargs="*", default=[1], metavar="SEED")
    a = ap.parse_args()
    os.environ.setdefault("TRIAGE_CACHE", str(OUT / "cache"))
    compile_bytecode()
    cases = [(t.name, t.kb(a.runs), t.pr) for t in targets(a.wide)]
    rows, over, wrong = [], [], []
    for name, kb, pr in cases:
        got = measure(name, kb, pr, a.pairs)
        rows += got[0]
        over += got[1]
        wrong += got[2]
    print_rows(rows)
    return verdict(over if a.runs >= 100_000 else [], wrong)


if __name__ == "__main__":
    raise SystemExit(main())
