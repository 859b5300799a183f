"""Renderers: one view model, three formats (markdown, JSON, text).

``build`` turns an evaluation into a plain, JSON-ready view model with stable
ordering; the markdown comes from Jinja templates, the text from rich tables.
"""

from __future__ import annotations

from typing import Any, Optional

from triage.render import jsonout
from triage.rules.stats import fmt

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
                      "run": "ran"}


RUN_REFS = 20  # the runs one piece of evidence or one bisect point names, then "+N more"
DEFAULT_RUNS = 50  # the newest runs the runs table shows unless ``--runs`` says otherwise


def build(bundle: Any, ev: Any, *, changes: Optional[dict] = None, since: Optional[dict] = None,
          similar: Optional[list] = None, runs_limit: Optional[int] = DEFAULT_RUNS) -> dict:
    """The view model every renderer reads.

    The runs table holds the newest ``runs_limit`` runs (None: all of them);
    ``runs_total`` says how many there are.

    ``since`` (from ``store.since_view``) adds the "new since" line;
    ``similar`` (from ``triage.rules.similar.find_similar``) the "Seen
    elsewhere" section.
    """
    from triage.render import pictures
    from triage.rules.engine import combined_command, num

    spec = bundle.spec
    runs = list(bundle.runs)
    url_of = {r.key: r.url for r in runs}
    recipes = {r.id: r for r in bundle.recipes}
    short = _shortener(spec.config_prefix)

    by_key = {r.key: r for r in runs}

    def split(key: str) -> tuple[str, str]:
        # By lookup first: a run id or config may itself hold a "/".
        run = by_key.get(key)
        if run is not None:
            return run.run_id, run.config
        run_id, _, config = key.partition("/")
        return run_id, config

    def run_ref(key: str) -> dict:
        run_id, config = split(key)
        return {"run_id": run_id, "config": config, "url": url_of.get(key)}

    def run_refs(keys: Any) -> list[dict]:
        # A list of runs shows the first RUN_REFS of them, then how many more.
        out = [run_ref(k) for k in keys[:RUN_REFS]]
        if len(keys) > RUN_REFS:
            out.append({"run_id": f"+{len(keys) - RUN_REFS:,} more", "config": "", "url": None})
        return out

    parents = {x.id: x.parent for x in bundle.hypotheses}
    titles = {h.id: h.title for h in bundle.hypotheses}
    hyps = []
    for h, tree in _tree(bundle.hypotheses):
        status = ev.statuses.get(h.id, "open")
        items = [e for e in ev.evidence if e.hypothesis == h.id]
        decisive = [e for e in items if e.counts and e.verdict in DECISIVE[status] and "invalid-run" not in e.flags]
        decisive = list({(e.verdict, e.summary): e for e in decisive}.values())
        uncounted = list(dict.fromkeys(k for e in items if "invalid-run" in e.flags for k in e.runs))
        not_counted = list(dict.fromkeys(f"{split(k)[0]} ({short(split(k)[1])})" for k in uncounted[:RUN_REFS]))
        if len(uncounted) > RUN_REFS:
            not_counted.append(f"+{len(uncounted) - RUN_REFS:,} more")
        hyps.append({
            "id": h.id,
            "title": h.title,
            "text": h.text,
            "parent": h.parent,
            "status": status,
            "status_word": STATUS_WORDS[status],
            "icon": STATUS_ICONS[status],
            "depth": _depth(h.id, parents),
            "tree": tree,
            "summary": [{"reason": e.summary or e.reason, "runs": run_refs(e.runs), "flags": list(e.flags),
                         "verdict": e.verdict} for e in decisive],
            "not_counted": not_counted,
            "evidence": [
                {
                    "run_id": split(e.runs[0])[0] if e.runs else None,
                    "config": split(e.runs[0])[1] if e.runs else None,
                    "runs": run_refs(e.runs),
                    "rule": e.rule,
                    "verdict": e.verdict,
                    "reason": e.reason,
                    "flags": list(e.flags),
                }
                for e in items
            ],
        })

    run_rows = []
    shown = sorted(runs, key=lambda r: (r.time or "", ))
    if runs_limit is not None:
        shown = shown[max(0, len(shown) - runs_limit):]
    for r in shown:
        recipe = recipes.get(r.config)
        if recipe is not None:
            change = recipe.change
        elif spec.base and r.config == spec.base:
            change = "base"
        else:
            change = ""
        other = ", ".join(f"{k}={num(v)}" for k, (v, _) in sorted(r.metrics.items()) if k != spec.metric)
        run_rows.append({
            "run_id": r.run_id,
            "config": r.config,
            "short": short(r.config),
            "status": r.status,
            "url": r.url,
            "time": r.time,
            "change": change,
            "value": _metric_text(r.metrics, spec.metric),
            "other_metrics": other,
            "reading": ev.readings.get(r.key, ""),
            "valid": r.key not in ev.invalid,
            "note": r.note,
            "excluded": r.excluded,
            "metrics": {k: ({"value": v, "n": n} if n else {"value": v}) for k, (v, n) in sorted(r.metrics.items())},
            "provenance": dict(sorted(r.provenance.items())),
        })

    refs = {}
    for name, (m, label) in ev.references.items():
        refs[name] = {"value": m.value if m else None, "n": m.n if m else None, "label": label}

    bisects = []
    for b in ev.bisects:
        view = {
            "id": b.id,
            "title": b.title,
            "axis": b.axis,
            "last_good": b.last_good,
            "first_bad": b.first_bad,
            "next": b.next,
            "remaining": list(b.remaining),
            "steps": b.steps,
            "ends": b.ends,
            "ends_ok": b.ends_ok,
            "done": b.done,
            "command": b.command,
            "points": [{"label": p.label, "state": p.state, "value": p.value, "runs": run_refs(p.runs),
                        "reason": p.reason} for p in b.points],
            "notes": list(b.notes),
        }
        view["strip"] = pictures.bisect_strip(view)
        view["text_strip"] = pictures.text_strip(view)
        bisects.append(view)
    suggestions = [
        {"recipe": s.recipe, "short": short(s.recipe), "tests": list(s.tests), "why": s.why, "command": s.command,
         "kind": s.kind, "state": s.state, "outcomes": list(s.outcomes), "advice": s.advice,
         "score": round(s.score, 3)}
        for s in ev.suggestions
    ]
    counts = {k: sum(1 for h in hyps if h["status"] == k) for k in STATUS_WORDS}
    next_level = [{"parent": p, "title": titles.get(p, p), "children": list(cs)} for p, cs in ev.next_level.items()]
    model = {
        "investigation": {
            "id": spec.id,
            "repo": spec.repo,
            "pr": spec.pr,
            "title": spec.title,
            "metric": spec.metric,
            "direction": spec.direction,
            "gate": spec.gate,
            "summary": spec.summary,
            "links": dict(spec.links),
        },
        "references": refs,
        "verdict": _verdict(hyps, counts, bisects, next_level, titles),
        "counts": counts,
        "hypotheses": hyps,
        "titles": titles,
        "experiments": _experiments(bundle, ev, run_ref, short),
        "runs": run_rows,
        "runs_total": len(runs),
        "bisects": bisects,
        "suggestions": suggestions,
        "command": combined_command(bundle, ev.suggestions),
        "untested": list(ev.untested),
        "next_level": next_level,
        "confounds": [{"run_id": c.run.partition("/")[0], "config": c.run.partition("/")[2], "recipe": c.recipe,
                       "key": c.key, "value": c.value, "base_value": c.base_value, "base_run": c.base_run,
                       "declared": c.declared} for c in ev.confounds],
        "similar": similar or [],
        "warnings": [{"kind": w.kind, "message": w.message} for w in ev.warnings],
        "changes": changes or {},
        "since": since,
        "shortened": None,  # set by render.fit: what was left out to fit GitHub's limit
        "marker": marker(spec.id),
    }
    model["series"] = pictures.metric_series(model)
    model["chart"] = pictures.metric_chart(model["series"])
    return model


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


