"""The kinds of investigation `calibration.py` simulates, each with a known truth.

A kind builds a rule file (YAML text, validated as `triage check` would) and
draws runs from known distributions.  Hypothesis kinds share one shape: a
hypothesis ``h``, the references good and bad ``e`` × the noise of one run
apart, and a recipe ``fix`` whose prediction (or rules about it) decide ``h``.
"h true" draws the fix's runs from good's distribution, "h false" from bad's.
Bisect kinds place a known first bad point among 8 to 64 points and follow the
engine's next point, one run at a time, until it is done.
"""

from __future__ import annotations

import math
import random
import textwrap
from dataclasses import dataclass
from typing import Callable, Optional

import yaml

from triage.rules.engine.evaluate import Investigation, RunRec
from triage.rules.language.schema import Reference, RuleFile

# ---------------------------------------------------------------- distributions


@dataclass(frozen=True)
class Family:
    """How one run of a config is drawn, given its true mean.

    ``normal``: a number with SD ``sd`` (rounded to ``digits``, as CI logs print
    them); ``binom``: a proportion measured on ``n`` samples; ``passfail``: one
    job that passes or fails (the built-in ``fail_rate``); ``counts``: k failed
    of ``n`` jobs carried by one run (``fail_rate=K/N``)."""

    kind: str
    sd: float = 0.0
    n: int = 1
    digits: int = 1

    def sigma(self, mean: float) -> float:
        """The noise of one run, the unit of the effects."""
        if self.kind == "normal":
            return self.sd
        return math.sqrt(mean * (1 - mean) / self.n)

    def draw(self, rng: random.Random, mean: float, metric: str) -> tuple[str, dict]:
        """(status, metrics) of one run."""
        if self.kind == "normal":
            return "passed", {metric: (round(rng.gauss(mean, self.sd), self.digits), None)}
        k = sum(rng.random() < mean for _ in range(self.n))
        if self.kind == "passfail":
            return ("failed" if k else "passed"), {}
        return "passed", {metric: (k / self.n, self.n)}


# ---------------------------------------------------------------- hypothesis kinds


@dataclass(frozen=True)
class Kind:
    """One row family of the table: a hypothesis decided by a recipe's runs.

    ``refs``: "fixed" (``{value: V}``, the true means), "measured" (``{value:
    V, n: N}`` drawn anew each time), "pooled:R" (``{config: X}`` with R
    runs each) or "pooled-bad:R" (good fixed, bad pooled).  ``test``: the
    YAML that decides ``h`` from config ``fix``."""

    name: str
    what: str
    metric: str
    direction: str
    family: Family
    good: float
    refs: str
    fix_runs: int
    test: str
    declare_noise: bool = False
    limitation: str = ""
    effects: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)

    def means(self, effect: float) -> tuple[float, float]:
        """(good, bad) true means: bad is ``effect`` × one run's noise worse."""
        sign = 1 if self.direction == "higher" else -1
        return self.good, self.good - sign * effect * self.family.sigma(self.good)

    def spec(self, effect: float) -> RuleFile:
        g, b = self.means(effect)
        refs = {"good": {"value": g}, "bad": {"value": b}}
        if self.refs.startswith("pooled:"):
            refs = {"good": {"config": "ref-good"}, "bad": {"config": "ref-bad"}}
        elif self.refs.startswith("pooled-bad:"):
            refs["bad"] = {"config": "ref-bad"}
        elif self.refs == "measured":  # placeholders, replaced each draw
            refs = {"good": {"value": g, "n": self.family.n}, "bad": {"value": b, "n": self.family.n}}
        inv = {"id": "cal", "repo": "o/r", "pr": 1, "title": self.name, "metric": self.metric,
               "direction": self.direction, "gate": round((g + b) / 2, 9), "references": refs}
        if self.declare_noise:
            inv["metrics"] = {self.metric: {"noise": self.family.sd}}
        text = yaml.safe_dump({"schema_version": 1, "investigation": inv,
                               "hypotheses": [{"id": "h", "title": "H"}]}, sort_keys=False)
        return RuleFile.model_validate(yaml.safe_load(text + textwrap.dedent(self.test)))

    def draw(self, spec: RuleFile, rng: random.Random, truth: bool, effect: float) -> Investigation:
        g, b = self.means(effect)
        runs: list[RunRec] = []
        inv_spec = spec.investigation

        def add(config: str, mean: float, count: int) -> None:
            for _ in range(count):
                status, metrics = self.family.draw(rng, mean, self.metric)
                runs.append(RunRec(run_id=str(len(runs) + 1), config=config, status=status, metrics=metrics))

        if self.refs.startswith("pooled"):
            repeats = int(self.refs.split(":")[1])
            if self.refs.startswith("pooled:"):
                add("ref-good", g, repeats)
            add("ref-bad", b, repeats)
        elif self.refs == "measured":
            drawn = {}
            for name, mean in (("good", g), ("bad", b)):
                _, metrics = self.family.draw(rng, mean, self.metric)
                drawn[name] = Reference(value=metrics[self.metric][0], n=self.family.n)
            inv_spec = inv_spec.model_copy(update={"references": drawn})
        add("fix", g if truth else b, self.fix_runs)
        return Investigation(spec=inv_spec, hypotheses=spec.hypotheses, recipes=spec.recipes, rules=spec.rules,
                             evidence=spec.evidence, bisects=spec.bisects, runs=runs, signatures={})


