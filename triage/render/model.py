"""The view model every renderer reads: :func:`build` turns an evaluation into a
plain, JSON-ready dict with stable ordering, in steps (the hypotheses, the runs,
the bisects, the suggestions, the experiments), and the words and limits it uses.
"""

from __future__ import annotations

from typing import Any, Collection, Optional

from triage.render.runs import runs_of
from triage.rules.engine.keys import configs_of as configs_named
from triage.rules.engine.keys import meets
from triage.rules.decisions.stats import fmt

MARKER_PREFIX = "<!-- triage:investigation="
COMMENT_LIMIT = 65536

STATUS_WORDS = {
    "confirmed": "confirmed",
    "ruled_out": "ruled out",
    "inconclusive": "inconclusive",
    "conflicting": "conflicting",
    "open": "open",
}
STATUS_ICONS = {
    "confirmed": "✅",
    "ruled_out": "❌",
    "inconclusive": "❔",
    "conflicting": "⚠️",
    "open": "⬜",
}
STATUS_ORDER = ("confirmed", "conflicting", "inconclusive", "open", "ruled_out")
# The evidence the elimination summary shows for each status.
DECISIVE = {"ruled_out": ("rules_out",), "confirmed": ("confirms",), "conflicting": ("rules_out", "confirms"),
            "inconclusive": ("supports", "inconclusive"), "open": ("supports",)}


def marker(investigation_id: str) -> str:
    """The hidden marker that names the investigation a comment belongs to."""
    safe = "".join(c for c in investigation_id if c.isalnum() or c in "-_.+")
    return f"{MARKER_PREFIX}{safe} -->"


def _metric_text(metrics: dict, name: str) -> Optional[str]:
    if name not in metrics:
        return None
    value, n = metrics[name]
    return fmt(value) + (f" (n={n})" if n else "")


VERDICT_WORDS = {"rules_out": "ruled out", "confirms": "confirmed", "supports": "supported"}
RECIPE_STATE_WORDS = {"never-run": "not run yet", "no-valid-run": "no valid run", "cant-tell": "can't tell",
                      "waiting": "waiting for base",
                      "run": "ran"}


RUN_REFS = 20  # the runs one piece of evidence or one bisect point names, then "+N more"
DEFAULT_RUNS = 50  # the newest runs the runs table shows unless ``--runs`` says otherwise
#: Confounded runs the JSON lists (each run of a recipe whose provenance differs from its
#: base is one); the warnings say each difference once, with its count.
CONFOUNDS_SHOWN = 50


#: The view's long lists: each is stored as a part of its own (:mod:`triage.kb.snapshot`), and
#: one made of what the stored one was made of is kept, not built again (:mod:`triage.render.basis`).
LONG = ("hypotheses", "experiments", "bisects", "warnings", "engine_warnings")


