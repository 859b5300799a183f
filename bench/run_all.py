"""Run every benchmark, one after the other; exit 1 if any failed its limit.

Usage: .venv/bin/python bench/run_all.py [--quick]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK = {"bench_report.py": ["--quick"], "bench_import.py": ["--runs", "10000", "--repeat", "1"],
         "bench_scan.py": ["--lines", "100000", "--signatures", "100", "--repeat", "1"],
         "bench_cli.py": ["--runs", "1"],
         "bench_concurrency.py": ["--procs", "4", "--runs", "3", "--posters", "4", "--rounds", "2"]}


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    failed = []
    for name in ("bench_report.py", "bench_import.py", "bench_scan.py", "bench_cli.py", "bench_concurrency.py"):
        print(f"== {name}", flush=True)
        args = QUICK[name] if quick else []
        if subprocess.run([sys.executable, str(HERE / name), *args]).returncode != 0:
            failed.append(name)
    print("failed: " + ", ".join(failed) if failed else "all benchmarks OK")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
