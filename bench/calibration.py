"""How often triage is wrong: simulated investigations whose truth is known.

Usage: .venv/bin/python bench/calibration.py [--sims N] [--quick] [--seed S]
       [--kinds NAME,...] [--procs P] [--json]

Each row is a kind of investigation (bench/calibration_kinds.py) at one
good–bad gap, in units of the noise of one run.  For a hypothesis kind, half
the simulations make the hypothesis true (the fix's runs are drawn from good's
distribution) and half false (from bad's); the engine's status for it is read
back: a true hypothesis ruled out, or a false one confirmed, is an error, and
each must happen at most 1 − confidence (5 %) of the time.  For a bisect kind,
the engine's next point is run until it is done: a first bad point other than
the true one (or a good end found bad) is an error.

A row fails when the lower end of the 95 % Wilson interval of an error rate is
above 5 % (clearly over the bound), warns when its estimate is.  The exit
status is 3 (as every benchmark's over its limit) when a row fails that is not
a documented limitation (``limitation=`` on its kind), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import sys
from pathlib import Path
from typing import Any, Iterable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibration_kinds import ALL, BISECTS, KINDS, BisectKind, Kind  # noqa: E402
from common import OVER_LIMIT  # noqa: E402

from triage.rules.engine.evaluate import evaluate  # noqa: E402

BOUND = 0.05  # 1 − confidence at the default 0.95
Z = statistics.NormalDist().inv_cdf(0.975)
CHUNK = 50  # simulations per task handed to a worker

# ---------------------------------------------------------------- statistics


def wilson(k: int, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "rate": k / n if n else None, "lo": lo, "hi": hi}


def judge_rates(rates: Iterable[dict[str, Any]]) -> str:
    """fail: an interval clearly over the bound; warn: an estimate over it; else ok."""
    rates = [r for r in rates if r["n"]]
    if any(r["lo"] > BOUND for r in rates):
        return "fail"
    if any(r["rate"] > BOUND for r in rates):
        return "warn"
    return "ok"


# ---------------------------------------------------------------- simulation

_SPECS: dict[tuple[str, float], Any] = {}


def _spec(kind: Kind | BisectKind, effect: float) -> Any:
    key = (kind.name, effect)
    if key not in _SPECS:
        _SPECS[key] = kind.spec(effect)
    return _SPECS[key]


def simulate(task: tuple[str, float, Optional[bool], int, int, int]) -> dict[str, int]:
    """One chunk of simulations of one row (and one truth): the counts of each outcome."""
    name, effect, truth, chunk, size, seed = task
    kind = ALL[name]
    spec = _spec(kind, effect)
    rng = random.Random(f"{seed}/{name}/{effect}/{truth}/{chunk}")
    counts: dict[str, int] = {}
    for _ in range(size):
        if isinstance(kind, BisectKind):
            first_bad = rng.randrange(1, kind.points)
            found, blocked, used = kind.follow(spec, rng, first_bad, effect, evaluate)
            label = f"p{first_bad:02d}"
            out = "wrong" if blocked or (found is not None and found != label) else \
                "right" if found is not None else "undecided"
            counts["runs"] = counts.get("runs", 0) + used
        else:
            status = evaluate(kind.draw(spec, rng, bool(truth), effect)).statuses["h"]
            out = {"confirmed": "holds", "ruled_out": "contradicted", "conflicting": "conflicting"}.get(
                status, "undecided")
        counts[out] = counts.get(out, 0) + 1
    return counts


def tasks(kinds: list[Kind | BisectKind], sims: int, bisect_sims: int, seed: int) -> list[tuple]:
    out = []
    for kind in kinds:
        bisect = isinstance(kind, BisectKind)
        total = bisect_sims if bisect else sims
        for effect in kind.effects:
            for truth in ((None,) if bisect else (True, False)):
                for chunk, start in enumerate(range(0, total, CHUNK)):
                    out.append((kind.name, effect, truth, chunk, min(CHUNK, total - start), seed))
    return out


def run(kinds: list[Kind | BisectKind], sims: int, bisect_sims: int, seed: int = 0, procs: int = 2) -> list[dict]:
    """Every row's counts, rates and verdict (the same for any number of processes)."""
    todo = tasks(kinds, sims, bisect_sims, seed)
    if procs > 1:
        with multiprocessing.get_context("fork").Pool(procs) as pool:
            results = pool.map(simulate, todo, chunksize=1)
    else:
        results = [simulate(t) for t in todo]
    merged: dict[tuple, dict[str, int]] = {}
    for (name, effect, truth, *_), counts in zip(todo, results):
        into = merged.setdefault((name, effect, truth), {})
        for k, v in counts.items():
            into[k] = into.get(k, 0) + v
    rows = []
    for kind in kinds:
        for effect in kind.effects:
            if isinstance(kind, BisectKind):
                rows.append(_bisect_row(kind, effect, merged[(kind.name, effect, None)]))
            else:
                rows.append(_row(kind, effect, merged[(kind.name, effect, True)],
                                 merged[(kind.name, effect, False)]))
    return rows


