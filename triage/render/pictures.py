"""Pictures: the metric per config against the gate, and a bisect as a strip of points.

The PR comment gets Mermaid (GitHub renders ``mermaid`` code blocks in
comments): an ``xychart-beta`` bar chart of the primary metric per config
with the gate and the good/bad references as lines, and a left-to-right
``flowchart`` per bisect whose nodes are its points, coloured by state.  The
terminal gets the same as text: a bar per config with the gate marked, and
the strip on one line.  Repeats are pooled: a config's bar is the mean of its
valid runs, labelled with how many and their range.

Every string that reaches a diagram passes through ``_label`` (xychart) or
``_node_text`` (flowchart): user text can neither end the code block, nor
close the comment marker, nor break the diagram's syntax.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional

from triage.rules.decisions.stats import fmt

_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
# bar, gate, good, bad: the order of the series below
PALETTE = ("#4c78a8", "#d73a49", "#28a745", "#f66a0a")
COLOUR_NAMES = {"#d73a49": "red", "#28a745": "green", "#f66a0a": "orange"}
STATE_CLASSES = {
    "good": "fill:#dcffe4,stroke:#28a745,color:#111",
    "bad": "fill:#ffdce0,stroke:#d73a49,color:#111",
    "untested": "fill:#f6f8fa,stroke:#959da5,color:#111,stroke-dasharray:4 3",
    "skipped": "fill:#f6f8fa,stroke:#6a737d,color:#111",
    "unknown": "fill:#fff5b1,stroke:#b08800,color:#111",
    "flaky": "fill:#fff5b1,stroke:#e36209,color:#111",
    "no_number": "fill:#fff5b1,stroke:#b08800,color:#111",
}
STATE_MARKS = {"good": "✅ good", "bad": "❌ bad", "untested": "⬜ untested", "skipped": "⏭️ skipped",
               "unknown": "❔ can't tell", "flaky": "⚠️ flaky", "no_number": "❔ no number"}
TEXT_MARKS = {"good": "good", "bad": "BAD", "untested": "untested", "skipped": "skipped", "unknown": "can't tell",
              "flaky": "FLAKY", "no_number": "no number"}


CHART_RUNS = 40


def _label(text: Any) -> str:
    """A quoted xychart string: no quotes, backticks, angle brackets, line breaks or mentions."""
    s = " ".join(str(text).split())
    s = s.translate(str.maketrans({'"': "'", "`": "'", "<": "‹", ">": "›", "%": "％"}))
    return _MENTION.sub("@\u200b", s)


def _node_text(text: Any) -> str:
    """Flowchart node text in quotes: Mermaid's #code; entities for the characters that matter."""
    s = " ".join(str(text).split())
    out = []
    for ch in s:
        if ch in '#"<>`%&;@':
            out.append(f"#{ord(ch)};")
        else:
            out.append(ch)
    return "".join(out)


def _range(values: list[float]) -> tuple[float, float]:
    """A y-range a little wider than the values, on round numbers."""
    lo, hi = min(values), max(values)
    span = hi - lo or abs(hi) or 1.0
    if not math.isfinite(span * 1.2) or span < 1e-300:  # no round numbers out there: the values as they are
        return (lo, hi) if hi > lo else (lo - 1.0, hi + 1.0)
    step = 10 ** math.floor(math.log10(span / 5))
    lo = math.floor((lo - span * 0.1) / step) * step
    hi = math.ceil((hi + span * 0.1) / step) * step
    if min(values) >= 0 > lo:
        lo = 0.0
    return float(fmt_num(lo)), float(fmt_num(hi))


def fmt_num(x: float) -> str:
    return f"{x:.6g}"


def metric_series(model: dict) -> Optional[dict]:
    """The numbers both pictures draw: one bar per config (the mean of its valid
    runs, with their range; a bisect point's and a subject's apart), and the lines."""
    inv = model["investigation"]
    metric = inv["metric"]
    pooled: dict[tuple, dict] = {}
    key = (model.get("subjects") or {}).get("key")
    point_of = {(x["run_id"], x["config"]): p["label"]
                for b in model.get("bisects") or () for p in b.get("points") or () for x in p.get("runs") or ()}
    for r in model["runs"]:
        if not r["valid"] or metric not in r["metrics"]:
            continue
        point = point_of.get((r["run_id"], r["config"]))  # a bisect point's runs belong together, not with the config's
        short = r["short"] if point is None else f"{r['short']} @ {point if len(point) <= 16 else '…' + point[-15:]}"
        subject = r["provenance"].get(key) if key else None  # and one subject's runs, not several models'
        short = short if subject is None else f"{subject} · {short}"
        bar = pooled.setdefault((r["config"], point, subject),
                                {"config": r["config"], "short": short, "values": [], "run_ids": []})
        bar["values"].append(r["metrics"][metric]["value"])
        bar["run_ids"].append(r["run_id"])
    if not pooled:
        return None
    bars = []
    for bar in pooled.values():  # in the order of each config's first run
        values = bar.pop("values")
        n = len(values)
        lo, hi = min(values), max(values)
        bar.update(value=sum(values) / n, n=n, min=lo, max=hi, run_id=bar["run_ids"][-1])
        bar["label"] = bar["short"] if n == 1 else f"{bar['short']} ×{n} {fmt(lo)}–{fmt(hi)}"
        bars.append(bar)
    total = len(bars)
    bars = bars[-CHART_RUNS:]  # the newest: a chart of hundreds of bars reads as nothing
    lines = []
    if inv["gate"] is not None:
        lines.append({"name": "gate", "value": inv["gate"], "colour": PALETTE[1]})
    for name, colour in (("good", PALETTE[2]), ("bad", PALETTE[3])):
        ref = model["references"].get(name)
        if ref and ref["value"] is not None:
            lines.append({"name": name, "value": ref["value"], "colour": colour})
    lo, hi = _range([b["min"] for b in bars] + [b["max"] for b in bars] + [x["value"] for x in lines])
    return {"metric": metric, "bars": bars, "lines": lines, "min": lo, "max": hi, "total": total,
            "direction": inv.get("direction", "higher")}


