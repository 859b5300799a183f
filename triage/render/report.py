"""Renderers: one view model, three formats (markdown, JSON, text).

``build`` turns an evaluation into a plain, JSON-ready view model with stable
ordering; the markdown comes from Jinja templates, the text from rich tables.
"""

from __future__ import annotations

import json
from typing import Any, Optional

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


def build(bundle: Any, ev: Any, *, changes: Optional[dict] = None, since: Optional[dict] = None) -> dict:
    """The view model every renderer reads."""
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

    hyps = []
    titles = {h.id: h.title for h in bundle.hypotheses}
    for h in bundle.hypotheses:
        status = ev.statuses.get(h.id, "open")
        items = [e for e in ev.evidence if e.hypothesis == h.id]
        decisive = [e for e in items if e.counts and e.verdict in DECISIVE[status] and "invalid-run" not in e.flags]
        decisive = list({(e.verdict, e.summary): e for e in decisive}.values())
        not_counted = list(dict.fromkeys(
            f"{split(k)[0]} ({short(split(k)[1])})" for e in items if "invalid-run" in e.flags for k in e.runs))
        hyps.append({
            "id": h.id,
            "title": h.title,
            "text": h.text,
            "parent": h.parent,
            "status": status,
            "status_word": STATUS_WORDS[status],
            "icon": STATUS_ICONS[status],
            "depth": _depth(h.id, {x.id: x.parent for x in bundle.hypotheses}),
            "summary": [{"reason": e.summary or e.reason, "runs": [run_ref(k) for k in e.runs], "flags": list(e.flags),
                         "verdict": e.verdict} for e in decisive],
            "not_counted": not_counted,
            "evidence": [
                {
                    "run_id": split(e.runs[0])[0] if e.runs else None,
                    "config": split(e.runs[0])[1] if e.runs else None,
                    "runs": [run_ref(k) for k in e.runs],
                    "rule": e.rule,
                    "verdict": e.verdict,
                    "reason": e.reason,
                    "flags": list(e.flags),
                }
                for e in items
            ],
        })

    run_rows = []
    for r in sorted(runs, key=lambda r: (r.time or "", )):
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
            "note": r.note,
            "excluded": r.excluded,
            "metrics": {k: ({"value": v, "n": n} if n else {"value": v}) for k, (v, n) in sorted(r.metrics.items())},
            "provenance": dict(sorted(r.provenance.items())),
        })

    refs = {}
    for name, (m, label) in ev.references.items():
        refs[name] = {"value": m.value if m else None, "n": m.n if m else None, "label": label}

    bisects = [
        {
            "id": b.id,
            "title": b.title,
            "axis": b.axis,
            "last_good": b.last_good,
            "first_bad": b.first_bad,
            "next": b.next,
            "remaining": list(b.remaining),
            "steps": b.steps,
            "points": [{"label": p.label, "state": p.state, "runs": [run_ref(k) for k in p.runs], "reason": p.reason}
                       for p in b.points],
            "notes": list(b.notes),
        }
        for b in ev.bisects
    ]
    suggestions = [
        {"recipe": s.recipe, "tests": list(s.tests), "why": s.why, "command": s.command, "kind": s.kind}
        for s in ev.suggestions
    ]
    counts = {k: sum(1 for h in hyps if h["status"] == k) for k in STATUS_WORDS}
    verdict = _verdict(hyps, counts, bisects)
    return {
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
        "verdict": verdict,
        "counts": counts,
        "hypotheses": hyps,
        "titles": titles,
        "runs": run_rows,
        "bisects": bisects,
        "suggestions": suggestions,
        "command": combined_command(bundle, ev.suggestions),
        "untested": list(ev.untested),
        "warnings": [{"kind": w.kind, "message": w.message} for w in ev.warnings],
        "changes": changes or {},
        "since": since,
        "shortened": None,  # set by render.fit: what was left out to fit GitHub's limit
        "marker": marker(spec.id),
    }


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


def _verdict(hyps: list[dict], counts: dict, bisects: list[dict]) -> list[str]:
    """Plain sentences: what is known so far, most decisive first."""
    lines = []
    confirmed = [h for h in hyps if h["status"] == "confirmed"]
    for h in confirmed:
        lines.append(f"Confirmed: {h['title']}.")
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
    still = [h["title"] for h in hyps if h["status"] == "open"]
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
        "bisects": [
            {k: b[k] for k in ("id", "axis", "last_good", "first_bad", "next", "remaining", "steps", "points")}
            for b in model["bisects"]
        ],
        "suggestions": [{k: s[k] for k in ("recipe", "tests", "why", "command")} for s in model["suggestions"]],
        "command": model["command"],
        "untested_hypotheses": model["untested"],
        "warnings": model["warnings"],
        "changes": model["changes"],
    }
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


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
    from io import StringIO

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buf = StringIO()
    con = Console(file=buf, width=width, color_system="auto" if color else None, force_terminal=color,
                  highlight=False, emoji=False)
    inv = model["investigation"]
    con.print(Text(f"{inv['title']}  ({inv['repo']}#{inv['pr']})", style="bold"))
    con.print(_gate_line(model))
    con.print()
    con.print(Text("Verdict so far", style="bold underline"))
    for line in model["verdict"]:
        con.print(f"  {line}")
    con.print()
    t = Table(title="Elimination summary", title_justify="left", show_lines=False, expand=True)
    t.add_column("hypothesis", ratio=2)
    t.add_column("status", no_wrap=True)
    t.add_column("evidence", ratio=5)
    for h in model["hypotheses"]:
        reason = "\n".join(s["reason"] for s in h["summary"]) or "—"
        t.add_row(("  " * h["depth"]) + h["title"], h["status_word"], reason)
    con.print(t)
    t = Table(title="Runs", title_justify="left", expand=True)
    for col in ("run", "config", "change vs base", inv["metric"], "reading"):
        t.add_column(col)
    for r in model["runs"]:
        reading = r["reading"]
        if not r["value"] and r["other_metrics"] and not reading.startswith(("excluded", "crashed", "error", "cancelled")):
            reading = r["other_metrics"]
        t.add_row(r["run_id"], r["short"], r["change"] or "", r["value"] or "—", reading)
    con.print(t)
    for b in model["bisects"]:
        con.print(Text(f"Bisect {b['title']} ({b['axis']})", style="bold"))
        bt = Table(show_header=True, expand=False)
        bt.add_column("point")
        bt.add_column("state")
        bt.add_column("why")
        for p in b["points"]:
            bt.add_row(p["label"], p["state"], p["reason"])
        con.print(bt)
        con.print(f"  last good: {b['last_good'] or '—'}   first bad: {b['first_bad'] or '—'}   "
                  f"next: {b['next'] or '—'}   untested between: {len(b['remaining'])}")
        con.print()
    if model["suggestions"]:
        con.print(Text("Suggested next", style="bold underline"))
        for i, s in enumerate(model["suggestions"], 1):
            con.print(f"  {i}. {s['recipe']}: {s['why']}")
        if model["command"]:
            con.print("  run them:")
            for line in model["command"].splitlines():
                con.print(f"    {line}", soft_wrap=True)
        con.print()
    if model["warnings"]:
        con.print(Text("Warnings", style="bold underline"))
        for w in model["warnings"]:
            con.print(f"  [{w['kind']}] {w['message']}", markup=False)
    return buf.getvalue()


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
