"""The rule engine: records in, evidence and statuses out.

A pure function of its inputs (no database, no clock, no network), so an
evaluation can be tested with plain objects and replayed offline.

Conditions evaluate to one of four values: TRUE, FALSE, UNKNOWN (the numbers
cannot tell, noise-aware) and NODATA (nothing to look at yet).  A rule fires
on TRUE (its verdict) and on UNKNOWN (inconclusive, with what would decide
it).  A recipe's prediction is a rule both ways: contradicted, it rules the
hypothesis out; a predicted recovery (or a prediction marked `confirms: true`)
that happens confirms it; any other prediction that comes true only supports
it.  Bisects are evaluated first, so rules may read them; at most one
hypothesis of an exclusive group stays confirmed.  Runs of an outcome the
investigation does not declare its failure (crashed, timeout, oom, cancelled,
infra by default), excluded runs and known failures never decide anything: each
one a rule looks at yields inconclusive evidence saying why.

Beyond statuses, the same pass classifies every bisect point (good, bad,
can't tell, flaky, skipped, untested) and names the next one; finds recipe
runs confounded by a variable their recipe does not declare; says where each
recipe stands; and ranks what to run next.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from triage.rules.engine.bisect import evaluate_bisect, evaluate_bisects
from triage.rules.decisions.conditions import evaluate_condition
from triage.rules.language.configcheck import config_warnings
from triage.rules.engine.confounds import base_run, confound_warnings, confounds_of, newest_base
from triage.rules.engine.context import Context, num
from triage.rules.engine.decides import bisect_evidence
from triage.rules.next.discriminate import RIVALS, Rivals, exclusive_conflicts, rival_table, undistinguished
from triage.rules.engine.evidence import (
    _flagged,
    _prediction_condition,
    _prediction_evidence,
    _rule_evidence,
    derive_status,
)
from triage.rules.engine.facts import facts
from triage.rules.engine.chained import Chained
from triage.rules.engine.keys import InvalidRuns, Keys, keys_text
from triage.rules.engine.memo import CONFOUNDS, EVIDENCE, Codec, Memo, fingerprint
from triage.rules.decisions.readings import Readings, reading, shown_runs, subject_table
from triage.rules.engine.records import (
    BisectState,
    Confound,
    Confounds,
    Evaluation,
    EvidenceItem,
    Investigation,
    PointState,
    RecipeState,
    Result,
    RunRec,
    SignatureInfo,
    Suggestion,
    V,
    Warning_,
    plain_of,
)
from triage.rules.next.suggest import (
    UNDECIDED,
    _suggest,
    combined_command,
    fill_command,
    recipe_states,
)

__all__ = [
    "UNDECIDED", "BisectState", "Confound", "Context", "Evaluation", "EvidenceItem", "Investigation", "PointState",
    "RecipeState", "Result", "RunRec", "SignatureInfo", "Suggestion", "V", "Warning_", "base_run",
    "combined_command", "derive_status", "evaluate", "evaluate_bisect", "evaluate_condition", "fill_command",
    "num", "reading", "recipe_states",
]


def evaluate(inv: Investigation, memo: Optional[Memo] = None) -> Evaluation:
    """Derive evidence, statuses, confounds, recipe states, bisect states and suggestions.

    ``memo``: the pieces of an earlier evaluation, reused where what they read
    is unchanged (:mod:`triage.rules.engine.memo`); it holds this evaluation's pieces
    afterwards.  The result is the same with or without it."""
    ctx = _context(inv, memo)
    per_config = [facts(config, ctx) for config in ctx.source.configs()]
    ctx.warn_unscaled([u for f in per_config for u in f.unscaled])
    # Bisects first: rules and predictions may read them ({bisect: ID, first_bad: P}).
    bisects = evaluate_bisects(inv.bisects, ctx)
    units = _units(inv)
    items, confounds = _evidence(inv, ctx, units, bisects)
    statuses = _statuses(inv, items)
    # At most one hypothesis of an exclusive group is confirmed.
    rivals = _rivals(inv, ctx)
    exclusive_warnings, exclusive_conflicting = exclusive_conflicts(inv, statuses, items, rivals)
    override_warnings = _overrides(inv, statuses, items)
    # A confirmed parent makes its undecided children the next level to decide.
    next_level: dict[str, list[str]] = {}
    for h in inv.hypotheses:
        if h.parent is not None and statuses.get(h.parent) == "confirmed" and statuses.get(h.id) in UNDECIDED:
            next_level.setdefault(h.parent, []).append(h.id)
    warnings = _warnings(inv, ctx, statuses, per_config, bisects, confounds, rivals,
                         list(override_warnings) + exclusive_warnings, exclusive_conflicting)
    states = recipe_states(inv, ctx, items, statuses, confounds, _shown_pieces(units, ctx))
    suggestions, untested = _suggest(inv, ctx, statuses, bisects, states, next_level)
    readings = Readings(ctx, confounds.notes())
    order = {h.id: i for i, h in enumerate(inv.hypotheses)}
    items.sort(key=lambda e: (order.get(e.hypothesis, len(order)), e.hypothesis))
    invalid = InvalidRuns({f.config: f.invalid for f in per_config})
    return Evaluation(items, statuses, ctx.refs, readings, bisects, suggestions, warnings, untested,
                      states, confounds, next_level, invalid, subject_table(ctx, inv.bisects))


def _evidence(inv: Investigation, ctx: Context, units: list[Unit],
              bisects: list[BisectState]) -> tuple[list[EvidenceItem], Confounds]:
    """Every evidence item (rules, predictions, by hand, finished bisects), superseded and
    confounded ones marked, each once; and the confounds."""
    items, read = _evidence_pieces(units, ctx)
    made = items  # alive while ``read`` names its items by id
    for ev in inv.evidence:
        by = f" ({ev.author})" if ev.author else ""
        items.append(EvidenceItem(ev.hypothesis, "manual", ev.verdict, ev.because + by, tuple(ev.runs), ("manual",),
                                  summary=ev.because + by))
    items += bisect_evidence(inv.bisects, bisects)  # a finished bisect decides what its `decides:` names
    # A rule that decided something supersedes the rules it names.
    decided = {e.rule for e in items if e.verdict != "inconclusive"}
    superseded: set[str] = set()
    for rule in inv.rules:
        if rule.id in decided:
            superseded.update(rule.supersedes)
    items = [_flagged(e, "superseded") if e.rule in superseded else e for e in items]
    read.update({id(e): read.get(id(was)) for e, was in zip(items, made) if e is not was})
    # Deduplicate (the same invalid run seen by several rules of one hypothesis).
    seen: set[tuple] = set()
    unique: list[EvidenceItem] = []
    for e in items:
        k = (e.hypothesis, e.verdict, keys_text(e.runs), e.reason) if "invalid-run" in e.flags else (e.key,)
        if k not in seen:
            seen.add(k)
            unique.append(e)
    # Evidence resting on a confounded run stays, marked.
    confounds = _confound_pieces(units, ctx)
    confounded = confounds.runs()
    # a recipe's confounds are runs of its config (named as the recipe): an item whose
    # runs name none of those configs is not looked through run by run
    configs = set(confounds.recipes())
    pools: dict[int, bool] = {}  # a pool's keys (shared by the items that name it) -> whether they hold one
    items = [_flagged(e, "confounded") if confounded and _rests_on(e.runs, confounded, configs, read.get(id(e)), pools)
             else e for e in unique]
    del made
    return items, confounds


def _statuses(inv: Investigation, items: list[EvidenceItem]) -> dict[str, str]:
    """Each hypothesis's status from its evidence; a ruled-out parent rules out its undecided
    children (an inherited item in ``items`` says so)."""
    by_h: dict[str, list[EvidenceItem]] = {h.id: [] for h in inv.hypotheses}
    for e in items:
        by_h.setdefault(e.hypothesis, []).append(e)
    statuses = {h: derive_status(es) for h, es in by_h.items()}
    parents = {h.id: h.parent for h in inv.hypotheses}
    for h in inv.hypotheses:
        anc = h.parent
        while anc is not None and statuses.get(h.id) in ("open", "inconclusive"):
            if statuses.get(anc) == "ruled_out":
                text = f"its parent {anc} is ruled out"
                e = EvidenceItem(h.id, f"parent:{anc}", "rules_out", text, (), ("inherited",), summary=text)
                items.append(e)
                statuses[h.id] = "ruled_out"
            anc = parents.get(anc)
    return statuses


def _overrides(inv: Investigation, statuses: dict[str, str], items: list[EvidenceItem]) -> list[Warning_]:
    """A status set by hand wins over the derived one, and says so (a warning when they differ)."""
    override_warnings: list[Warning_] = []
    for h in inv.hypotheses:
        if h.override is None:
            continue
        o = h.override
        derived = statuses.get(h.id, "open")
        by = f" ({o.author})" if o.author else ""
        text = f"status set by hand to {o.status} (the evidence says {derived}): {o.because}{by}"
        verdict = {"ruled_out": "rules_out", "confirmed": "confirms", "inconclusive": "inconclusive"}.get(o.status, "supports")
        items.append(EvidenceItem(h.id, "override", verdict, text, (), ("override",), summary=text))
        statuses[h.id] = o.status
        if derived != o.status:
            override_warnings.append(Warning_("override", f"`{h.id}`: {text}"))
    return override_warnings


def _warnings(inv: Investigation, ctx: Context, statuses: dict[str, str], per_config: list,
              bisects: list[BisectState], confounds: Confounds, rivals: Rivals,
              warnings: list[Warning_], exclusive_conflicting: set[str]) -> list[Warning_]:
    """The report's warnings after ``warnings`` (overrides, exclusive groups), in the report's order."""
    for h, s in statuses.items():
        if s == "conflicting" and h not in exclusive_conflicting:
            warnings.append(Warning_("conflict", f"`{h}` has evidence both ways; check the runs behind it"))
    for name, (m, label) in ctx.refs.items():
        if m is None and not ctx.spec.subject:  # with subjects: resolved per subject
            warnings.append(Warning_("reference", f"reference `{name}` has no value yet: {label}"))
    warnings += confound_warnings(confounds, ctx)
    warnings += [Warning_("repeats", w) for _, w in sorted((x for f in per_config for x in f.repeats), key=_first)]
    warnings += [Warning_("noise", w) for w in ctx.warnings]
    warnings += [Warning_("inconclusive-run", w)
                 for _, w in sorted((x for f in per_config for x in f.inconclusive), key=_first)]
    for b in bisects:
        for note in b.notes:
            warnings.append(Warning_("bisect", f"bisect `{b.id}`: {note}"))
    warnings += undistinguished(inv, statuses, rivals)
    warnings += _config_warnings(inv, ctx, per_config)
    return warnings


def _config_warnings(inv: Investigation, ctx: Context, per_config: list) -> list[Warning_]:
    """A config named but never recorded, or recorded (not only excluded) but never named: a typo."""
    in_use = [f.config for f in per_config if len(f.invalid) < len(f.keys)
              or any(not why.startswith("excluded") for _, _, why in f.invalid)]
    return [Warning_("config", w) for w in
            config_warnings(*plain_of(inv).configs, ctx.source.configs(), in_use)]


def _context(inv: Investigation, memo: Optional[Memo]) -> Context:
    ctx = Context(inv)
    if memo is not None:
        ctx.memo = memo
    ctx.memo.start(_key(inv, ctx))
    return ctx


Unit = tuple[str, Callable[[], bool], Callable[[Context], list]]


def _units(inv: Investigation) -> list[Unit]:
    """The pieces of an evaluation that need no other but the bisects, in the order it
    works them out: each rule's evidence, the rival table, each prediction's evidence,
    each recipe's confounds.  With each, whether it reads a bisect (asked only to share the work out), and how it
    is worked out (or reused) in a context."""
    def rule_piece(rule: Any) -> Callable[[Context], list]:
        return lambda ctx: ctx.memo.piece(ctx, f"r:{rule.id}", lambda: _rule_evidence(rule, ctx), EVIDENCE)

    def prediction_piece(recipe: Any, hyp: str, pred: Any) -> Callable[[Context], list]:
        return lambda ctx: ctx.memo.piece(ctx, f"p:{recipe.id}\x1f{hyp}",
                                          lambda: _prediction_evidence(recipe, hyp, pred, ctx), EVIDENCE)

    def confounds_piece(recipe: Any) -> Callable[[Context], list]:
        def make(ctx: Context) -> list:
            # Of its base config's runs, a recipe's confounds read only the newest valid one,
            # looked up outside the piece (the base's facts are worked out once anyway): the
            # piece is worked out again when that run changes, not whenever a base run arrives.
            if recipe.base_run or not recipe.base:
                return ctx.memo.piece(ctx, f"c:{recipe.id}", lambda: confounds_of(recipe, ctx), CONFOUNDS)
            newest = newest_base(recipe, ctx)
            token = ("v", f"newest:{recipe.base}")
            ctx.derived[token[1]] = fp = fingerprint(newest)

            def compute() -> list:
                ctx.read(token, fp)
                return confounds_of(recipe, ctx, newest)
            return ctx.memo.piece(ctx, f"c:{recipe.id}", compute, CONFOUNDS)
        return make

    def shown_piece(recipe: Any) -> Callable[[Context], tuple]:
        return lambda ctx: ctx.memo.piece(ctx, f"x:{recipe.id}", lambda: shown_runs(recipe.id, ctx), SHOWN)

    out: list[Unit] = [(f"r:{rule.id}", lambda rule=rule: bool(rule.when.bisects()), rule_piece(rule))
                       for rule in inv.rules]
    out.append(("d:rivals", lambda: False, lambda ctx: _rivals(inv, ctx)))
    out += [(f"p:{recipe.id}\x1f{hyp}",
             lambda recipe=recipe, pred=pred: bool(_prediction_condition(pred, recipe)[0].bisects()),
             prediction_piece(recipe, hyp, pred))
            for recipe in inv.recipes for hyp, pred in recipe.predicts.items()]
    out += [(f"c:{recipe.id}", lambda: False, confounds_piece(recipe)) for recipe in inv.recipes]
    return out + [(f"x:{recipe.id}", lambda: False, shown_piece(recipe)) for recipe in inv.recipes]


def _rivals(inv: Investigation, ctx: Context) -> Rivals:
    """How each recipe bears on each hypothesis, to tell rivals apart: it reads no runs."""
    return ctx.memo.piece(ctx, "d:rivals", lambda: rival_table(inv), RIVALS)


def _evidence_pieces(units: list[Unit], ctx: Context) -> tuple[list[EvidenceItem], dict[int, Optional[frozenset]]]:
    """What the rules and the recipes' predictions say, a piece each; and for each item
    (by its id) the configs whose runs its piece read, which are the only runs it
    can name (None: the piece read runs by id or a bisect's, of any config)."""
    items: list[EvidenceItem] = []
    read: dict[int, Optional[frozenset]] = {}
    for name, _, make in units:
        if name[0] in "rp":
            made = make(ctx)
            read.update(dict.fromkeys(map(id, made), _configs_read(ctx.memo.pieces.get(name))))
            items += made
    return items, read


def _configs_read(piece: Optional[tuple]) -> Optional[frozenset]:
    if piece is None:
        return None
    configs = set()
    for kind, what, _ in piece[0]:
        if kind not in ("c", "q"):  # a config's runs, or what they pooled (triage.rules.engine.pools)
            return None
        configs.add(what if kind == "c" else what.rpartition("\x1f")[0])  # a metric's name holds no separator
    return frozenset(configs)


#: How a recipe's shown runs are stored: a list per run.
SHOWN: Codec[tuple] = Codec(lambda rows: [list(r) for r in rows], lambda data: tuple(map(tuple, data)))


def _shown_pieces(units: list[Unit], ctx: Context) -> dict[str, tuple]:
    """Each recipe's first runs as the Experiments table shows them, a piece each."""
    return {name[2:]: make(ctx) for name, _, make in units if name[0] == "x"}


def _confound_pieces(units: list[Unit], ctx: Context) -> Confounds:
    return Confounds.joined([make(ctx) for name, _, make in units if name[0] == "c"])


def ahead_units(inv: Investigation, configs: Sequence[str]) -> list[tuple[str, bool]]:
    """The pieces an evaluation may have worked out ahead of it (:func:`work_ahead`),
    as units named like their pieces: the bisects (``b``, one unit: they read
    each other), each rule, the rival table, then each of ``configs``' facts,
    each followed by its recipe's predictions and confounds, and last those of
    recipes without runs.  With each, whether it reads a bisect: only where the
    bisects were worked out can it be."""
    out: list[tuple[str, bool]] = [("b", False)] if inv.bisects else []
    # A recipe's predictions and confounds read its config's runs (a recipe is named as its
    # config) and that config's facts: next to them, so that the config's runs can be let go
    # once they are worked out (:func:`work_through`).
    of_recipe: dict[str, list[tuple[str, bool]]] = {}
    for name, reads, _ in _units(inv):
        if name[0] in "pcx":
            of_recipe.setdefault(unit_config(name), []).append((name, reads()))
        else:
            out.append((name, reads()))
    for config in configs:
        out.append((f"f:{config}", False))
        out += of_recipe.pop(config, [])
    return out + [unit for units in of_recipe.values() for unit in units]  # recipes without runs


def work_ahead(inv: Investigation, memo: Memo, units: Iterable[str]) -> None:
    """Work out these units of an evaluation (:func:`ahead_units`, taken one at a
    time: another process may be taking others) ahead of it, for an
    :func:`evaluate` to take in (:meth:`Memo.adopt`).  They are left in
    ``memo.pieces``, named in ``memo.worked``, under ``memo.key``."""
    ctx = _context(inv, memo)
    makers = {name: make for name, _, make in _units(inv)}
    for name in units:
        if name == "b":
            evaluate_bisects(inv.bisects, ctx)
        elif name in makers:
            makers[name](ctx)
        elif name.startswith("f:"):
            facts(name[2:], ctx)


def work_through(inv: Investigation, memo: Memo, read: Callable[[list[str]], None],
                 forget: Callable[[str], None], size: Optional[Callable[[str], int]] = None) -> None:
    """Work out every unit of a whole evaluation ahead of it (:func:`work_ahead`, in
    :func:`ahead_units`'s order), reading the configs' runs some at a time (``read``:
    many configs' in one go, about :data:`_READ_RUNS` runs by ``size``, a config's count)
    and letting go of each config's (``forget``) once the units that read them are worked
    out: the bisects and rules first, then each config's facts, predictions and confounds.
    A unit that reads a config let go reads it again (a recipe's predictions compare with
    its base's runs pooled once, as a piece of its own).  The evaluation that follows takes
    the pieces in (:meth:`Memo.adopt_own`) without decoding them again, and reads a
    config's runs again only where a suggestion looks at them outside the pieces; at no
    time are every config's runs held at once."""
    configs = inv.source.configs()
    units = [name for name, _ in ahead_units(inv, configs)]
    at = {config: i for i, config in enumerate(configs)}

    def batch(start: int) -> int:  # where the configs read in one go from ``start`` end
        end, runs = start, 0
        while end < len(configs) and end - start < _READ_AT_ONCE and (end == start or runs < _READ_RUNS):
            runs += size(configs[end]) if size is not None else 0
            end += 1
        return end

    def in_turn() -> Iterator[str]:  # each unit, the runs it reads read before it
        ahead = batch(0)  # the configs read so far, in order: the first before the bisects and rules
        read(configs[:ahead])
        for name in units:
            config = unit_config(name)
            if name.startswith("f:") and at[config] >= ahead:
                start, ahead = at[config], batch(at[config])
                read(configs[start:ahead])
            yield name

    work_ahead(inv, memo, letting_go(in_turn(), lambda config: forget(config) if config in at else None))
    memo.adopt_own()


def letting_go(units: Iterable[str], forget: Callable[[str], None]) -> Iterator[str]:
    """``units`` (each worked out before the next is asked for), each config's runs let go
    (``forget``) once the units of that config are: its facts, its recipe's predictions and
    confounds, which come one after another (:func:`ahead_units`, forwards or backwards).
    A process then holds the runs of the config it works on, not of every config it worked
    on (asked for again, they are read again)."""
    held: Optional[str] = None
    for name in units:
        config = unit_config(name)
        if held is not None and config != held:
            forget(held)
        held = config
        yield name
    if held is not None:
        forget(held)


def unit_config(unit: str) -> Optional[str]:
    """The config a unit is of: a config's facts, a recipe's predictions, confounds and shown runs (a
    recipe is named as its config, and its id holds no separator), else None."""
    kind, name = unit[:2], unit[2:]
    if kind == "p:":
        return name.partition("\x1f")[0]
    return name if kind in ("f:", "c:", "x:") else None


#: Configs whose runs :func:`work_through` reads in one go, at most; and about how many runs
#: (the first few configs of an investigation, its base and nightlies, may hold most of its runs).
_READ_AT_ONCE = 64
_READ_RUNS = 10_000


def _rests_on(runs: Sequence[str], confounded: set[str], configs: set[str],
              read: Optional[frozenset] = None, pools: Optional[dict[int, bool]] = None) -> bool:
    """Whether ``runs`` hold a confounded run (``configs``: the configs of those runs;
    ``read``: the only configs ``runs`` can be of, if known; ``pools``: what the pools among
    ``runs`` were found to hold, by the pool: each pool gone through once)."""
    if read is not None and read.isdisjoint(configs):
        return False
    if isinstance(runs, Chained):
        pools = {} if pools is None else pools
        for part, name in zip(runs.parts, runs.names):
            held = pools.get(id(part)) if name else None
            if held is None:
                held = _rests_on(part, confounded, configs)
                if name:
                    pools[id(part)] = held
            if held:
                return True
        return False
    if isinstance(runs, Keys):
        if len(configs) <= 16 and not runs.may_name(configs):
            return False
        if len(confounded) <= 16:  # a search of the text for each, not a split into thousands of keys
            return any(run in runs for run in confounded)
        return not confounded.isdisjoint(runs.passing())
    return not confounded.isdisjoint(runs)


def _first(entry: tuple) -> int:
    return entry[0]  # the place of its (first) run in the order recorded


def _key(inv: Investigation, ctx: Context) -> str:
    """What every piece of an evaluation rests on besides the runs it reads: the
    definitions, the references as resolved, and the engine's code."""
    return fingerprint((
        ctx.memo.code, *plain_of(inv).key, sorted((k, repr(v)) for k, v in inv.signatures.items()),
        repr(inv.exclusive), repr(ctx.refs), ctx.margin, ctx.warnings,
    ))