def _experiments(bundle: Any, ev: Any, run_ref: Any, short: Any) -> list[dict]:
    """One row per recipe: what it changed, what its runs read, what it decided."""
    recipes = {r.id: r for r in bundle.recipes}
    run_config = {r.key: r.config for r in bundle.runs}
    values = {r.key: r.metrics.get(bundle.spec.metric) for r in bundle.runs}
    rows = []
    deciding = [e for e in ev.evidence if e.counts and e.verdict in VERDICT_WORDS and "invalid-run" not in e.flags]
    for st in ev.recipes:
        recipe = recipes[st.recipe]
        results = []
        for key in st.runs[:RUN_REFS]:
            value = values.get(key)
            invalid = ev.invalid.get(key)
            reading = invalid or ev.readings.get(key, "")
            text = f"{fmt(value[0])} ({reading})" if value and not invalid else reading
            results.append({"run": run_ref(key), "text": text, "valid": invalid is None})
        if len(st.runs) > RUN_REFS:
            more = {"run_id": f"+{len(st.runs) - RUN_REFS:,} more", "config": "", "url": None}
            results.append({"run": more, "text": "", "valid": True})
        decided: dict[str, dict] = {}
        valid = set(st.valid)
        for e in deciding:
            if valid.isdisjoint(e.runs):
                continue
            others = sorted({short(run_config[k]) for k in e.runs if k in run_config and run_config[k] != st.recipe})
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


