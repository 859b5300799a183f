"""Knowledge bases of 1,000 to 100,000 runs in 1 to 200 investigations, for the benchmarks.

Every investigation is the bundled one (``rules/kimik26-disagg.yaml``) under
another id and PR number, so its rules, recipes and bisects are real; its runs
are the bundled runs and then more of the same mix: repeats of each config
with the metric moving within noise, crashes (no metric), runs a known failure
matched (an ``error`` with a signature), excluded runs, and bisect probes on
newer images.  The data is deterministic: the same arguments give the same
files.

    python bench/generate.py OUT --runs 100000 --investigations 200 [--others-runs 100]

writes ``OUT/rules/*.yaml``, ``OUT/runs.jsonl`` and imports them into
``OUT/kb.sqlite``; the target investigation is the bundled one
(``--pr 30433``), with ``--runs`` runs; each other investigation has
``--others-runs`` runs.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"
EXAMPLE = ROOT / "examples" / "kimik26-disagg.runs.jsonl"
TARGET_ID, TARGET_PR = "kimik26-disagg", 30433
START = datetime(2026, 7, 10)
SIGNATURES = ("init-abort", "blob-not-found", "unregistered-model", "abi-mismatch")
IMAGES = [f"v0.5.13.post1-rocm720-mi35x-202607{d:02d}" for d in range(1, 29)]


def _runs(iid: str, count: int, seed: int) -> list[dict]:
    """The bundled runs, then ``count - 33`` more of the same mix."""
    rng = random.Random(seed)
    templates = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for t in templates[:count]:
        out.append(t | {"investigation": iid})
    k = 0
    while len(out) < count:
        t = templates[k % len(templates)]
        k += 1
        rec = {"investigation": iid, "run_id": str(30_000_000_000 + seed * 1_000_000 + k), "config": t["config"],
               "status": t["status"], "metrics": dict(t.get("metrics", {})), "provenance": dict(t.get("provenance", {})),
               "url": f"https://github.com/sgl-project/sglang/actions/runs/{30_000_000_000 + k}",
               "time": (START + timedelta(seconds=37 * k)).strftime("%Y-%m-%dT%H:%M:%SZ")}
        roll = rng.random()
        if roll < 0.08:  # crashed: no number
            rec["status"], rec["metrics"] = "crashed", {}
        elif roll < 0.13:  # a known failure
            rec["status"], rec["metrics"] = "error", {}
            rec["signature"] = SIGNATURES[k % len(SIGNATURES)]
            rec["signature_line"] = "RuntimeError: init aborted"
        elif roll < 0.14:
            rec["excluded"], rec["excluded_reason"] = True, "ran on a drained node"
        elif roll < 0.20:  # a bisect probe on a newer image
            rec["provenance"]["image"] = IMAGES[k % len(IMAGES)]
        for name, m in rec["metrics"].items():  # a repeat: within noise
            rec["metrics"][name] = dict(m, value=round(m["value"] + rng.gauss(0, 0.006), 4))
        out.append(rec)
    return out


def write(out: Path, runs: int, investigations: int = 1, others_runs: int = 100) -> tuple[Path, Path]:
    """Write the rule files and the runs; return (rules directory, JSON Lines file)."""
    rules = out / "rules"
    if rules.exists():
        shutil.rmtree(rules)
    rules.mkdir(parents=True)
    shutil.copy(RULES / "signatures.yaml", rules / "signatures.yaml")
    text = (RULES / "kimik26-disagg.yaml").read_text(encoding="utf-8")
    shutil.copy(RULES / "kimik26-disagg.yaml", rules / "kimik26-disagg.yaml")
    for i in range(1, investigations):
        other = text.replace(f"id: {TARGET_ID}", f"id: other-{i:03d}").replace(f"pr: {TARGET_PR}", f"pr: {50_000 + i}")
        (rules / f"other-{i:03d}.yaml").write_text(other, encoding="utf-8")
    path = out / "runs.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for rec in _runs(TARGET_ID, runs, 0):
            fh.write(json.dumps(rec) + "\n")
        for i in range(1, investigations):
            for rec in _runs(f"other-{i:03d}", others_runs, i):
                fh.write(json.dumps(rec) + "\n")
    return rules, path


def build(out: Path, runs: int, investigations: int = 1, others_runs: int = 100) -> Path:
    """A knowledge base at ``out/kb.sqlite`` (made once: kept while ``out/done`` names the same sizes)."""
    return made_once(out, f"{runs} {investigations} {others_runs}",
                     lambda: write(out, runs, investigations, others_runs))


def made_once(out: Path, want: str, write_files: Callable[[], tuple[Path, Path]]) -> Path:
    """``out/kb.sqlite`` imported from the files ``write_files`` makes (rules, runs), unless
    ``out/done`` says it was made already from ``want``."""
    stamp = out / "done"
    kb = out / "kb.sqlite"
    if stamp.exists() and stamp.read_text() == want and kb.exists():
        return kb
    out.mkdir(parents=True, exist_ok=True)
    for p in out.glob("kb.sqlite*"):
        p.unlink()
    rules, path = write_files()
    subprocess.run([sys.executable, "-m", "triage", "--db", str(kb), "--rules", str(rules), "import", str(path)],
                   check=True, stdout=subprocess.DEVNULL)
    stamp.write_text(want)
    return kb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--investigations", type=int, default=1)
    ap.add_argument("--others-runs", type=int, default=100)
    a = ap.parse_args()
    print(build(a.out, a.runs, a.investigations, a.others_runs))


if __name__ == "__main__":
    main()