class Kept:
    """A long list of the view left as it is stored, not built (``build(keep=...)``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Kept({self.name!r})"


def build(bundle: Any, ev: Any, *, changes: Optional[dict] = None, since: Optional[dict] = None,
          similar: Optional[list] = None, runs_limit: Optional[int] = DEFAULT_RUNS,
          keep: Collection[str] = ()) -> dict:
    """The view model every renderer reads.

    The runs table holds the newest ``runs_limit`` runs (None: all of them);
    ``runs_total`` says how many there are.  The long lists named in ``keep``
    (of :data:`LONG`) are left as the stored view holds them: :class:`Kept`
    stands for each.

    ``since`` (from ``store.since_view``) adds the "new since" line;
    ``similar`` (from ``triage.rules.next.similar.find_similar``) the "Seen
    elsewhere" section.  ``dispatched`` (what autopilot started) is left empty:
    it changes without the runs, so the caller fills it on every report
    (:func:`dispatch_lines`).
    """
    from triage.render import digest, pictures
    from triage.rules.engine.evaluate import combined_command

    spec = bundle.spec
    index = runs_of(bundle)
    short = _shortener(spec.config_prefix)
    shown = index.newest(runs_limit)
    made = {name for name in LONG if name not in keep}
    _prefetch(index, bundle, ev, shown, made)
    refs = _RunRefs(index)
    recipes = {r.id: r for r in bundle.recipes}
    titles = {h.id: h.title for h in bundle.hypotheses}
    hyps = _hypotheses(bundle, ev, refs, short) if "hypotheses" in made else _statuses(bundle, ev)
    bisects = _bisects(ev, refs, pictures) if "bisects" in made else _bisect_ends(ev, refs, {r.key for r in shown})
    counts = {k: sum(1 for h in hyps if h["status"] == k) for k in STATUS_WORDS}
    if "hypotheses" in made:
        # The ruled-out rows of the elimination summary are folded: each row's tree
        # prefix is drawn among the rows shown with it.
        trees = digest.group_trees(list(bundle.hypotheses), {h["id"] for h in hyps if h["status"] == "ruled_out"})
        for h in hyps:
            h["group_tree"] = trees.get(h["id"], "")
    next_level = [{"parent": p, "title": titles.get(p, p), "children": list(cs)} for p, cs in ev.next_level.items()]
    model = {
        "investigation": _investigation(spec),
        "references": {name: {"value": m.value if m else None, "n": m.n if m else None, "label": label}
                       for name, (m, label) in ev.references.items()},
        "verdict": _verdict(hyps, counts, bisects, next_level, titles),
        "headline": digest.headline(hyps, next_level, index.total(), not ev.suggestions and not ev.untested),
        "counts": counts,
        "hypotheses": hyps if "hypotheses" in made else Kept("hypotheses"),
        "titles": titles,
        "experiments": _experiments(bundle, ev, short, index) if "experiments" in made else Kept("experiments"),
        "runs": [_run_row(r, spec, recipes, ev, short) for r in shown],
        "runs_total": index.total(),
        "bisects": bisects if "bisects" in made else Kept("bisects"),
        "suggestions": [_suggestion(s, short) for s in ev.suggestions],
        "command": combined_command(bundle, ev.suggestions),
        "suggestions_shown": digest.SHOWN_SUGGESTIONS,
        **digest.suggested(bundle, list(ev.suggestions), combined_command),
        "untested": list(ev.untested),
        "dispatched": [],  # what autopilot started, in words: dispatch_lines(), filled by the caller
        "next_level": next_level,
        "confounds": [_confound(c) for c in ev.confounds[:CONFOUNDS_SHOWN]],
        "confounds_total": len(ev.confounds),
        "similar": similar or [],
        # grouped for reading (each thing said once); JSON keeps the engine's list
        "warnings": (digest.group_warnings(list(ev.warnings), index, dict(getattr(bundle, "signatures", {}) or {}),
                                           short, tuple(s.advice for s in ev.suggestions if s.advice))
                     if "warnings" in made else Kept("warnings")),
        "engine_warnings": ([{"kind": w.kind, "message": w.message} for w in ev.warnings]
                            if "engine_warnings" in made else Kept("engine_warnings")),
        "changes": changes or {},
        "since": since,
        "shortened": None,  # set by render.fit: what was left out to fit GitHub's limit
        "marker": marker(spec.id),
        "subjects": _subjects(ev),
    }
    model["series"] = pictures.metric_series({**model, "bisects": bisects})
    model["chart"] = pictures.metric_chart(model["series"])
    return model


def _prefetch(index: Any, bundle: Any, ev: Any, shown: list, made: set[str]) -> None:
    """Look up together the runs the lists to make (``made``) and the runs table read."""
    # the runs the view reads (a recipe's results, the warnings'), whole; those it only names, by name
    if "warnings" in made:
        index.prefetch(index.warned(w.message for w in ev.warnings))
    if "experiments" in made:  # a recipe's runs shown: its state holds them
        index.named_as(row[:4] for st in ev.recipes for row in st.shown)
    if "hypotheses" in made or "bisects" in made:
        index.prefetch_refs(_named(bundle, ev, "hypotheses" in made, "bisects" in made))
    prime = getattr(ev.readings, "prime", None)
    if prime is not None:  # the runs the view asks readings of, at hand
        prime(shown)
        prime(index.fetched())
    expect = getattr(ev.readings, "expect_notes", None)
    if expect is not None:  # and what their confounds add, looked up together
        expect([r.key for r in shown] + ([row[0] for st in ev.recipes for row in st.shown]
                                         if "experiments" in made else []))


def _statuses(bundle: Any, ev: Any) -> list[dict]:
    """Each hypothesis's id, title and status, in tree order: what the verdict and the
    headline read of the hypotheses (when their list is kept)."""
    return [{"id": h.id, "title": h.title, "status": ev.statuses.get(h.id, "open")}
            for h, _ in _tree(bundle.hypotheses)]


def _bisect_ends(ev: Any, refs: _RunRefs, shown: set[str]) -> list[dict]:
    """What the verdict and the chart read of each bisect (when their list is kept): its
    ends and next point, and of the runs each point names those of the runs table (``shown``,
    their keys), which the chart puts at their point."""
    return [{"title": b.title, "last_good": b.last_good, "first_bad": b.first_bad, "next": b.next,
             "points": [{"label": p.label, "runs": [_named_run(k, refs) for k in p.runs[:RUN_REFS] if k in shown]}
                        for p in b.points]} for b in ev.bisects]


def _named_run(key: str, refs: _RunRefs) -> dict:
    """A run as a list of runs names it, less its URL: a key of one "/" splits one way."""
    if key.count("/") == 1:
        run_id, _, config = key.partition("/")
    else:
        run_id, config = refs.split(key)
    return {"run_id": run_id, "config": config}


class _RunRefs:
    """Runs named by their keys ("RUN_ID/CONFIG"), as the view shows them.  Each run's entry
    is made once and shared by the lists that name it (thousands of pieces of evidence
    name a few thousand runs, many of them the same first ones); nothing changes an entry
    of a view once built (:mod:`triage.render.fit` copies what it shortens)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self._refs: dict[str, dict] = {}
        self._lists: dict[tuple, list[dict]] = {}

    def split(self, key: str) -> tuple[str, str]:
        # By lookup first: a run id or config may itself hold a "/".
        found = self.index.ref(key)
        if found is not None:
            return found[0], found[1]
        run_id, _, config = key.partition("/")
        return run_id, config

    def run_ref(self, key: str) -> dict:
        ref = self._refs.get(key)
        if ref is not None:
            return ref
        found = self.index.ref(key)  # as split() says, looked up once
        if found is not None:
            ref = {"run_id": found[0], "config": found[1], "url": found[2]}
        else:
            run_id, _, config = key.partition("/")
            ref = {"run_id": run_id, "config": config, "url": None}
        self._refs[key] = ref
        return ref

    def run_refs(self, keys: Any) -> list[dict]:
        # A list of runs shows the first RUN_REFS of them, then how many more.
        head = tuple(keys[:RUN_REFS])
        made = self._lists.get((len(keys), head))
        if made is None:
            made = self._lists[(len(keys), head)] = [self.run_ref(k) for k in head]
            if len(keys) > RUN_REFS:
                made.append({"run_id": f"+{len(keys) - RUN_REFS:,} more", "config": "", "url": None})
        return list(made)