def to_json(model: dict) -> str:
    """The JSON report: SPEC keys, stable order."""
    out = {
        "investigation": model["investigation"],
        "references": model["references"],
        "verdict": model["verdict"],
        "hypotheses": [
            {k: h[k] for k in ("id", "title", "parent", "status", "evidence")} for h in model["hypotheses"]
        ],
        "runs": [
            {
                "run_id": r["run_id"],
                "config": r["config"],
                "status": r["status"],
                "metrics": r["metrics"],
                "provenance": r["provenance"],
                "excluded": r["excluded"],
                "url": r["url"],
                "reading": r["reading"],
            }
            for r in model["runs"]
        ],
        "experiments": [
            {"recipe": x["recipe"], "state": x["state"], "runs": [r["run"]["run_id"] for r in x["results"]],
             "decided": [{k: d[k] for k in ("hypothesis", "verdict", "confounded")} for d in x["decided"]],
             "needed": x["needed"], "confounded": x["confounded"]}
            for x in model["experiments"]
        ],
        "bisects": [
            {k: b[k] for k in ("id", "axis", "last_good", "first_bad", "next", "remaining", "steps", "ends",
                               "ends_ok", "done", "command", "notes", "points")}
            for b in model["bisects"]
        ],
        "suggestions": [{k: s[k] for k in ("recipe", "kind", "tests", "score", "state", "why", "outcomes", "advice",
                                           "command")} for s in model["suggestions"]],
        "command": model["command"],
        "untested_hypotheses": model["untested"],
        "next_level": model["next_level"],
        "confounds": model["confounds"],
        "similar": model["similar"],
        "warnings": model["warnings"],
        "changes": model["changes"],
    }
    if model["since"] is not None:
        out["since"] = model["since"]
    if model.get("runs_total", 0) > len(model["runs"]):
        out["runs_total"] = model["runs_total"]
    return jsonout.dumps(out) + "\n"


def to_markdown(model: dict, templates: Optional[str] = None) -> str:
    """The PR comment, from ``report.md.j2``; always ends with the marker."""
    from triage.render.env import environment

    body = environment(templates).get_template("report.md.j2").render(**model)
    body = body.rstrip() + "\n"
    if not body.rstrip().endswith(model["marker"]):
        body += "\n" + model["marker"] + "\n"
    return body


