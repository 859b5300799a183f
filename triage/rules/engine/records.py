"""The records the engine passes around: runs in; evidence, states and suggestions out."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from enum import Enum
from itertools import compress, islice
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Optional, Sequence

import msgspec

from triage.rules.engine.keys import SEP, Keys, configs_of, joined_text, keys_text, runs_digest, splits
from triage.rules.language.schema import (
    BisectSpec,
    HypothesisSpec,
    InvestigationSpec,
    ManualEvidenceSpec,
    RecipeSpec,
    RuleSpec,
)
from triage.rules.decisions.stats import Measure

if TYPE_CHECKING:
    from triage.rules.engine.context import Context
    from triage.rules.engine.source import RunSource


class V(Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"
    NODATA = "nodata"


class RunRec(msgspec.Struct, gc=False):
    """A run as the engine sees it.

    Treated as immutable (nothing assigns to a run once made; its metrics and
    provenance may be shared between runs that recorded the same), but not
    frozen: an investigation may hold a hundred thousand runs, read back by every
    whole evaluation.  A msgspec struct is made in C: a third of what a slotted
    dataclass costs to build (0.03 s instead of 0.09 s per 100,000 runs), and,
    holding no cycle, it is left out of the cyclic collector.  Runs compare by
    value (not ``seq``), and are not hashable."""

    run_id: str
    config: str
    status: str
    metrics: Mapping[str, tuple[float, Optional[int]]] = msgspec.field(default_factory=dict)
    provenance: Mapping[str, str] = msgspec.field(default_factory=dict)
    url: Optional[str] = None
    time: Optional[str] = None
    note: Optional[str] = None
    excluded: bool = False
    excluded_reason: Optional[str] = None
    signature: Optional[str] = None
    # where the run stands in the order recorded (the knowledge base's primary key); a
    # list of runs given to the engine is in that order already, whatever this says
    seq: int = 0
    # "run_id/config", set once when the run is made: the engine looks runs up by key many times
    key: str = ""

    def __post_init__(self) -> None:
        self.key = f"{self.run_id}/{self.config}"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunRec):
            return NotImplemented
        return _compared(self) == _compared(other)

    __hash__ = None  # type: ignore[assignment]


def _compared(r: RunRec) -> tuple:
    """What two runs compare by: every field but where the run stands and its key."""
    return (r.run_id, r.config, r.status, r.metrics, r.provenance, r.url, r.time, r.note, r.excluded,
            r.excluded_reason, r.signature)


@dataclass(frozen=True)
class SignatureInfo:
    id: str
    cls: str
    meaning: str = ""
    remedy: str = ""
    outcome: Optional[str] = None  # what a matched run did, when the signature says (a result if declared)


@dataclass(frozen=True)
class EvidenceItem:
    hypothesis: str
    rule: str  # rule id, "predicts:<recipe>", "manual", "parent:<id>"
    verdict: str  # rules_out | confirms | supports | inconclusive
    reason: str
    runs: Sequence[str] = ()  # a tuple, or Keys when read back from a stored piece
    flags: tuple[str, ...] = ()
    summary: str = ""  # the reason in a few words, for the elimination summary
    needed: tuple[str, ...] = ()  # for a can't-tell reading: what would decide it

    @cached_property
    def key(self) -> str:
        if len(self.runs) > 20:  # a summary of many runs: their digest, not thousands of keys
            runs = f"{len(self.runs)} runs {runs_digest(self.runs)}"
        else:
            runs = self.runs.joined(",") if isinstance(self.runs, Keys) else ",".join(self.runs)
        return "|".join((self.hypothesis, self.rule, self.verdict, runs, self.reason))

    @property
    def counts(self) -> bool:
        return "superseded" not in self.flags


@dataclass(frozen=True)
class PointState:
    label: str
    state: str  # good | bad | untested | skipped | unknown | no_number | flaky
    runs: Sequence[str] = ()  # a tuple, or Keys when read back from a stored piece
    reason: str = ""
    value: Optional[float] = None  # the measured metric (pooled over the point's valid runs)
    needed: tuple[str, ...] = ()  # for a can't-tell point: what would decide it
    manual: str = ""  # the marks set by hand (`triage bisect mark`, `marks:`), as said


@dataclass(frozen=True)
class BisectState:
    id: str
    title: str
    axis: str
    points: tuple[PointState, ...]
    last_good: Optional[str]
    first_bad: Optional[str]
    next: Optional[str]
    remaining: tuple[str, ...]
    steps: int
    notes: tuple[str, ...] = ()
    ends: str = ""  # the check that the good end is good and the bad end bad
    ends_ok: bool = False
    command: Optional[str] = None  # the bisect's `run:` for the next point
    done: bool = False  # last good and first bad are adjacent


@dataclass(frozen=True)
class Confound:
    """A recipe's run that differs from its base in a variable it does not declare."""

    run: str  # run key
    recipe: str
    key: str
    value: str
    base_value: Optional[str]  # None: the recipe declares `key` but the run recorded another value
    base_run: Optional[str] = None
    declared: Optional[str] = None  # the value the recipe declares for `key`

    def message(self, ctx: "Context") -> str:
        run_id, _, config = self.run.partition("/")
        return f"run {run_id} ({ctx.short(config)}): {self.what(ctx)}"

    def what(self, ctx: "Context", values: Sequence[str] = ()) -> str:
        """What differs, without naming the run: the same for every run of the recipe that
        differs alike.  ``values``: the values runs that differ in this key recorded, when
        they are several (a sha per commit): said as their count and the first few."""
        value = self.value
        if len(values) > 1:
            value = f"one of {len(values):,} values ({', '.join(values[:3])}{', …' if len(values) > 3 else ''})"
        if self.base_value is None:
            return (f"the recipe sets {self.key}={self.declared}, the run{'s' if len(values) > 1 else ''} recorded "
                    f"{self.key}={value}: the change was not applied as declared")
        base_id, _, base_config = (self.base_run or "").partition("/")
        return (f"{self.key} is {value}, its base {ctx.short(base_config)} ({base_id}) ran "
                f"{self.base_value}; the recipe does not declare {self.key}")