def metric_chart(series: Optional[dict]) -> Optional[dict]:
    """The Mermaid ``xychart-beta`` source and a one-line legend (xychart draws none)."""
    if series is None:
        return None
    palette = ", ".join(PALETTE[:1] + tuple(x["colour"] for x in series["lines"]))
    height = 80 + 24 * len(series["bars"])
    init = ('%%{init: {"xyChart": {"width": 760, "height": ' + str(height) + '}, '
            '"themeVariables": {"xyChart": {"plotColorPalette": "' + palette + '"}}}}%%')
    metric = _label(series["metric"])
    categories = ", ".join(f'"{_label(b["label"])}"' for b in series["bars"])
    lines = [
        init,
        "xychart-beta horizontal",
        f'  title "{metric} per config"',
        f"  x-axis [{categories}]",
        f'  y-axis "{metric}" {fmt_num(series["min"])} --> {fmt_num(series["max"])}',
        "  bar [" + ", ".join(fmt_num(round(b["value"], 4)) for b in series["bars"]) + "]",
    ]
    for line in series["lines"]:
        lines.append("  line [" + ", ".join([fmt_num(line["value"])] * len(series["bars"])) + "]")
    shown = len(series["bars"])
    which = "each config" if shown == series.get("total", shown) else f"the newest {shown} of {series['total']} configs"
    legend = [f"bars: {series['metric']} of {which}, the mean of its valid runs (×n: their range; {series.get('direction', 'higher')} is better)"]
    legend += [f"{COLOUR_NAMES[x['colour']]} line: {x['name']} {fmt(x['value'])}" for x in series["lines"]]
    return {"mermaid": "\n".join(lines), "legend": " · ".join(legend)}


def bisect_strip(b: dict) -> str:
    """A bisect as a left-to-right strip of its points, coloured by state."""
    lines = ["flowchart LR"]
    for i, p in enumerate(b["points"]):
        tags = [STATE_MARKS.get(p["state"], p["state"])]
        if p.get("value") is not None:
            tags.append(fmt(p["value"]))
        if p["label"] == b["last_good"]:
            tags.append("last good")
        if p["label"] == b["first_bad"]:
            tags.append("first bad")
        if p["label"] == b["next"]:
            tags.append("next")
        lines.append(f'  p{i}["{_node_text(p["label"])}<br/>{_node_text(" · ".join(tags))}"]')
    lines.append("  " + " --> ".join(f"p{i}" for i in range(len(b["points"]))))
    used = []
    for state, style in STATE_CLASSES.items():
        members = [f"p{i}" for i, p in enumerate(b["points"]) if p["state"] == state]
        if members:
            used.append(f"  class {','.join(members)} {state}")
            lines.append(f"  classDef {state} {style}")
    return "\n".join(lines + used)


def text_bar(value: float, series: dict, width: int = 30) -> str:
    """A bar for a terminal table over the series' range, with the lines marked:
    ┃ the gate, G the good reference, B the bad one."""
    lo, hi = series["min"], series["max"]
    span = (hi - lo) or 1.0
    filled = max(0, min(width, round((value - lo) / span * width)))
    cells = ["█"] * filled + [" "] * (width - filled)
    for line in series["lines"]:
        if lo <= line["value"] <= hi:
            cells[min(width - 1, round((line["value"] - lo) / span * width))] = TEXT_LINE_MARKS[line["name"]]
    return "".join(cells)


TEXT_LINE_MARKS = {"gate": "┃", "good": "G", "bad": "B"}


def text_legend(series: dict) -> str:
    marks = [f"{TEXT_LINE_MARKS[x['name']]} {x['name']} {fmt(x['value'])}" for x in series["lines"]]
    return " · ".join(marks + [f"{series.get('direction', 'higher')} is better"])


def text_strip(b: dict) -> str:
    """The bisect strip on one line: each point with its state."""
    return " → ".join(f"{p['label']} [{TEXT_MARKS.get(p['state'], p['state'])}]" for p in b["points"])