def _investigation(spec: Any) -> dict:
    return {"id": spec.id, "repo": spec.repo, "pr": spec.pr, "title": spec.title, "metric": spec.metric,
            "direction": spec.direction, "gate": spec.gate, "summary": spec.summary, "links": dict(spec.links)}


def _hypotheses(bundle: Any, ev: Any, refs: _RunRefs, short: Any) -> list[dict]:
    """One row per hypothesis, in tree order, with its evidence and what decided it."""
    parents = {x.id: x.parent for x in bundle.hypotheses}
    of: dict[str, list] = {}  # each hypothesis's evidence, in the evaluation's order
    for e in ev.evidence:
        of.setdefault(e.hypothesis, []).append(e)
    hyps = []
    for h, tree in _tree(bundle.hypotheses):
        status = ev.statuses.get(h.id, "open")
        items = of.get(h.id, [])
        decisive = [e for e in items if e.counts and e.verdict in DECISIVE[status] and "invalid-run" not in e.flags]
        decisive = list({(e.verdict, e.summary): e for e in decisive}.values())
        hyps.append({
            "id": h.id, "title": h.title, "text": h.text, "parent": h.parent,
            "status": status, "status_word": STATUS_WORDS[status], "icon": STATUS_ICONS[status],
            "depth": _depth(h.id, parents),
            "tree": tree,
            "summary": [{"reason": e.summary or e.reason, "full": e.reason, "runs": refs.run_refs(e.runs),
                         "flags": list(e.flags), "verdict": e.verdict} for e in decisive],
            "not_counted": _not_counted(items, refs, short),
            "evidence": [_evidence(e, refs, short, decisive) for e in items],
        })
    return hyps