#: A kind of confound, what every confound of it shares: (recipe, key, base value, base run, declared).
Combo = tuple[str, str, Optional[str], Optional[str], Optional[str]]


class Confounds(Sequence[Confound]):
    """Confounds kept as columns, a recipe's at a time, as its piece stores them: the runs
    (:class:`Keys`), each one's value, and the place of what the rest says among the few
    distinct kinds (:data:`Combo`).  A recipe whose runs each record their own sha has a
    confound per run: hundreds of thousands in a large investigation, where what is asked
    of them (which runs, which recipes and keys, what the warnings group) is answered from
    the columns; a :class:`Confound` is made only for one looked at."""

    __slots__ = ("_parts", "_len", "_items", "_said")

    def __init__(self, parts: Sequence[tuple[Keys, Sequence[str], Sequence[int], Sequence[Combo]]] = ()) -> None:
        self._parts = [p for p in parts if p[2]]
        self._len = sum(len(p[2]) for p in self._parts)
        self._items: Optional[tuple[Confound, ...]] = None
        # per part, what its warnings say (kept with a recipe's piece), or None: not known
        self._said: list[Optional[Sequence[str]]] = [None] * len(self._parts)

    def saying(self, said: Sequence[str]) -> Confounds:
        """These confounds (one part, or none), knowing what their warnings say."""
        if len(self._parts) > 1:
            raise ValueError("what the warnings say is kept for one recipe's confounds at a time")
        self._said = [tuple(said)] * len(self._parts)
        return self

    def said(self) -> Optional[list[str]]:
        """What the warnings of every part say, in order, if each part's is known."""
        if any(s is None for s in self._said):
            return None
        return [text for s in self._said for text in s]  # type: ignore[union-attr]

    def said_of_one(self) -> Optional[Sequence[str]]:
        """What a recipe's confounds' warnings say, as its piece keeps them (None: not known)."""
        return self._said[0] if len(self._said) == 1 else () if not self._said else None

    @classmethod
    def of(cls, items: Sequence[Confound]) -> Confounds:
        combos: dict[Combo, int] = {}
        places = [combos.setdefault((c.recipe, c.key, c.base_value, c.base_run, c.declared), len(combos))
                  for c in items]
        made = cls([(Keys.of([c.run for c in items]), [c.value for c in items], places, list(combos))])
        made._items = tuple(items)
        return made

    @classmethod
    def joined(cls, groups: Sequence[Confounds]) -> Confounds:
        """These confounds, one after the other (no column is copied)."""
        made = cls([p for g in groups for p in g._parts])
        made._said = [s for g in groups for s in g._said]
        return made

    def columns(self) -> tuple[Keys, Sequence[str], Sequence[int], Sequence[Combo]]:
        """As one part (what a recipe's piece stores)."""
        if len(self._parts) == 1:
            return self._parts[0]
        if not self._parts:
            return Keys(), [], [], []
        return Confounds.of(tuple(self)).columns()

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Confound]:
        if self._items is not None:
            return iter(self._items)
        return (Confound(run, combos[i][0], combos[i][1], value, *combos[i][2:])
                for runs, values, places, combos in self._parts for run, value, i in zip(runs, values, places))

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice) and i.step is None and (i.start or 0) == 0 and i.stop is not None and i.stop >= 0:
            return tuple(islice(self, i.stop))  # the first few, as a view shows them
        if self._items is None:
            self._items = tuple(self)
        return self._items[i]

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, (Confounds, list, tuple)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Confounds({list(self)!r})"

    def plain(self) -> list[tuple]:
        """Every part as plain data, its runs as one text: to tell whether two are the same."""
        return [(keys_text(runs), joined_text(values) or list(values), list(places), [list(c) for c in combos])
                for runs, values, places, combos in self._parts]

    def runs(self) -> set[str]:
        """The runs confounded."""
        return {run for runs, *_ in self._parts for run in runs.passing()}

    def recipes(self) -> dict[str, set[str]]:
        """Each recipe with confounds, and the keys its runs are confounded in."""
        out: dict[str, set[str]] = {}
        for *_, combos in self._parts:
            for combo in combos:
                out.setdefault(combo[0], set()).add(combo[1])
        return out

    def groups(self) -> Iterator[tuple[str, Confound, int, list[str], list[str]]]:
        """The confounds by their run's config and kind, first seen first: (the config, the
        first confound, how many, the first few run ids, the distinct values)."""
        for part in self._parts:
            yield from _plain_groups(part) or _groups(part)

    def notes(self) -> Mapping[str, str]:
        """Run key -> what its reading adds ("confounded (image, sha)"), looked up among
        the runs of the configs a key can be of."""
        return _Notes(self._parts)


