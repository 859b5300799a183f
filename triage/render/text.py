"""The terminal report: the comment's sections as rich tables and plain lines.

``triage report --format text``, ``triage bisect`` and ``triage similar``
read the same view model as the markdown comment (``report.build``).
"""

from __future__ import annotations

from typing import Any

from triage.render.commands import wrap
from triage.render.report import STATUS_WORDS, VERDICT_WORDS
from triage.rules.decisions.stats import fmt


def to_text(model: dict, width: int = 110, color: bool = False) -> str:
    """The terminal report: the same sections as rich tables."""
    con, buf = _console(width, color)
    for section in (_head, _summary_table, _experiments_table, _series_table, _runs_table, _bisects, _next,
                    _seen_elsewhere, _warnings):
        section(con, model)
    return buf.getvalue()


def _heading(con: Any, text: str) -> None:
    from rich.text import Text

    con.print(Text(text, style="bold underline"))


def _head(con: Any, model: dict) -> None:
    """The title, the gate, what changed since the last report, and the verdict so far."""
    from rich.text import Text

    inv = model["investigation"]
    con.print(Text(f"{inv['title']}  ({inv['repo']}#{inv['pr']})", style="bold"))
    con.print(_gate_line(model))
    if model["since"] is not None:
        con.print(Text(_since_line(model["since"]), style="italic"))
    con.print()
    _heading(con, "Verdict so far")
    for line in model["verdict"]:
        con.print(f"  {line}")
    con.print()


def _summary_table(con: Any, model: dict) -> None:
    from rich.table import Table

    t = Table(title="Elimination summary", title_justify="left", show_lines=False, expand=True)
    t.add_column("hypothesis", ratio=2)
    t.add_column("status", no_wrap=True)
    t.add_column("evidence", ratio=5)
    for h in model["hypotheses"]:
        reason = "\n".join(s["reason"] + (" (confounded)" if "confounded" in s["flags"] else "")
                           for s in h["summary"]) or "—"
        t.add_row(h["tree"] + h["title"], h["status_word"], reason)
    con.print(t)


def _experiments_table(con: Any, model: dict) -> None:
    from rich.table import Table

    t = Table(title="Experiments", title_justify="left", expand=True)
    for col, ratio in (("recipe", 2), ("change vs base", 3), ("result", 3), ("decided", 3)):
        t.add_column(col, ratio=ratio)
    for x in model["experiments"]:
        t.add_row(x["short"], x["change"], _experiment_result(x, lambda r: r["run_id"]), _experiment_decided(x))
    con.print(t)


def _series_table(con: Any, model: dict) -> None:
    """The metric per config, with a bar each (when the report has a series)."""
    from rich.table import Table

    from triage.render import pictures

    series = model["series"]
    if series is None:
        return
    t = Table(title=f"{series['metric']} per config (the mean of its valid runs)", title_justify="left",
              expand=False)
    t.add_column("config")
    t.add_column("runs", justify="right")
    t.add_column(series["metric"], justify="right")
    t.add_column("range")
    t.add_column(f"{fmt(series['min'])} … {fmt(series['max'])}", no_wrap=True)
    for bar in series["bars"]:
        t.add_row(bar["short"], bar["run_id"] if bar["n"] == 1 else f"×{bar['n']}", fmt(bar["value"]),
                  f"{fmt(bar['min'])}–{fmt(bar['max'])}" if bar["n"] > 1 else "",
                  pictures.text_bar(bar["value"], series))
    con.print(t)
    con.print(f"  {pictures.text_legend(series)}")
    con.print()


def _runs_table(con: Any, model: dict) -> None:
    """The runs (the newest, when there are many), then each subject's readings."""
    from rich.table import Table

    metric = model["investigation"]["metric"]
    t = Table(title="Runs", title_justify="left", expand=True)
    for col in ("run", "config", "change vs base", metric, "reading"):
        t.add_column(col)
    for r in model["runs"]:
        reading = r["reading"]
        if not r["value"] and r["other_metrics"] and r["valid"]:
            reading = r["other_metrics"]
        t.add_row(r["run_id"], r["short"], r["change"] or "", r["value"] or "—", reading)
    con.print(t)
    if model.get("runs_total", 0) > len(model["runs"]):
        con.print(f"  the newest {len(model['runs']):,} of {model['runs_total']:,} runs; --runs all shows them all")
    if model.get("subjects") is not None:
        con.print(_subjects_table(model["subjects"], metric))


def _bisects(con: Any, model: dict) -> None:
    for b in model["bisects"]:
        _bisect_text(con, b)


def _next(con: Any, model: dict) -> None:
    """Suggested next: the experiments to run and the command that starts them, or that it is finished."""
    if model["suggestions"] or model["untested"] or model["next_level"]:
        _heading(con, "Suggested next")
        for i, s in enumerate(model["suggestions"], 1):
            con.print(f"  {i}. {s['short']}: {s['state']}" + (f"; decides {', '.join(s['tests'])}" if s["tests"] else "")
                      + ("" if s["command"] else " (no run: template: start it by hand)"))
            for o in s["outcomes"]:
                con.print(f"       {o}")
            if s["advice"]:
                con.print(f"       {s['advice']}")
        if model["command"]:
            con.print("  run them:")
            for line in wrap(model["command"]).splitlines():
                con.print(f"    {line}", soft_wrap=True)
        for line in _untested_lines(model):
            con.print(f"  {line}")
        con.print()
    elif model["headline"]["finished"]:
        _heading(con, "Suggested next")
        con.print(f"  {model['headline']['finished_line']}")
        con.print()


def _seen_elsewhere(con: Any, model: dict) -> None:
    if model["similar"]:
        _heading(con, "Seen elsewhere")
        for x in model["similar"]:
            con.print(f"  {x['hypothesis']}:")
            _similar_lines(con, x)
        con.print()


def _warnings(con: Any, model: dict) -> None:
    if model["warnings"]:
        _heading(con, "Warnings")
        for w in model["warnings"]:
            con.print(f"  [{w['kind']}] {w.get('text', w['message'])}")


def _subjects_table(subjects: dict, metric: str) -> Any:
    """Each subject's reading per config (or bisect point): one row a subject."""
    from rich.table import Table

    t = Table(title=f"{metric} per {subjects['key']}", title_justify="left", expand=True)
    t.add_column(subjects["key"])
    for col in subjects["columns"]:
        t.add_column(col)
    for row in subjects["rows"]:
        t.add_row(row["subject"], *(c or "—" for c in row["cells"]))
    return t


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
        bits.append(f"metric: {inv['metric']} ({inv['direction']} is better; no gate)")
    for name, ref in model["references"].items():
        bits.append(ref["label"])
    return " · ".join(bits)