def _not_counted(items: list, refs: _RunRefs, short: Any) -> list[str]:
    """The runs that decided nothing (invalid), each "RUN_ID (configs)", then how many more."""
    uncounted = list(dict.fromkeys(k for e in items if "invalid-run" in e.flags for k in e.runs))
    skipped: dict[str, list[str]] = {}  # run id -> its configs, in order
    for k in uncounted[:RUN_REFS]:
        skipped.setdefault(refs.split(k)[0], []).append(short(refs.split(k)[1]))
    out = [f"{run_id} ({', '.join(configs)})" for run_id, configs in skipped.items()]
    if len(uncounted) > RUN_REFS:
        out.append(f"+{len(uncounted) - RUN_REFS:,} more")
    return out


def _evidence(e: Any, refs: _RunRefs, short: Any, decisive: list) -> dict:
    run_id, config = refs.split(e.runs[0]) if e.runs else (None, None)
    return {
        "run_id": run_id,
        "config": config,
        "runs": refs.run_refs(e.runs),
        "rule": e.rule,
        "verdict": e.verdict,
        "reason": e.reason,
        "flags": list(e.flags),
        # for the comment: the rule with the config prefix dropped, and whether
        # the elimination summary already shows this item (by its identity)
        "rule_short": _short_rule(e.rule, short),
        "in_summary": any(e is d for d in decisive),
        "numbers": _numbers(e),
    }


def _run_row(r: Any, spec: Any, recipes: dict, ev: Any, short: Any) -> dict:
    """One row of the runs table."""
    from triage.rules.decisions.readings import invalid_word
    from triage.rules.engine.evaluate import num

    recipe = recipes.get(r.config)
    change = recipe.change if recipe is not None else ("base" if spec.base and r.config == spec.base else "")
    has = spec.metric in r.metrics
    return {
        "run_id": r.run_id,
        "config": r.config,
        "short": short(r.config),
        "status": r.status,
        "url": r.url,
        "time": r.time,
        "change": change,
        "value": _metric_text(r.metrics, spec.metric),
        "value_only": fmt(r.metrics[spec.metric][0]) if has else None,
        "n": r.metrics[spec.metric][1] if has else None,
        # a known failure by its name (the Warnings explain it); an exclusion with its reason
        "brief": (ev.readings.get(r.key, "") if r.excluded
                  else _brief(None, None if ev.invalid.get(r.key) is None else invalid_word(r),
                                ev.readings.get(r.key, ""))),
        "other_metrics": ", ".join(f"{k}={num(v)}" for k, (v, _) in sorted(r.metrics.items()) if k != spec.metric),
        "reading": ev.readings.get(r.key, ""),
        "valid": r.key not in ev.invalid,
        "note": r.note,
        "excluded": r.excluded,
        "metrics": {k: ({"value": v, "n": n} if n else {"value": v}) for k, (v, n) in sorted(r.metrics.items())},
        "provenance": dict(sorted(r.provenance.items())),
    }


def _bisects(ev: Any, refs: _RunRefs, pictures: Any) -> list[dict]:
    out = []
    for b in ev.bisects:
        view = {
            "id": b.id, "title": b.title, "axis": b.axis,
            "last_good": b.last_good, "first_bad": b.first_bad, "next": b.next,
            "remaining": list(b.remaining), "steps": b.steps,
            "ends": b.ends, "ends_ok": b.ends_ok, "done": b.done, "command": b.command,
            "points": [{"label": p.label, "state": p.state, "value": p.value, "runs": refs.run_refs(p.runs),
                        "reason": p.reason} for p in b.points],
            "notes": list(b.notes),
        }
        view["strip"] = pictures.bisect_strip(view)
        view["text_strip"] = pictures.text_strip(view)
        out.append(view)
    return out


def _suggestion(s: Any, short: Any) -> dict:
    return {"recipe": s.recipe, "short": short(s.recipe), "tests": list(s.tests), "why": s.why, "command": s.command,
            "kind": s.kind, "state": s.state, "outcomes": list(s.outcomes), "advice": s.advice,
            "score": round(s.score, 3)}


def _confound(c: Any) -> dict:
    return {"run_id": c.run.partition("/")[0], "config": c.run.partition("/")[2], "recipe": c.recipe,
            "key": c.key, "value": c.value, "base_value": c.base_value, "base_run": c.base_run,
            "declared": c.declared}


