"""Run every benchmark, one after the other; exit 1 if any failed.

Usage: .venv/bin/python bench/run_all.py [--quick]

A benchmark fails when it measures something over its limit, or when it breaks
(a command fails, its results are not what they must be, it crashes). With
--quick, each runs at a small size, where its limits mean nothing: only a
benchmark that breaks fails (tests/project/test_bench.py runs this, so CI notices a
benchmark that stopped working).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OVER_LIMIT  # noqa: E402

HERE = Path(__file__).resolve().parent
QUICK = {"bench_report.py": ["--quick"], "bench_import.py": ["--runs", "10000", "--repeat", "1"],
         "bench_scan.py": ["--lines", "100000", "--signatures", "100", "--repeat", "1"],
         "bench_cli.py": ["--runs", "1"],
         "bench_concurrency.py": ["--procs", "4", "--runs", "3", "--posters", "4", "--rounds", "2"],
         "bench_instructions.py": ["--records", "1000", "--wide", "1"],
         "bench_dashboard.py": ["--runs", "1000", "--requests", "3"],
         "bench_export.py": ["--runs", "1000", "--pairs", "1"]}


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    failed = []
    for name in ("bench_report.py", "bench_import.py", "bench_scan.py", "bench_cli.py", "bench_concurrency.py",
                 "bench_instructions.py", "bench_dashboard.py", "bench_export.py"):
        print(f"== {name}", flush=True)
        args = QUICK[name] if quick else []
        code = subprocess.run([sys.executable, str(HERE / name), *args]).returncode
        if code == OVER_LIMIT and quick:
            print(f"({name}: over a limit at the quick size, where limits are not judged)")
        elif code != 0:
            failed.append(name)
    print("failed: " + ", ".join(failed) if failed else "all benchmarks OK")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