def to_text(model: dict, width: int = 110, color: bool = False) -> str:
    """The terminal report: the same sections as rich tables."""
    from rich.table import Table
    from rich.text import Text

    from triage.render import pictures

    con, buf = _console(width, color)
    inv = model["investigation"]

    def heading(text: str) -> None:
        con.print(Text(text, style="bold underline"))

    con.print(Text(f"{inv['title']}  ({inv['repo']}#{inv['pr']})", style="bold"))
    con.print(_gate_line(model))
    if model["since"] is not None:
        con.print(Text(_since_line(model["since"]), style="italic"))
    con.print()
    heading("Verdict so far")
    for line in model["verdict"]:
        con.print(f"  {line}")
    con.print()
    t = Table(title="Elimination summary", title_justify="left", show_lines=False, expand=True)
    t.add_column("hypothesis", ratio=2)
    t.add_column("status", no_wrap=True)
    t.add_column("evidence", ratio=5)
    for h in model["hypotheses"]:
        reason = "\n".join(s["reason"] + (" (confounded)" if "confounded" in s["flags"] else "")
                           for s in h["summary"]) or "—"
        t.add_row(h["tree"] + h["title"], h["status_word"], reason)
    con.print(t)
    t = Table(title="Experiments", title_justify="left", expand=True)
    for col, ratio in (("recipe", 2), ("change vs base", 3), ("result", 3), ("decided", 3)):
        t.add_column(col, ratio=ratio)
    for x in model["experiments"]:
        t.add_row(x["short"], x["change"], _experiment_result(x, lambda r: r["run_id"]), _experiment_decided(x))
    con.print(t)
    series = model["series"]
    if series is not None:
        t = Table(title=f"{series['metric']} per run", title_justify="left", expand=False)
        t.add_column("run")
        t.add_column("config")
        t.add_column(series["metric"], justify="right")
        t.add_column(f"{fmt(series['min'])} … {fmt(series['max'])}", no_wrap=True)
        for bar in series["bars"]:
            t.add_row(bar["run_id"], bar["short"], fmt(bar["value"]), pictures.text_bar(bar["value"], series))
        con.print(t)
        con.print(f"  {pictures.text_legend(series)}")
        con.print()
    t = Table(title="Runs", title_justify="left", expand=True)
    for col in ("run", "config", "change vs base", inv["metric"], "reading"):
        t.add_column(col)
    for r in model["runs"]:
        reading = r["reading"]
        if not r["value"] and r["other_metrics"] and r["valid"]:
            reading = r["other_metrics"]
        t.add_row(r["run_id"], r["short"], r["change"] or "", r["value"] or "—", reading)
    con.print(t)
    if model.get("runs_total", 0) > len(model["runs"]):
        con.print(f"  the newest {len(model['runs']):,} of {model['runs_total']:,} runs; --runs all shows them all")
    for b in model["bisects"]:
        _bisect_text(con, b)
    if model["suggestions"] or model["untested"] or model["next_level"]:
        heading("Suggested next")
        for i, s in enumerate(model["suggestions"], 1):
            con.print(f"  {i}. {s['short']}: {s['state']}" + (f"; decides {', '.join(s['tests'])}" if s["tests"] else "")
                      + ("" if s["command"] else " (no run: template: start it by hand)"))
            for o in s["outcomes"]:
                con.print(f"       {o}")
            if s["advice"]:
                con.print(f"       {s['advice']}")
        if model["command"]:
            con.print("  run them:")
            for line in model["command"].splitlines():
                con.print(f"    {line}", soft_wrap=True)
        for line in _untested_lines(model):
            con.print(f"  {line}")
        con.print()
    if model["similar"]:
        heading("Seen elsewhere")
        for x in model["similar"]:
            con.print(f"  {x['hypothesis']}:")
            _similar_lines(con, x)
        con.print()
    if model["warnings"]:
        heading("Warnings")
        for w in model["warnings"]:
            con.print(f"  [{w['kind']}] {w['message']}")
    return buf.getvalue()


def _console(width: int, color: bool = False) -> tuple[Any, Any]:
    from io import StringIO

    from rich.console import Console

    buf = StringIO()
    # markup=False: run names, configs and bisect strips ("[good]") are text, never rich markup
    con = Console(file=buf, width=width, color_system="auto" if color else None, force_terminal=color,
                  highlight=False, emoji=False, markup=False)
    return con, buf


def _bisect_text(con: Any, b: dict) -> None:
    from rich.table import Table
    from rich.text import Text

    from triage.render import pictures

    con.print(Text(f"Bisect {b['title']} ({b['axis']})", style="bold"))
    con.print(f"  ends: {b['ends']}")
    con.print(f"  {b['text_strip']}")
    bt = Table(show_header=True, expand=False)
    bt.add_column("point")
    bt.add_column("state")
    bt.add_column("why")
    for p in b["points"]:
        bt.add_row(p["label"], pictures.TEXT_MARKS.get(p["state"], p["state"]), p["reason"])
    con.print(bt)
    con.print(f"  {_bisect_line(b)}")
    for note in b["notes"]:
        con.print(f"  note: {note}")
    if b["command"]:
        con.print("  run the next point:")
        con.print(f"    {b['command']}", soft_wrap=True)
    con.print()


