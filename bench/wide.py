"""A wide, varied investigation for the benchmarks and the property tests, its shape set by a seed.

``bench/generate.py`` recycles the 33 bundled runs over about 20 configs; a team's
investigation is wider.  This one has, at ``scale=1`` (each count moved by the seed,
so that no one shape gets tuned):

- about 200 recipes, 60 hypotheses (a tree, with exclusive groups) and 80 rules;
- about 600 configs: the recipes', a few bases, a nightly matrix, and ad hoc ones;
- 3 bisects: a 300-point commit bisect, a 40-point image bisect, a 2-D python × image one;
- 3 metrics per run: a proportion (the primary, with its n), a throughput and a latency;
- nightly matrix runs that share a workflow run id across its configs;
- provenance that varies per run (sha, image, node, runner, python), how much by the seed;
- repeats, about 8 % crashed runs (the seed moves it), known failures and exclusions.

    python bench/wide.py OUT --runs 100000 --seed 1 [--scale 1.0] [--investigations 1]

writes ``OUT/rules/wide.yaml`` (with the bundled signatures), ``OUT/runs.jsonl`` and
imports them into ``OUT/kb.sqlite``; with ``--investigations K``, K investigations of
seeds SEED … SEED + K − 1, ``--runs`` runs each, a rule file each (``wide-SEED.yaml``).  :func:`spec` and :func:`records` give the same
as data, for tests at small sizes (``scale=0.05``: 10 recipes, 3 hypotheses, …).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2026, 3, 1)
SIGNATURES = ("init-abort", "blob-not-found", "unregistered-model", "abi-mismatch")
PR = 40_000
METRIC, N = "acc", 1000
GOOD, BAD = 0.95, 0.88


@dataclass(frozen=True)
class Shape:
    """The counts and rates a seed gives (at ``scale`` of the full size)."""

    seed: int
    recipes: int
    hypotheses: int
    rules: int
    adhoc: int
    matrix: int
    commits: int
    images: int
    pythons: int
    nodes: int
    crash: float
    variety: float  # the chance that a run records provenance of its own instead of its nightly's

    @classmethod
    def of(cls, seed: int, scale: float = 1.0) -> Shape:
        rng = random.Random(f"shape-{seed}")

        def n(full: int, least: int) -> int:
            return max(least, round(full * scale * rng.uniform(0.8, 1.2)))

        return cls(seed, recipes=n(200, 3), hypotheses=n(60, 3), rules=n(80, 2), adhoc=n(400, 2),
                   matrix=n(20, 2), commits=n(300, 4), images=n(40, 3), pythons=max(2, min(8, n(6, 2))),
                   nodes=n(64, 2), crash=rng.uniform(0.06, 0.10), variety=rng.uniform(0.05, 0.6))


def _ids(shape: Shape) -> dict[str, list[str]]:
    s = shape.seed
    return {
        "hyps": [f"h{i:03d}" for i in range(shape.hypotheses)],
        "recipes": [f"w{s}-r{i:03d}" for i in range(shape.recipes)],
        "bases": [f"w{s}-base", f"w{s}-base-mtp", f"w{s}-base-single"],
        "matrix": [f"w{s}-nightly-{i:02d}" for i in range(shape.matrix)],
        "adhoc": [f"w{s}-adhoc-{i:03d}" for i in range(shape.adhoc)],
        "shas": [f"{(0x1000000 + i * 7919 * (s + 1)) % 0xfffffff:07x}" for i in range(shape.commits)],
        "images": [f"v0.{5 + i // 20}.{i % 20}-rocm7-{i:03d}" for i in range(shape.images)],
        "pythons": [f"3.{8 + i}" if i < 6 else f"3.{8 + i}t" for i in range(shape.pythons)],
    }


def spec(shape: Shape) -> dict:
    """The rule file's document (one investigation, id ``wide-SEED``)."""
    rng = random.Random(f"spec-{shape.seed}")
    ids = _ids(shape)
    hyps, recipes, bases = ids["hyps"], ids["recipes"], ids["bases"]
    hypotheses: list[dict] = []
    for i, h in enumerate(hyps):
        entry: dict[str, Any] = {"id": h, "title": f"Hypothesis {i}: knob {i % 17} changes the result"}
        if i >= 4 and rng.random() < 0.3:
            entry["parent"] = hyps[rng.randrange(i // 2)]
        if rng.random() < 0.3:
            entry["vary"] = [f"knob{rng.randrange(40)}" for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.1:
            entry["prior"] = round(rng.uniform(0.5, 3), 1)
        hypotheses.append(entry)
    tops = [h["id"] for h in hypotheses if "parent" not in h]
    parents = [p for p in dict.fromkeys(h.get("parent") for h in hypotheses) if p is not None]
    for p in parents[:2]:  # its children exclude each other
        if sum(h.get("parent") == p for h in hypotheses) > 1 and rng.random() < 0.6:
            hypotheses[hyps.index(p)]["exclusive"] = True
    out_recipes = [_recipe(rng, r, i, ids) for i, r in enumerate(recipes)]
    return {
        "schema_version": 1,
        "investigation": {
            "id": f"wide-{shape.seed}", "repo": "octo-org/wide", "pr": PR + shape.seed,
            "title": f"A wide investigation (seed {shape.seed})", "metric": METRIC, "gate": 0.92,
            "base": bases[0], "config_prefix": f"w{shape.seed}-",
            # numbers: a reference on a config makes its every new run a new key for the whole evaluation
            "references": {"bad": {"value": BAD, "n": N}, "good": {"value": GOOD, "n": N}},
            "metrics": {"throughput": {"direction": "higher", "noise": "2%"},
                        "latency": {"direction": "lower", "noise": "3%"}},
            "ignore_provenance": ["runner"] + (["node"] if rng.random() < 0.5 else []),
        },
        "hypotheses": hypotheses,
        "recipes": out_recipes,
        "rules": [_rule(rng, i, ids) for i in range(shape.rules)],
        "bisects": _bisects(ids, bases[0]),
        "exclusive": [tops[2:5]] if len(tops) >= 5 and rng.random() < 0.7 else [],
    }


def _recipe(rng: random.Random, rid: str, i: int, ids: dict) -> dict:
    hyps, bases = ids["hyps"], ids["bases"]
    if i > 10 and rng.random() < 0.1:  # a recipe on another recipe
        base = ids["recipes"][rng.randrange(i)]
    else:
        base = bases[0] if rng.random() < 0.7 else rng.choice(bases[1:])
    tests = list(dict.fromkeys(rng.choice(hyps) for _ in range(rng.randint(1, 3))))
    predicts: dict[str, Any] = {}
    for h in tests:
        roll = rng.random()
        if roll < 0.35:
            predicts[h] = "recovers"
        elif roll < 0.6:
            predicts[h] = "same_as_bad"
        elif roll < 0.7:
            predicts[h] = {"when": {"metric": "throughput", "better_than": {"config": base}}, "confirms": True}
        elif roll < 0.8:
            predicts[h] = {"metric": "latency", "below": 120}
    out: dict[str, Any] = {"id": rid, "base": base, "change": f"knob{i % 40} = {i}",
                           "vary": {f"knob{i % 40}": i}, "tests": tests, "predicts": predicts,
                           "run": "gh workflow run nightly.yml -f configs={ids}"}
    if rng.random() < 0.15:
        out["cost"] = rng.choice([2, 3, 0.5])
    return out


def _rule(rng: random.Random, i: int, ids: dict) -> dict:
    hyps, recipes, adhoc = ids["hyps"], ids["recipes"], ids["adhoc"]
    config = rng.choice(recipes) if rng.random() < 0.6 else rng.choice(adhoc)
    kind = rng.randrange(7)
    when: dict[str, Any]
    if kind == 0:
        when = {"config": config, "below": "gate"}
    elif kind == 1:
        when = {"config": config, "same_as": "bad"}
    elif kind == 2:
        when = {"config": config, "all": [{"at_least": "gate"}, {"differs_from": "bad"}]}
    elif kind == 3:
        when = {"config": config, "metric": "latency", "below": 100}
    elif kind == 4:
        when = {"config": config, "provenance": {"python": rng.choice(ids["pythons"])}, "recovers": True}
    elif kind == 5:
        when = {"any": [{"config": config, "same_as": "good"}, {"config": rng.choice(recipes), "fails": "gate"}]}
    else:
        when = {"config": [config, rng.choice(adhoc)], "metric": "throughput",
                "better_than": {"config": ids["bases"][0]}}
    rule: dict[str, Any] = {"id": f"rule{i:03d}", "hypothesis": rng.choice(hyps), "when": when,
                            "then": rng.choice(["ruled_out", "supports", "confirmed", "ruled_out"]),
                            "because": f"rule {i} over {config}"}
    if i > 0 and rng.random() < 0.05:
        rule["supersedes"] = [f"rule{rng.randrange(i):03d}"]
    return rule


def _bisects(ids: dict, base: str) -> list[dict]:
    shas, images, pythons = ids["shas"], ids["images"], ids["pythons"]
    two_d = [[p, im] for p in pythons[:6] for im in images[:: max(1, len(images) // 5)][:5]]
    return [
        {"id": "commits", "title": "sglang commits", "axis": "sha", "config": base, "points": shas,
         "good_when": {"at_least": "gate"}, "run": "gh workflow run nightly.yml -f sha={point}"},
        {"id": "images", "title": "images", "axis": "image", "config": base, "points": images,
         "good_when": {"at_least": "gate"}},
        {"id": "python-image", "title": "python × image", "axis": ["python", "image"], "config": base,
         "points": two_d, "good_when": {"at_least": "gate"}},
    ]


class _Truth:
    """What the runs read: a first bad commit and image, a python that breaks, recipes that recover."""

    def __init__(self, shape: Shape, ids: dict, doc: dict) -> None:
        rng = random.Random(f"truth-{shape.seed}")
        self.bad_sha = set(ids["shas"][rng.randrange(1, len(ids["shas"])):])
        self.bad_image = set(ids["images"][rng.randrange(1, len(ids["images"])):])
        self.bad_python = rng.choice(ids["pythons"])
        self.recovers = {r["id"] for r in doc["recipes"] if rng.random() < 0.25}

    def value(self, config: str, prov: dict, rng: random.Random) -> float:
        good = (config in self.recovers or (prov.get("sha") not in self.bad_sha
                                            and prov.get("image") not in self.bad_image
                                            and prov.get("python") != self.bad_python))
        return round((GOOD if good else BAD) + rng.gauss(0, 0.004), 4)


def records(shape: Shape, runs: int) -> Iterator[dict]:
    """``runs`` run records (JSON-ready, as ``triage import`` reads them), oldest first."""
    rng = random.Random(f"runs-{shape.seed}")
    ids = _ids(shape)
    doc = spec(shape)
    truth = _Truth(shape, ids, doc)
    iid = doc["investigation"]["id"]
    nightly_configs = ids["bases"] + ids["matrix"]
    recipes, adhoc = ids["recipes"], ids["adhoc"]
    made, k, t = 0, 0, START
    while made < runs:
        k += 1
        wid = str(50_000_000_000 + shape.seed * 1_000_000_000 + k)
        prov = {"sha": ids["shas"][min(len(ids["shas"]) - 1, k * len(ids["shas"]) * 3 // max(runs, 1))],
                "image": rng.choice(ids["images"][-3:]), "python": rng.choice(ids["pythons"]),
                "runner": f"runner-{rng.randrange(8)}", "node": f"n{rng.randrange(shape.nodes):02d}"}
        roll = rng.random()
        if roll < 0.35:  # a nightly: the matrix, one workflow run id
            batch = [(c, prov) for c in nightly_configs[: rng.randint(2, len(nightly_configs))]]
        elif roll < 0.75:  # recipes dispatched together
            batch = [(rng.choice(recipes), prov) for _ in range(rng.randint(1, 4))]
        elif roll < 0.87:
            batch = [(rng.choice(adhoc), prov)]
        else:  # a bisect probe of the base
            probe = dict(prov, sha=rng.choice(ids["shas"]), image=rng.choice(ids["images"]))
            batch = [(ids["bases"][0], probe)]
        t += timedelta(seconds=rng.randint(10, 90))
        for config, p in dict(batch).items():
            if made >= runs:
                break
            yield _record(rng, shape, truth, iid, wid, config, p, t)
            made += 1


def _record(rng: random.Random, shape: Shape, truth: _Truth, iid: str, wid: str, config: str, prov: dict,
            t: datetime) -> dict:
    if rng.random() < shape.variety:  # provenance of its own: another node, runner, sometimes sha
        prov = dict(prov, node=f"n{rng.randrange(shape.nodes):02d}", runner=f"runner-{rng.randrange(64)}")
        if rng.random() < 0.3:
            prov["sha"] = f"{rng.randrange(16 ** 7):07x}"
    rec: dict[str, Any] = {"investigation": iid, "run_id": wid, "config": config, "provenance": prov,
                           "url": f"https://github.com/octo-org/wide/actions/runs/{wid}",
                           "time": t.strftime("%Y-%m-%dT%H:%M:%SZ")}
    roll = rng.random()
    if roll < shape.crash:
        rec["status"], rec["metrics"] = "crashed", {}
        if rng.random() < 0.3:
            rec["note"] = "the runner lost communication"
        return rec
    if roll < shape.crash + 0.03:
        rec["status"], rec["metrics"] = "error", {}
        rec["signature"] = rng.choice(SIGNATURES)
        rec["signature_line"] = "RuntimeError: init aborted"
        return rec
    value = truth.value(config, prov, rng)
    rec["status"] = "passed" if value >= 0.92 else "failed"
    rec["metrics"] = {METRIC: {"value": value, "n": N},
                      "throughput": {"value": round(rng.gauss(1200 if value > 0.9 else 1100, 20), 1)},
                      "latency": {"value": round(rng.gauss(95, 4), 2)}}
    if rng.random() < 0.01:
        rec["excluded"], rec["excluded_reason"] = True, "ran on a drained node"
    return rec


def write(out: Path, runs: int, seed: int, scale: float = 1.0, investigations: int = 1) -> tuple[Path, Path]:
    """Write the rule files and the runs; return (rules directory, JSON Lines file).

    ``investigations``: that many, of seeds ``seed``, ``seed + 1``, …, each its own
    shape, rule file (``wide-SEED.yaml``; ``wide.yaml`` for one) and ``runs`` runs."""
    import yaml

    rules = out / "rules"
    if rules.exists():
        shutil.rmtree(rules)
    rules.mkdir(parents=True)
    shutil.copy(ROOT / "rules" / "signatures.yaml", rules / "signatures.yaml")
    path = out / "runs.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for s in range(seed, seed + investigations):
            shape = Shape.of(s, scale)
            name = "wide.yaml" if investigations == 1 else f"wide-{s}.yaml"
            (rules / name).write_text(yaml.safe_dump(spec(shape), sort_keys=False), encoding="utf-8")
            for rec in records(shape, runs):
                fh.write(json.dumps(rec) + "\n")
    return rules, path


def build(out: Path, runs: int, seed: int, scale: float = 1.0, investigations: int = 1) -> Path:
    """A knowledge base at ``out/kb.sqlite`` (made once: kept while ``out/done`` names the same sizes)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from generate import made_once

    want = f"wide {runs} {seed} {scale}" + (f" x{investigations}" if investigations != 1 else "")
    return made_once(out, want, lambda: write(out, runs, seed, scale, investigations))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    for name, kind, default in (("--runs", int, 1000), ("--seed", int, 1), ("--scale", float, 1.0),
                                ("--investigations", int, 1)):
        ap.add_argument(name, type=kind, default=default)
    a = ap.parse_args()
    print(build(a.out, a.runs, a.seed, a.scale, a.investigations))


if __name__ == "__main__":
    main()
