"""The dashboard: every investigation on one page, each report as HTML.

Server-rendered from the Jinja2 templates in ``templates/dashboard`` with
autoescaping on, so every text from users and logs is escaped.  The chart is
drawn here as inline SVG (readable without JavaScript); the bisect strip and
the hypothesis tree are plain HTML.  A page reads the stored evaluation and view
as ``triage report`` does (a few queries); when runs arrived since, what they
change is evaluated and stored for the next reader (:mod:`triage.views`), in a
short writing session of its own.  Everything else is read in read-only
sessions that never hold the write lock; a knowledge base that cannot be
written to is evaluated in memory.
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Optional

from triage.errors import InputError
from triage.kb import store

__all__ = ["overview", "investigation_page", "render", "chart_svg", "mark", "newest", "strip", "when"]

CHART_WIDTH, LABEL_WIDTH, BAR_HEIGHT = 760, 300, 22
LABEL_CHARS = 42  # longer run labels are cut (the bar's tooltip has all of it)


@lru_cache(maxsize=4)
def _env(overrides: Optional[str]) -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    from triage.render.commands import wrap
    from triage.render.env import template_dirs

    env = Environment(loader=FileSystemLoader(template_dirs(overrides)), undefined=StrictUndefined,
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(chart_svg=chart_svg)
    env.filters["web_url"] = web_url
    env.filters["shell"] = wrap  # a long command one option a line, as the comment shows it
    return env


def web_url(url: Any) -> Optional[str]:
    """The URL when it is http(s), else None: a run's URL is user input (no ``javascript:``)."""
    text = str(url or "").strip()
    return text if text.lower().startswith(("https://", "http://")) else None


def render(name: str, *, overrides: Optional[str] = None, **context: Any) -> str:
    """The page ``name``; ``overrides``: a directory whose templates override ours (``TRIAGE_TEMPLATES``)."""
    return _env(overrides).get_template(f"dashboard/{name}").render(**context)


def _model(s: Any, inv: Any, url: str) -> dict:
    """The view ``triage report`` shows: its stored view while nothing it rests on changed,
    else evaluated and stored (in memory only when the knowledge base is read-only)."""
    from sqlalchemy.exc import OperationalError

    from triage import views
    from triage.kb import snapshot

    model = None
    if snapshot.read(s, inv.id, snapshot.fingerprint(s, inv.id)) is None:
        try:
            with store.session(url) as w:
                model = views.model(w, inv)
        except OperationalError:  # a read-only file or database user
            model = None
    if model is None:
        model = views.model(s, inv, keep=False)
    model["since"] = None
    return model


def _passes(value: float, gate: float, direction: str) -> bool:
    return value >= gate if direction == "higher" else value <= gate


def latest(model: dict, base: Optional[str] = None) -> Optional[dict]:
    """The newest valid run with the primary metric: of the base config when it has one."""
    metric = model["investigation"]["metric"]
    rows = [r for r in model["runs"] if r["valid"] and metric in r["metrics"]]
    of_base = [r for r in rows if r["config"] == base]
    rows = of_base or rows
    return newest(rows)


def when(value: Any) -> Optional[datetime]:
    """A time as an aware UTC datetime (one without a zone is read as UTC); None when it is none."""
    if value is None or value == "":
        return None
    if not isinstance(value, datetime):
        try:
            value = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


_NEVER = datetime.min.replace(tzinfo=timezone.utc)


def newest(runs: list[dict]) -> Optional[dict]:
    """The run with the latest time, and of those the last recorded (the view lists
    runs as recorded within a time); runs without a time count as oldest."""
    if not runs:
        return None
    return max(enumerate(runs), key=lambda ir: (when(ir[1]["time"]) or _NEVER, ir[0]))[1]


#: The order of a status strip: what is decided first, what is out last.
STRIP_ORDER = ("confirmed", "conflicting", "inconclusive", "open", "ruled_out")


def strip(model: dict) -> list[dict]:
    """One cell per hypothesis, by status (as :data:`STRIP_ORDER`): the index's status strip."""
    rank = {k: i for i, k in enumerate(STRIP_ORDER)}
    cells = [{"id": h["id"], "title": h["title"], "status": h["status"], "word": h.get("status_word", h["status"])}
             for h in model["hypotheses"]]
    return sorted(cells, key=lambda c: rank.get(c["status"], len(rank)))