def _subjects(ev: Any) -> Optional[dict]:
    """With subjects: one table, a row per subject, a column per config (a bisect point apart)."""
    t = getattr(ev, "subjects", None)
    if t is None:
        return None
    return {"key": t.key, "columns": list(t.columns),
            "rows": [{"subject": name, "cells": list(cells)} for name, cells in t.rows]}


def _tree(hypotheses: list) -> list[tuple[Any, str]]:
    """Hypotheses in tree order (children right under their parent, in file
    order) with the prefix that draws the tree: ``├─ ``, ``└─ ``, ``│  ``."""
    ids = {h.id for h in hypotheses}
    children: dict[Optional[str], list] = {}
    for h in hypotheses:
        children.setdefault(h.parent if h.parent in ids else None, []).append(h)
    out: list[tuple[Any, str]] = []
    nbsp = "\u00a0"  # spaces that a markdown table cell keeps

    def walk(parent: Optional[str], lead: str) -> None:
        kids = children.get(parent, [])
        for i, h in enumerate(kids):
            last = i == len(kids) - 1
            prefix = "" if parent is None else lead + ("└─" if last else "├─") + nbsp
            out.append((h, prefix))
            if len(out) <= len(hypotheses):  # a cycle is refused by the loader; never loop here
                walk(h.id, "" if parent is None else lead + ((nbsp * 3) if last else "│" + nbsp * 2))

    walk(None, "")
    return out


def _named(bundle: Any, ev: Any, evidence: bool = True, bisects: bool = True) -> list[str]:
    """The keys of the runs a view names: the first RUN_REFS behind each piece of
    evidence and bisect point, and every run manual evidence names (the Experiments
    table asks each one's config).  A recipe's first runs come with its state."""
    keys: list[str] = []
    for e in ev.evidence if evidence else ():  # a manual item may name runs that are not (or no longer) there
        keys += e.runs if e.rule == "manual" else e.runs[:RUN_REFS]
    for b in ev.bisects if bisects else ():
        for p in b.points:
            keys += p.runs[:RUN_REFS]
    return keys


def _experiments(bundle: Any, ev: Any, short: Any, index: Any) -> list[dict]:
    """One row per recipe: what it changed, what its runs read, what it decided."""
    recipes = {r.id: r for r in bundle.recipes}
    rows = []
    deciding = [e for e in ev.evidence if e.counts and e.verdict in VERDICT_WORDS and "invalid-run" not in e.flags]
    configs: dict[int, set[str]] = {}  # an item's runs' configs, once: recipes share the items of a pooled config

    def configs_of(e: Any) -> set[str]:
        found = configs.get(id(e))
        if found is None:
            found = configs[id(e)] = index.configs_of(e.runs)
        return found

    by_config: dict[str, list] = {}  # the deciding items by the configs their runs may be of, in order
    for e in deciding:
        for config in configs_named(e.runs):
            by_config.setdefault(config, []).append(e)
    for st in ev.recipes:
        recipe = recipes[st.recipe]
        results = _shown_results(st, ev.readings.note)
        decided: dict[str, dict] = {}
        valid = set(st.valid)
        for e in by_config.get(st.recipe, ()):  # its valid runs are runs of its config
            if not meets(e.runs, valid):  # its own runs first: found without going through the rest
                continue
            others = sorted({short(c) for c in configs_of(e) if c != st.recipe})
            row = decided.setdefault(e.hypothesis, {"hypothesis": e.hypothesis, "verdict": e.verdict,
                                                    "word": VERDICT_WORDS[e.verdict], "with": others,
                                                    "confounded": "confounded" in e.flags})
            if e.verdict in ("rules_out", "confirms") and row["verdict"] == "supports":
                row.update(verdict=e.verdict, word=VERDICT_WORDS[e.verdict])
        rows.append({
            "recipe": st.recipe,
            "short": short(st.recipe),
            "change": recipe.change,
            "state": st.state,
            "state_word": RECIPE_STATE_WORDS[st.state],
            "why": st.why,
            "needed": list(st.needed),
            "results": results,
            "decided": list(decided.values()),
            "confounded": list(st.confounded),
        })
    return rows