def bisects_to_text(model: dict, width: int = 110, color: bool = False) -> str:
    """Only the bisect sections of the terminal report (``triage bisect``)."""
    con, buf = _console(width, color)
    for b in model["bisects"]:
        _bisect_text(con, b)
    return buf.getvalue()


def _experiment_result(x: dict, link: Any) -> str:
    if not x["results"]:
        return x["state_word"]
    text = "; ".join(f"{link(r['run'])}: {r['text']}" for r in x["results"])
    if x["needed"]:
        text += "; would be decided by " + " and ".join(x["needed"])
    return text


def _experiment_decided(x: dict) -> str:
    if not x["decided"]:
        return "nothing" + (f" ({x['state_word']})" if x["state"] != "run" else "")
    return "; ".join(f"{d['hypothesis']} {d['word']}" + (f" (with {', '.join(d['with'])})" if d["with"] else "")
                     + (" (confounded)" if d["confounded"] else "") for d in x["decided"])


def _bisect_line(b: dict) -> str:
    head = f"last good: {b['last_good'] or '—'}   first bad: {b['first_bad'] or '—'}"
    if b["done"]:
        return head + "   (adjacent: the first bad point is found)"
    return head + f"   untested between: {len(b['remaining'])}   next: {b['next'] or '—'}" + (
        f"   ~{b['steps']} step(s) left" if b["next"] else "")


def _untested_lines(model: dict) -> list[str]:
    level = {c: x for x in model["next_level"] for c in x["children"]}
    lines = []
    plain = [h for h in model["untested"] if h not in level]
    if plain:
        lines.append("No recipe tests yet: " + ", ".join(plain) + ".")
    for x in model["next_level"]:
        missing = [c for c in x["children"] if c in model["untested"]]
        if missing:
            lines.append(f"Next level under confirmed {x['parent']}, no recipe tests yet: " + ", ".join(missing) + ".")
    return lines


def _similar_lines(con: Any, x: dict) -> None:
    con.print(f"    {x['score']:.0f}%  {x['repo']}#{x['pr']} {x['other_id']}: {x['other_title']} "
              f"({STATUS_WORDS.get(x['status'], x['status'])} there)")
    for d in x["decided_by"]:
        what = d["recipe"] or d["rule"]
        change = f" ({d['change']})" if d.get("change") else ""
        con.print(f"          {what}{change}: {VERDICT_WORDS.get(d['verdict'], d['verdict'])} — {d['reason']}")


def similar_to_text(targets: list, matches: list[dict], min_score: float, width: int = 110) -> str:
    """``triage similar``: each hypothesis asked about, then its matches elsewhere."""
    from rich.text import Text

    con, buf = _console(width)
    for h in targets:
        con.print(Text(f"{h.id}: {h.title}", style="bold"))
        mine = [x for x in matches if x["hypothesis"] == h.id]
        if not mine:
            con.print(f"    nothing scoring ≥ {min_score:g} in the other investigations")
        for x in mine:
            _similar_lines(con, x)
    return buf.getvalue()


def _since_line(since: dict) -> str:
    def names(items: list[str]) -> str:
        more = f" and {len(items) - 10} more" if len(items) > 10 else ""
        return ", ".join(items[:10]) + more

    runs, updated = since["runs"], since["updated"]
    text = f"New since {since['label']}: {len(runs)} run(s)" + (f" ({names(runs)})" if runs else "")
    if updated:
        text += f", {len(updated)} updated ({names(updated)})"
    if since["changes"]:
        text += "; status changes: " + ", ".join(
            f"{c['hypothesis']} {STATUS_WORDS.get(c['previous'] or '', 'new')} → {STATUS_WORDS.get(c['status'], c['status'])}"
            for c in since["changes"])
    else:
        text += "; no status changed"
    return text + "."


def _gate_line(model: dict) -> str:
    inv = model["investigation"]
    bits = []
    if inv["gate"] is not None:
        op = "≥" if inv["direction"] == "higher" else "≤"
        bits.append(f"gate: {inv['metric']} {op} {fmt(inv['gate'])}")
    else:
        bits.append(f"metric: {inv['metric']} ({inv['direction']} is better)")
    for name, ref in model["references"].items():
        bits.append(ref["label"])
    return " · ".join(bits)