RECOVERS = """
recipes:
  - {id: fix, base: main, tests: [h], predicts: {h: recovers}}
"""
BETTER = """
recipes:
  - {id: fix, base: main, tests: [h], predicts: {h: {when: {better_than: bad}, confirms: true}}}
"""
SAME_PRED = """
recipes:
  - {id: fix, base: main, tests: [h], predicts: {h: {when: {same_as: good}, confirms: true}}}
"""
SAME_RULE = """
rules:
  - {id: same, hypothesis: h, when: {config: fix, same_as: {config: ref-good}}, then: confirmed}
  - {id: differs, hypothesis: h, when: {config: fix, differs_from: {config: ref-good}}, then: ruled_out}
"""
PASSES = """
recipes:
  - {id: fix, base: main, tests: [h], predicts: {h: {when: {passes: gate}, confirms: true}}}
"""
AT_LEAST = """
rules:
  - {id: above, hypothesis: h, when: {config: fix, at_least: gate}, then: confirmed}
  - {id: under, hypothesis: h, when: {config: fix, below: gate}, then: ruled_out}
"""

WALL = Family("normal", sd=5.0, digits=0)  # whole seconds, as wall times are printed
FLAKY = Family("passfail")

KINDS: tuple[Kind, ...] = (
    Kind("prop-n50", "proportion, n=50 a run; recovers; good/bad measured at n=50; 1 run",
         "acc", "higher", Family("binom", n=50), 0.8, "measured", 1, RECOVERS),
    Kind("prop-n1319", "proportion, n=1319 a run (GSM8K); recovers; good/bad measured; 1 run",
         "acc", "higher", Family("binom", n=1319), 0.9, "measured", 1, RECOVERS,
         limitation="at gap 0 good and bad are the same: no run can show a recovery, and the two one-sided "
                    "errors of recovers (and references shown different by chance) add up past 5 %; triage "
                    "warns that good and bad are not shown different"),
    Kind("failrate-runs", "fail_rate of passed/failed runs (lower); recovers; good/bad 8 runs each; 8 runs",
         "fail_rate", "lower", FLAKY, 0.1, "pooled:8", 8, RECOVERS),
    Kind("failrate-counts", "fail_rate carried as k of 20 jobs (lower); recovers; good/bad fixed; 1 run",
         "fail_rate", "lower", Family("counts", n=20), 0.1, "fixed", 1, RECOVERS),
    Kind("noise-fixed", "wall time (lower), noise 5 declared; recovers; good/bad fixed; 2 repeats",
         "wall_s", "lower", WALL, 1470.0, "fixed", 2, RECOVERS, declare_noise=True),
    Kind("noise-fixed-x8", "wall time (lower), noise 5 declared; recovers; good/bad fixed; 8 repeats",
         "wall_s", "lower", WALL, 1470.0, "fixed", 8, RECOVERS, declare_noise=True),
    Kind("noise-pooled", "wall time (lower), noise 5 declared; recovers; good/bad 3 repeats each; 2 repeats",
         "wall_s", "lower", WALL, 1470.0, "pooled:3", 2, RECOVERS, declare_noise=True),
    Kind("spread-fixed", "wall time (lower), no noise declared; recovers; good/bad fixed; 3 repeats",
         "wall_s", "lower", WALL, 1470.0, "fixed", 3, RECOVERS),
    Kind("spread-pooled", "wall time (lower), no noise declared; recovers; good/bad 3 repeats each; 3 repeats",
         "wall_s", "lower", WALL, 1470.0, "pooled:3", 3, RECOVERS),
    Kind("better-failrate", "fail_rate of passed/failed runs; predicts better_than bad; good fixed, bad 8 runs;"
         " 8 runs", "fail_rate", "lower", FLAKY, 0.1, "pooled-bad:8", 8, BETTER),
    Kind("same-pred-noise", "wall time, noise 5 declared; predicts same_as good; good/bad fixed; 3 repeats",
         "wall_s", "lower", WALL, 1470.0, "fixed", 3, SAME_PRED, declare_noise=True),
    Kind("same-rule-failrate", "fail_rate of passed/failed runs; rules same_as / differs_from {config: good};"
         " good/bad 3 runs each; 1 run", "fail_rate", "lower", FLAKY, 0.1, "pooled:3", 1, SAME_RULE),
    Kind("gate-passes", "wall time, noise 5 declared; predicts passes: gate (midway); 2 repeats",
         "wall_s", "lower", WALL, 1470.0, "fixed", 2, PASSES, declare_noise=True),
    Kind("gate-at_least", "proportion, n=200 a run; rules at_least / below gate (midway); 1 run",
         "acc", "higher", Family("binom", n=200), 0.8, "fixed", 1, AT_LEAST),
)