def _row(kind: Kind, effect: float, true: dict[str, int], false: dict[str, int]) -> dict[str, Any]:
    nt, nf = sum(true.values()), sum(false.values())
    ruled_out = rate(true.get("contradicted", 0), nt)
    confirmed = rate(false.get("holds", 0), nf)
    return {"kind": kind.name, "type": "hypothesis", "what": kind.what, "effect": effect,
            "true_ruled_out": ruled_out, "false_confirmed": confirmed,
            "decided_true": true.get("holds", 0) / nt, "decided_false": false.get("contradicted", 0) / nf,
            "conflicting": (true.get("conflicting", 0) + false.get("conflicting", 0)) / (nt + nf),
            "verdict": judge_rates([ruled_out, confirmed]), "limitation": kind.limitation}


def _bisect_row(kind: BisectKind, effect: float, counts: dict[str, int]) -> dict[str, Any]:
    n = sum(v for k, v in counts.items() if k != "runs")
    wrong = rate(counts.get("wrong", 0), n)
    return {"kind": kind.name, "type": "bisect", "what": kind.what, "effect": effect, "points": kind.points,
            "wrong": wrong, "right": counts.get("right", 0) / n, "undecided": counts.get("undecided", 0) / n,
            "runs": counts.get("runs", 0) / n, "cap": kind.cap(), "verdict": judge_rates([wrong]),
            "limitation": kind.limitation}


# ---------------------------------------------------------------- output


def _pct(r: dict[str, Any]) -> str:
    if not r["n"]:
        return "–"
    return f"{100 * r['rate']:.1f} % [{100 * r['lo']:.1f}, {100 * r['hi']:.1f}]"


def _verdict(row: dict[str, Any]) -> str:
    v = row["verdict"]
    text = {"ok": "ok", "warn": "warn", "fail": "**FAIL**"}[v]
    return f"{text} (documented)" if row["limitation"] and v != "ok" else text


def markdown(rows: list[dict[str, Any]], sims: int, bisect_sims: int, seed: int) -> str:
    hyp = [r for r in rows if r["type"] == "hypothesis"]
    bis = [r for r in rows if r["type"] == "bisect"]
    out = []
    if hyp:
        out += [f"Hypotheses: {sims} simulations a truth a row (seed {seed}); the gap between good and bad in "
                "units of one run's noise; error rates with their 95 % Wilson interval; decided = confirmed when "
                "true / ruled out when false.", "",
                "| kind | gap | true ruled out | false confirmed | decided (true / false) | verdict |",
                "|---|---|---|---|---|---|"]
        out += [f"| {r['kind']} | {r['effect']:g}× | {_pct(r['true_ruled_out'])} | {_pct(r['false_confirmed'])} "
                f"| {100 * r['decided_true']:.0f} % / {100 * r['decided_false']:.0f} % | {_verdict(r)} |"
                for r in hyp]
        out.append("")
    if bis:
        out += [f"Bisects: {bisect_sims} simulations a row, first bad point drawn at random, the engine's next "
                "point run once at a time until it is done or the runs run out.", "",
                "| kind | gap | first bad wrong | undecided (cap) | runs (mean) | verdict |",
                "|---|---|---|---|---|---|"]
        out += [f"| {r['kind']} | {r['effect']:g}× | {_pct(r['wrong'])} | {100 * r['undecided']:.0f} % "
                f"({r['cap']}) | {r['runs']:.1f} | {_verdict(r)} |" for r in bis]
        out.append("")
    seen = dict.fromkeys((r["kind"], r["what"], r["limitation"]) for r in rows)
    out += [f"- `{k}`: {what}" + (f" — documented limitation: {lim}" if lim else "") for k, what, lim in seen]
    return "\n".join(out)


def exit_status(rows: list[dict[str, Any]]) -> int:
    failing = [r for r in rows if r["verdict"] == "fail" and not r["limitation"]]
    return OVER_LIMIT if failing else 0


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sims", type=int, default=500, help="simulations a truth a row (default 500)")
    ap.add_argument("--bisect-sims", type=int, default=None, help="simulations a bisect row (default sims / 5)")
    ap.add_argument("--quick", action="store_true", help="a small version (seconds): 20 a truth, 4 a bisect")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="", help="comma-separated kind names (default: all): "
                                                 + ", ".join(ALL))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    sims = 20 if args.quick else args.sims
    bisect_sims = 4 if args.quick else args.bisect_sims or max(1, sims // 5)
    names = [n.strip() for n in args.kinds.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL]
    if unknown:
        ap.error(f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(ALL)}")
    kinds = [ALL[n] for n in names] if names else [*KINDS, *BISECTS]
    rows = run(kinds, sims, bisect_sims, args.seed, args.procs)
    if args.json:
        print(json.dumps({"sims": sims, "bisect_sims": bisect_sims, "seed": args.seed, "bound": BOUND,
                          "rows": rows}, indent=1))
    else:
        print(markdown(rows, sims, bisect_sims, args.seed))
    return exit_status(rows)


if __name__ == "__main__":
    sys.exit(main())