def _shown_results(st: Any, note: Any) -> list[dict]:
    """A recipe's first runs as its row shows them (its state's shown runs, kept with the
    evaluation: no run is read here), each reading with what its confounds add; then how
    many more runs there are."""
    results = []
    for key, run_id, config, url, value, plain, invalid, word in st.shown:
        added = note(key)
        reading = invalid or ((f"{plain}; {added}" if plain else added) if added else plain)
        valid = value is not None and not invalid
        text = (fmt(value) + (f" ({reading})" if reading else "")) if valid else reading
        results.append({"run": {"run_id": run_id, "config": config, "url": url}, "text": text,
                        "valid": invalid is None, "brief": _brief(value, word, reading)})
    if len(st.runs) > len(st.shown):
        more = {"run_id": f"+{len(st.runs) - len(st.shown):,} more", "config": "", "url": None}
        results.append({"run": more, "text": "", "valid": True, "brief": ""})
    return results


def _brief(value: Optional[float], word: Optional[str], reading: str) -> str:
    """A run's result in a word or two, for the Experiments table (the runs table
    has its whole reading, the Warnings a known failure's meaning and remedy): ``word``
    for a run that decides nothing (:func:`invalid_word`), else its value."""
    if word is not None:
        return word
    if value is not None:
        return fmt(value) + ("; confounded" if "confounded" in reading else "")
    return reading


def _numbers(e: Any) -> Optional[str]:
    """The comparisons behind an item (what follows the last " — " of its
    reason), or None when its reason says no more than its summary."""
    if e.reason == (e.summary or e.reason):
        return None
    return e.reason.rsplit(" — ", 1)[1] if " — " in e.reason else e.reason


def _short_rule(rule: str, short: Any) -> str:
    """``predicts:<recipe>`` with the recipe's config prefix dropped."""
    kind, sep, recipe = rule.partition(":")
    return f"{kind}:{short(recipe)}" if sep and kind == "predicts" else rule


EVIDENCE_KEYS = ("run_id", "config", "runs", "rule", "verdict", "reason", "flags")
def dispatch_lines(rows: Any) -> list[str]:
    """What autopilot started (``Dispatch`` rows), one line each, for the comment."""
    return [_dispatch_line(d) for d in rows]


def _dispatch_line(d: Any) -> str:
    """One run autopilot started (a ``Dispatch`` row), in words."""
    text = f"started {d.inputs.get('configs') or d.suggestion}" + (f" at {d.point}" if d.point else "") + f": {d.reason}"
    state = "recorded" if d.done_at else "in flight"
    return text + (f" (run {d.run_id}, {state})" if d.run_id else f" ({state})")


def _shortener(prefix: Optional[str]) -> Any:
    def short(config: str) -> str:
        if prefix and config.startswith(prefix) and len(config) > len(prefix):
            return config[len(prefix):]
        return config

    return short


def _depth(hid: str, parents: dict) -> int:
    d, cur = 0, parents.get(hid)
    while cur is not None and d < 20:
        d, cur = d + 1, parents.get(cur)
    return d


def _verdict(hyps: list[dict], counts: dict, bisects: list[dict], next_level: list[dict],
             titles: dict) -> list[str]:
    """Plain sentences: what is known so far, most decisive first."""
    lines = []
    confirmed = [h for h in hyps if h["status"] == "confirmed"]
    for h in confirmed:
        lines.append(f"Confirmed: {h['title']}.")
    for level in next_level:
        lines.append(f"Next level under {level['title']}: " + "; ".join(titles.get(c, c) for c in level["children"])
                     + ".")
    for b in bisects:
        if b["last_good"] and b["first_bad"]:
            lines.append(f"Bisect {b['title']}: last good {b['last_good']}, first bad {b['first_bad']}"
                         + (f"; next {b['next']}." if b["next"] else "."))
    conflicting = [h["title"] for h in hyps if h["status"] == "conflicting"]
    if conflicting:
        lines.append("Conflicting evidence: " + "; ".join(conflicting) + ".")
    out = [h["title"] for h in hyps if h["status"] == "ruled_out"]
    if out:
        lines.append(f"Ruled out ({len(out)} of {len(hyps)}): " + "; ".join(out) + ".")
    inc = [h["title"] for h in hyps if h["status"] == "inconclusive"]
    if inc:
        lines.append("Inconclusive: " + "; ".join(inc) + ".")
    level = {c for x in next_level for c in x["children"]}
    still = [h["title"] for h in hyps if h["status"] == "open" and h["id"] not in level]
    if still:
        lines.append("Still open: " + "; ".join(still) + ".")
    return lines


# --------------------------------------------------------------------------
# Formats
