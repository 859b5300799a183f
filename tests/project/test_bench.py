"""The benchmarks still run: each at its quick size, as `make bench QUICK=1` runs them.

Speed is judged by the benchmarks themselves (bench/README.md), not here: at the
quick size their limits mean nothing, and a measure over its limit is not a
failure. A benchmark that breaks is (a command it runs fails, its results are
not what they must be, it crashes): it would otherwise go unnoticed until
someone measures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ("bench_report.py", "bench_import.py", "bench_scan.py", "bench_cli.py", "bench_concurrency.py",
              "bench_instructions.py", "bench_dashboard.py")


@pytest.mark.bench  # minutes: `make bench-check`, .ci/run's second step
def test_every_benchmark_runs_at_its_quick_size():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "run_all.py"), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=1200)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert out.rstrip().endswith("all benchmarks OK")
    sections = out.split("\n== ")
    assert [s.split("\n", 1)[0].removeprefix("== ") for s in sections] == list(BENCHMARKS)
    for section in sections:
        assert "Traceback" not in section and "WRONG:" not in section, section[-2000:]


def test_a_benchmark_over_its_limit_is_told_from_a_broken_one():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from common import OVER_LIMIT, verdict
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert verdict([]) == 0
    assert verdict(["report: 2.5 × the floor (limit 2)"]) == OVER_LIMIT
    assert verdict(["slow"], ["the matches differ from the planted failures"]) == 1
    assert verdict([], ["a command failed"]) == 1
    assert OVER_LIMIT not in (0, 1, 2)  # neither success, a Python crash, nor a usage error