def mark(model: dict, base: Optional[str] = None) -> tuple[str, str]:
    """green: the newest valid run (of the base config) meets the gate; amber: not
    yet, but a cause is confirmed (or nothing has run); red: below the gate, no cause."""
    inv, run = model["investigation"], latest(model, base)
    if run is None or inv["gate"] is None:
        return "amber", "no valid run against a gate yet"
    value = run["metrics"][inv["metric"]]["value"]
    if _passes(value, inv["gate"], inv["direction"]):
        return "green", f"the newest valid run meets the gate ({value:g})"
    if model["counts"].get("confirmed"):
        return "amber", f"below the gate ({value:g}), a cause is confirmed"
    return "red", f"below the gate ({value:g}), no cause confirmed yet"


def _bisect_state(model: dict) -> str:
    out = []
    for b in model["bisects"]:
        if b["first_bad"]:
            out.append(f"{b['id']}: first bad {b['first_bad']}" + (" (done)" if b["done"] else ""))
        elif b["next"]:
            out.append(f"{b['id']}: next {b['next']}")
        else:
            out.append(f"{b['id']}: {'; '.join(b['notes']) or 'not started'}")
    return "; ".join(out)


def overview(url: str) -> list[dict]:
    """One row per investigation, for ``/``: the latest activity (a run, a post) first."""
    rows = []
    with store.read_session(url) as s:
        for inv in store.list_investigations(s):
            model = _model(s, inv, url)
            post = store.last_post(s, inv.id)
            colour, why = mark(model, inv.spec.get("base"))
            last_run = newest(model["runs"])
            times = [t for t in (when(last_run["time"]) if last_run else None, when(post.at) if post else None) if t]
            rows.append({"inv": model["investigation"], "counts": model["counts"], "mark": colour, "why": why,
                         "bisect": _bisect_state(model), "last_run": last_run, "strip": strip(model),
                         "activity": max(times) if times else None,
                         "posted": post.url if post else None, "verdict": model["verdict"]})
    rows.sort(key=lambda r: r["activity"] or _NEVER, reverse=True)  # stable: equals stay as listed
    return rows


def investigation_page(url: str, repo: str, pr: int) -> Optional[tuple[dict, list, str, str]]:
    """The model, the status history, the mark and why; None when no investigation."""
    with store.read_session(url) as s:
        try:
            inv = store.find_investigation(s, pr, repo)
        except InputError:
            return None
        model = _model(s, inv, url)
        history = [{"hypothesis": h.hypothesis_id, "previous": h.previous, "status": h.status, "at": h.at}
                   for h in store.status_history(s, inv.id)]
        base = inv.spec.get("base")
    colour, why = mark(model, base)
    return model, history, colour, why


def _num(x: float) -> str:
    return f"{x:.4g}"


def chart_svg(series: Optional[dict]) -> Any:
    """The metric per valid run as horizontal bars with the gate and references as lines (SVG)."""
    from markupsafe import Markup, escape

    if not series:
        return Markup("")
    lo, hi = series["min"], series["max"]
    span = (hi - lo) or 1.0
    plot = CHART_WIDTH - LABEL_WIDTH - 20
    top = 30
    height = top + BAR_HEIGHT * len(series["bars"]) + 30

    def x(v: float) -> float:
        return LABEL_WIDTH + (v - lo) / span * plot

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{CHART_WIDTH}" '
             f'height="{height}" viewBox="0 0 {CHART_WIDTH} {height}">',
             f'<title>{escape(series["metric"])} per run</title>',
             f'<text x="{LABEL_WIDTH}" y="18" class="chart-title">{escape(series["metric"])} per run</text>']
    for i, b in enumerate(series["bars"]):
        y = top + i * BAR_HEIGHT
        w = max(1.0, x(b["value"]) - LABEL_WIDTH)
        label = b["label"] if len(b["label"]) <= LABEL_CHARS else b["label"][:LABEL_CHARS - 1] + "…"
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end" class="bar-label">'
                     f'{escape(label)}</text>')
        parts.append(f'<rect class="bar" x="{LABEL_WIDTH}" y="{y + 3}" width="{w:.1f}" height="{BAR_HEIGHT - 6}" '
                     f'fill="#4c78a8"><title>{escape(b["label"])}: {_num(b["value"])}</title></rect>')
        parts.append(f'<text x="{LABEL_WIDTH + w + 4:.1f}" y="{y + 15}" class="bar-value">{_num(b["value"])}</text>')
    bottom = top + BAR_HEIGHT * len(series["bars"])
    for line in series["lines"]:
        lx = x(line["value"])
        parts.append(f'<line class="ref ref-{escape(line["name"])}" x1="{lx:.1f}" x2="{lx:.1f}" y1="{top}" '
                     f'y2="{bottom}" stroke="{escape(line["colour"])}" stroke-width="2" stroke-dasharray="5 3"/>')
        parts.append(f'<text x="{lx:.1f}" y="{bottom + 16}" text-anchor="middle" fill="{escape(line["colour"])}">'
                     f'{escape(line["name"])} {_num(line["value"])}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
