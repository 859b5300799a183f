"""How much a CLI run costs beyond importing its dependencies.

Runs, in a scratch directory holding the bundled investigation:
  deps     python -c "import sqlmodel, typer, yaml, jinja2, rapidfuzz, httpx"
  help     triage --help
  report   triage report --pr 30433            (markdown, rules unchanged)
  json     triage report --pr 30433 --format json
  add-run  triage add-run ... (an update, then the evaluation)
and prints the best wall time of N runs of each, with its ratio to `deps`.

Usage: .venv/bin/python bench/bench_cli.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import compile_bytecode  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TRIAGE = str(BIN / "triage")


def best(cmd: list[str], cwd: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(ROOT / "rules", Path(tmp) / "rules")
        subprocess.run([TRIAGE, "import", str(ROOT / "examples" / "kimik26-disagg.runs.jsonl")], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        cases = {
            "deps": [sys.executable, "-c", "import sqlmodel, typer, yaml, jinja2, rapidfuzz, httpx"],
            "help": [TRIAGE, "--help"],
            "report": [TRIAGE, "report", "--pr", "30433"],
            "json": [TRIAGE, "report", "--pr", "30433", "--format", "json"],
            "add-run": [TRIAGE, "add-run", "--pr", "30433", "--run-id", "28907609511", "--config",
                        "kimik26-fp8-1k1k-1p1d-aiterdecode", "--metric", "gsm8k=0.879/1319"],
        }
        results = {name: best(cmd, tmp, args.runs) for name, cmd in cases.items()}
    base = results["deps"]
    print(f"| command | best of {args.runs} (s) | × deps import |")
    print("|---|---|---|")
    for name, t in results.items():
        print(f"| {name} | {t:.3f} | {t / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