def _groups(part: tuple) -> list[tuple[str, Confound, int, list[str], list[str]]]:
    """:meth:`Confounds.groups` of one part, run by run."""
    from triage.rules.engine.summary import NAMED

    runs, values, places, combos = part
    groups: dict[tuple[str, int], list] = {}  # (config, place) -> [first, count, ids, values]
    for run, value, i in zip(runs.passing(), values, places):
        run_id, _, config = run.partition("/")
        g = groups.get((config, i))
        if g is None:
            groups[(config, i)] = [Confound(run, *combos[i][:2], value, *combos[i][2:]), 1, [run_id], {value: None}]
            continue
        g[1] += 1
        if len(g[2]) < NAMED:
            g[2].append(run_id)
        g[3][value] = None
    return [(config, first, count, ids, list(seen)) for (config, _), (first, count, ids, seen) in groups.items()]


def _plain_groups(part: tuple) -> Optional[list[tuple[str, Confound, int, list[str], list[str]]]]:
    """:func:`_groups` of a part whose every run is ``ID/RECIPE`` (one "/", as a recipe's runs
    are), by kind rather than run by run; None for any other part.  A kind's places are
    found in the list of places and its distinct values among the values, each in one pass."""
    from triage.rules.engine.summary import NAMED

    runs, values, places, combos = part
    recipe, n = combos[0][0], len(places)
    suffix = f"/{recipe}"
    text = runs.text
    if (any(c[0] != recipe for c in combos) or text.count("/") != n or not text.endswith(suffix)
            or text.count(suffix + SEP) != n - 1):
        return None
    ids = runs.ids(suffix).split(SEP)
    out = []
    for i, combo in enumerate(combos):  # places are given first seen first
        at = [places.index(i)]
        while len(at) < NAMED:
            try:
                at.append(places.index(i, at[-1] + 1))
            except ValueError:
                break
        seen = values if len(combos) == 1 else compress(values, map(i.__eq__, places))
        first = Confound(ids[at[0]] + suffix, *combo[:2], values[at[0]], *combo[2:])
        out.append((recipe, first, places.count(i), [ids[j] for j in at], list(dict.fromkeys(seen))))
    return out


