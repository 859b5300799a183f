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
              "bench_instructions.py", "bench_dashboard.py", "bench_export.py")


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


def test_the_million_run_figures_are_held_to_their_100k_ones():
    """``bench_report.py --million``: each ratio at a million runs at most 1.5 × its own at
    100,000; a whole evaluation's time above its floor at most 1.5 × ten times as much."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_report as b
    finally:
        sys.path.remove(str(ROOT / "bench"))
    t = b.Target("wide, seed 1", "40001", "w1-base", "acc=0.88/1000", lambda size: Path("unused"))

    def figures(scale: float, full_above: float) -> dict:
        at = {(t.name, "report", 100_000): {"ratio": 1.0}, (t.name, "full", 100_000): {"cmd": 3.0, "base": 0.5}}
        for key in ("first add-run", "add-run", "after"):
            at[(t.name, key)] = {"ratio": 1.2}
            at[(t.name, key + b.AT_MILLION)] = {"ratio": 1.2 * scale}
        for key in ("import", "import, one core"):
            at[(t.name, key)] = {"cpu_ratio": 2.5}
            at[(t.name, key + b.AT_MILLION)] = {"cpu_ratio": 2.5 * scale}
        at[(t.name, "report", b.MILLION)] = {"ratio": 1.0 * scale}
        at[(t.name, "full", b.MILLION)] = {"cmd": 0.5 + full_above, "base": 0.5}
        return at

    assert b.judged_million(t, figures(1.5, 2.5 * 15)) == []
    over = b.judged_million(t, figures(1.6, 2.5 * 15 + 1))
    assert len(over) == 7 and all(t.name in line for line in over)
    assert any("report --full" in line and "ten times" in line for line in over)
    assert any(line.startswith(f"{t.name}: import on one core: 4.00") for line in over)
