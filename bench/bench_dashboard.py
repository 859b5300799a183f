"""Benchmark: the dashboard's investigation page at scale, as a browser asks for it.

Starts ``triage serve`` on the 100k-run knowledge bases of ``bench_report.py``
(the bundled investigation recycled, and a wide one per ``--wide`` seed), each
a copy with its evaluation stored by a ``report`` first, and asks for the
investigation's page (``/pr/OWNER/NAME/N``) ``--requests`` times, one after the
other (load 1), then its JSON (``N.json``).  Prints p50 and p99 of the answer
times; the first request is left out (the server's first import of the
templates).  A page reads the stored evaluation and view (a few queries): its
p50 must be at most 0.3 s on every knowledge base.

Usage: .venv/bin/python bench/bench_dashboard.py [--runs N] [--requests N] [--wide SEED ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_report import OUT, PY, build, build_wide, run, triage  # noqa: E402
from common import compile_bytecode, print_rows, verdict  # noqa: E402

LIMIT = 0.3  # seconds, p50 of the page


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[float, int]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - t, len(body)


def _serve(kb: Path, port: int, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_WEBHOOK_SECRET", "TRIAGE_APP_ID")}
    cmd = triage(kb, "serve", "--insecure-no-signature", "--port", str(port), "--workers", "1")
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env)
    for _ in range(600):
        try:
            _get(f"http://127.0.0.1:{port}/healthz")
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"triage serve exited: {log.read_text()[-2000:]}")
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("triage serve did not answer in 60 s")


def measure(name: str, kb: Path, path: str, pr: str, requests: int) -> tuple[list, dict]:
    """p50 and p99 of ``requests`` page loads, and of as many of its JSON."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    try:
        shutil.copytree(kb.parent / "rules", scratch / "rules")
        copy = scratch / "kb.sqlite"
        shutil.copy(kb, copy)
        run(triage(copy, "report", "--pr", pr, "--format", "json"))  # the stored view a page reads
        port = _port()
        proc = _serve(copy, port, scratch / "serve.log")
        try:
            page = f"http://127.0.0.1:{port}{path}"
            _get(page)
            times = [_get(page)[0] for _ in range(requests)]
            size = _get(page)[1]
            json_times = [_get(page + ".json")[0] for _ in range(requests)]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    got = {"p50": statistics.median(times), "p99": _p99(times), "json_p50": statistics.median(json_times)}
    rows = [(f"{name}: page {path}", f"p50 {got['p50']:.3f} s, p99 {got['p99']:.3f} s over {requests} "
                                     f"requests ({size:,} bytes); its JSON p50 {got['json_p50']:.3f} s")]
    return rows, got


def _p99(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--wide", type=int, nargs="*", default=[1], metavar="SEED")
    a = ap.parse_args()
    os.environ.setdefault("TRIAGE_CACHE", str(OUT / "cache"))
    compile_bytecode()
    cases = [("bundled", build(OUT / f"kb-{a.runs}", a.runs), "/pr/sgl-project/sglang/30433", "30433")]
    cases += [(f"wide, seed {seed}", build_wide(OUT / f"wide-{seed}-{a.runs}", a.runs, seed),
               f"/pr/octo-org/wide/{40_000 + seed}", str(40_000 + seed)) for seed in a.wide]
    rows, over = [], []
    for name, kb, path, pr in cases:
        got_rows, got = measure(name, kb, path, pr, a.requests)
        rows += got_rows
        if got["p50"] > LIMIT:
            over.append(f"{name}: the page's p50 is {got['p50']:.3f} s (limit {LIMIT} s)")
    print_rows(rows)
    return verdict(over if a.runs >= 100_000 else [])


if __name__ == "__main__":
    raise SystemExit(main())