class _Notes(Mapping[str, str]):
    """:meth:`Confounds.notes`: a key looked up in the runs of the parts of the configs it can
    be of, each such part's runs indexed by key the first time one is asked of it (a view
    asks a few thousand keys of hundreds of thousands of confounds: indexing them all cost
    more than the searches, and a search of a part's text for each key more than indexing
    the parts asked of)."""

    def __init__(self, parts: list) -> None:
        self._parts = parts
        self._by_config: Optional[dict[str, list[int]]] = None
        self._indexed: dict[int, dict[str, list[str]]] = {}  # part -> run key -> what it adds, in order
        self._primed: dict[str, list[str]] = {}  # a key asked for ahead -> what it adds (none: [])

    def prime(self, keys: Iterable[str]) -> None:
        """Look up ``keys`` ahead, each part they can be in gone through once for all of them:
        a view asks for the first runs of each recipe, a few of the thousands of its part.
        Indexing each such part whole cost more than the view's other work at a million runs."""
        wanted: dict[int, set[str]] = {}
        for key in keys:
            if key not in self._primed:
                self._primed[key] = []
                for i in self._parts_of(key):
                    wanted.setdefault(i, set()).add(key)
        for i in sorted(wanted):
            index = self._indexed.get(i)
            if index is not None:
                for key in wanted[i]:
                    self._primed[key] += index.get(key, ())
                continue
            runs, _, places, combos = self._parts[i]
            these = wanted[i]
            for run, place in zip(runs.passing(), places):
                if run in these:
                    self._primed[run].append(combos[place][1])

    def _parts_of(self, key: str) -> list[int]:
        """The parts whose runs may be of ``key``'s config, in order."""
        if self._by_config is None:
            self._by_config = {}
            for i, (runs, *_) in enumerate(self._parts):
                for config in configs_of(runs):
                    self._by_config.setdefault(config, []).append(i)
        return sorted({i for _, config in splits(key) for i in self._by_config.get(config, ())})

    def __getitem__(self, key: str) -> str:
        keys = self._primed.get(key)
        if keys is None:
            keys = [word for i in self._parts_of(key) for word in self._index(i).get(key, ())]
        if not keys:
            raise KeyError(key)
        return f"confounded ({', '.join(dict.fromkeys(keys))})"

    def _index(self, i: int) -> dict[str, list[str]]:
        index = self._indexed.get(i)
        if index is None:
            runs, _, places, combos = self._parts[i]
            index = self._indexed[i] = {}
            for run, place in zip(runs.passing(), places):
                index.setdefault(run, []).append(combos[place][1])
        return index

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(run for runs, *_ in self._parts for run in runs.passing()))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __bool__(self) -> bool:
        return bool(self._parts)


@dataclass(frozen=True)
class RecipeState:
    """Where a recipe stands: never run, no valid run, can't tell, or run (decided)."""

    recipe: str
    state: str  # never-run | no-valid-run | cant-tell | waiting | run
    runs: tuple[str, ...] = ()
    valid: tuple[str, ...] = ()
    why: str = ""  # for no-valid-run: the newest attempt's failure; for cant-tell: the reading
    needed: tuple[str, ...] = ()  # for cant-tell: what would decide it
    blocked: str = ""  # a failure that a plain re-run will not fix, with its remedy
    confounded: tuple[str, ...] = ()  # confounded provenance keys of its runs
    # per prediction: (hypothesis, "decided" | "can't tell" | "waiting for CONFIG" | "no data")
    predictions: tuple[tuple[str, str], ...] = ()
    waiting: tuple[str, ...] = ()  # for waiting: the configs (base, reference) it waits for
    # its first runs as the Experiments table shows them (triage.rules.decisions.readings.shown_runs)
    shown: tuple[tuple, ...] = ()


@dataclass(frozen=True)
class Suggestion:
    recipe: str
    tests: tuple[str, ...]
    why: str
    command: Optional[str]
    score: float
    kind: str = "recipe"  # recipe | bisect | base (a missing base, reference or comparison run)
    state: str = ""  # never run / no valid run yet (…) / can't tell yet / bisect step
    outcomes: tuple[str, ...] = ()  # "recovers to good ⇒ a confirmed, b ruled out", …
    advice: str = ""  # what to change before running it (samples, repeats, a remedy)
    blocked: str = ""  # its last run hit a known failure a plain re-run will not fix
    point: Optional[str] = None  # for a bisect: the point to run