# ---------------------------------------------------------------- bisect kinds


@dataclass(frozen=True)
class BisectKind:
    """A noisy bisect over ``points`` points, good before a known first bad one."""

    name: str
    what: str
    points: int
    good_when: str
    family: Family = WALL
    limitation: str = ""
    effects: tuple[float, ...] = (1.0, 2.0, 4.0)
    max_runs: int = 0  # 0: 6 × log2(points) + 6

    def cap(self) -> int:
        """The runs a user would spend before giving up on the bisect."""
        return self.max_runs or 6 * math.ceil(math.log2(self.points)) + 6

    def spec(self, effect: float) -> RuleFile:
        g, b = 1470.0, 1470.0 + effect * self.family.sd
        labels = [f"p{i:02d}" for i in range(self.points)]
        doc = {"schema_version": 1,
               "investigation": {"id": "cal", "repo": "o/r", "pr": 1, "title": self.name, "metric": "wall_s",
                                 "direction": "lower", "gate": (g + b) / 2,
                                 "metrics": {"wall_s": {"noise": self.family.sd}},
                                 "references": {"good": {"value": g}, "bad": {"value": b}}},
               "bisects": [{"id": "commits", "axis": "sha", "points": labels,
                            "good_when": yaml.safe_load(self.good_when)}]}
        return RuleFile.model_validate(yaml.safe_load(yaml.safe_dump(doc, sort_keys=False)))

    def follow(self, spec: RuleFile, rng: random.Random, first_bad: int, effect: float,
               evaluate: Callable[[Investigation], object]) -> tuple[Optional[str], bool, int]:
        """Run the bisect as its user would: (first bad found or None, stopped on an end, runs used)."""
        g, b = 1470.0, 1470.0 + effect * self.family.sd
        runs: list[RunRec] = []
        labels = spec.bisects[0].point_labels()
        while True:
            inv = Investigation(spec=spec.investigation, bisects=spec.bisects, runs=list(runs), signatures={})
            state = evaluate(inv).bisects[0]
            if state.done:
                return state.first_bad, False, len(runs)
            if state.next is None or len(runs) >= self.cap():
                return None, state.next is None, len(runs)
            i = labels.index(state.next)
            _, metrics = self.family.draw(rng, g if i < first_bad else b, "wall_s")
            runs.append(RunRec(run_id=str(len(runs) + 1), config="main", status="passed", metrics=metrics,
                               provenance={"sha": state.next}))


BISECTS: tuple[BisectKind, ...] = (
    BisectKind("bisect8-recovers", "8 points, good_when recovers, noise 5 declared, 1 run a probe", 8,
               "{recovers: true}"),
    BisectKind("bisect64-recovers", "64 points, good_when recovers, noise 5 declared, 1 run a probe", 64,
               "{recovers: true}", effects=(2.0, 4.0)),
    BisectKind("bisect8-gate", "8 points, good_when passes: gate (midway), noise 5 declared, 1 run a probe", 8,
               "{passes: gate}"),
    BisectKind("bisect64-gate", "64 points, good_when passes: gate (midway), noise 5 declared, 1 run a probe", 64,
               "{passes: gate}", effects=(2.0, 4.0)),
)

ALL = {k.name: k for k in (*KINDS, *BISECTS)}