@dataclass(frozen=True)
class Warning_:
    kind: str
    message: str


@dataclass(frozen=True)
class Plain:
    """An investigation's definitions as plain data, as the engine reads them: what its
    pieces' key rests on (``key``: spec, hypotheses, recipes, rules, bisects, in JSON's
    terms) and what the config check reads (``configs``: spec, recipes, rules, bisects,
    by alias and without Nones).  Made where the definitions are validated and kept with
    them (:mod:`triage.rules.language.kept`), so that an evaluation dumps none of them;
    ``of`` holds the very definitions it was made of (see :func:`plain_of`)."""

    of: tuple
    key: tuple
    configs: tuple


def plain(spec: InvestigationSpec, hypotheses: Sequence[HypothesisSpec], recipes: Sequence[RecipeSpec],
          rules: Sequence[RuleSpec], bisects: Sequence[BisectSpec]) -> Plain:
    def dump(specs: Sequence) -> list:
        return [x.model_dump(mode="json") for x in specs]

    def named(x: object) -> dict:
        return x.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[attr-defined]

    return Plain((spec, hypotheses, recipes, rules, bisects),
                 (spec.model_dump(mode="json"), dump(hypotheses), dump(recipes), dump(rules), dump(bisects)),
                 (named(spec), [named(r) for r in recipes], [named(r) for r in rules], [named(b) for b in bisects]))


def plain_of(inv: "Investigation") -> Plain:
    """``inv.plain`` if it was made of these very definitions (a bundle copied with other
    rules keeps the first's), else made now."""
    now = (inv.spec, inv.hypotheses, inv.recipes, inv.rules, inv.bisects)
    p = inv.plain
    if p is not None and all(a is b for a, b in zip(p.of, now)):
        return p
    return plain(*now)


@dataclass
class Investigation:
    """Everything the engine needs about one investigation."""

    spec: InvestigationSpec
    hypotheses: Sequence[HypothesisSpec] = ()
    recipes: Sequence[RecipeSpec] = ()
    rules: Sequence[RuleSpec] = ()
    evidence: Sequence[ManualEvidenceSpec] = ()
    bisects: Sequence[BisectSpec] = ()
    runs: Sequence[RunRec] = ()
    signatures: Mapping[str, SignatureInfo] = field(default_factory=dict)
    exclusive: Sequence[Sequence[str]] = ()  # groups of hypotheses that exclude each other
    # Where the runs come from when they are not all in ``runs``: a config at a
    # time, from the knowledge base (see triage.rules.engine.source)
    source: Optional["RunSource"] = None
    plain: Optional[Plain] = None  # the definitions as plain data, when at hand (else dumped once here)


@dataclass(frozen=True)
class SubjectTable:
    """Each subject's reading per config (a bisect point apart): value and ≈ good / ≈ bad / gate."""

    key: str  # the provenance key that names a subject
    columns: tuple[str, ...]  # "config" or "config @ point"
    rows: tuple[tuple[str, tuple[str, ...]], ...]  # (subject, a cell per column: "" when not measured)


@dataclass
class Evaluation:
    evidence: list[EvidenceItem]
    statuses: dict[str, str]
    references: dict[str, tuple[Optional[Measure], str]]
    readings: dict[str, str]
    bisects: list[BisectState]
    suggestions: list[Suggestion]
    warnings: list[Warning_]
    untested: list[str]
    recipes: list[RecipeState] = field(default_factory=list)
    confounds: Sequence[Confound] = field(default_factory=list)  # Confounds, from an evaluation
    # open children of a confirmed parent: the next level to decide
    next_level: dict[str, list[str]] = field(default_factory=dict)
    invalid: Mapping[str, str] = field(default_factory=dict)  # run key -> why it decides nothing (in the order recorded)
    subjects: Optional[SubjectTable] = None  # with an investigation's `subject:`, each subject's readings



@dataclass
class Result:
    value: V
    parts: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    invalid: list[tuple[str, str, str]] = field(default_factory=list)  # (run key, config, why in a few words)
    needed: list[str] = field(default_factory=list)
    measure: Optional[Measure] = None
    short: list[str] = field(default_factory=list)
