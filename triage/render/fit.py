"""Fit the PR comment under GitHub's size limit, section by section.

GitHub refuses a comment body above 65,536 characters (``422 Body is too
long``).  Counting code points and staying at or below that number also keeps
a body under the 262,144 UTF-8 bytes that GitHub was measured to enforce.

:func:`fit` is pure: a view model (from ``report.build``) in, a body out.  It
re-renders smaller versions of the model until one fits, giving things up in
this order:

1. the oldest runs of the runs table, down to the newest ``keep_runs``;
2. the evidence details (the collapsed "all evidence" table) -- and then the
   runs come back, as many as now fit, newest first;
3. long texts (reasons, titles, readings, warnings) are cut short, URLs
   longer than the step's length dropped (never cut), Mermaid diagrams kept
   whole or dropped whole, and long lists (run links in a cell, warnings,
   bisect evidence) are capped, in a few steps each tighter than the last,
   again with as many runs as fit;
4. then, tighter still: each bisect's points kept around its answer (the last
   good and first bad points and the next to test, a few on each side), each
   hypothesis's first reasons; then the per-recipe experiments table goes,
   so that the suggestions, the bisects' state and the verdict still fit a
   wide investigation's comment;
5. a minimal comment: title, gate, the elimination summary without evidence;
6. as a last resort, the body is cut at a line boundary.

Whatever was left out is said in one line near the top, with the command
that shows everything; the marker always stays the last line.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from triage.render.report import COMMENT_LIMIT

__all__ = ["Fitted", "fit", "KEEP_RUNS"]

KEEP_RUNS = 20
# (longest text, run links per cell, warnings, bisect points' runs) per step
_CAPS = ((300, 10, 50, 10), (120, 3, 10, 3), (60, 1, 3, 1))
#: The tighter steps: a bisect's points kept on each side of its answer, a hypothesis's reasons.
POINTS_AROUND = 3
REASONS = 2
_NO_CUT = frozenset({"marker", "command", "command_shown", "command_rest"})  # never cut: the marker, the commands
# Mermaid sources are blocks: kept whole, or dropped whole when longer than
# _BLOCK_TEXTS texts of the step's length; a cut one would not parse.
_BLOCKS = frozenset({"mermaid", "strip"})
_BLOCK_TEXTS = 40
#: URLs longer than this are dropped from a shortened comment (their text stays).
MAX_URL = 2048


@dataclass(frozen=True)
class Fitted:
    """The body that fits, and what was left out of it."""

    body: str
    runs_total: int
    runs_dropped: int = 0
    details_dropped: bool = False
    texts_cut: bool = False
    items_dropped: int = 0  # run links, warnings and bisect details beyond the caps
    minimal: bool = False
    note: Optional[str] = None

    @property
    def shortened(self) -> bool:
        return self.note is not None


@dataclass(frozen=True)
class _Plan:
    runs_dropped: int = 0
    details: bool = True
    caps: Optional[tuple[int, int, int, int]] = None
    minimal: bool = False
    tight: int = 0  # 1: bisect points around the answer, a hypothesis's first reasons; 2: no experiments


@dataclass
class _Counts:
    items: int = 0
    texts: bool = False


def fit(
    model: dict,
    limit: int = COMMENT_LIMIT,
    *,
    render: Optional[Callable[[dict], str]] = None,
    templates: Union[str, tuple[str, ...], None] = None,
    keep_runs: int = KEEP_RUNS,
) -> Fitted:
    """The markdown comment for ``model`` in at most ``limit`` code points: rendered by ``render``,
    else by ``report.md.j2`` (``templates``: directories whose templates override ours), each
    attempt given up as soon as it is sure not to fit."""
    if render is None:
        from triage.render.report import to_markdown

        def render(m: dict, most: Optional[int] = None) -> Optional[str]:
            return to_markdown(m, templates, most=most)
        bounded = True
    else:
        bounded = False
    marker = model["marker"]
    if limit < len(marker) + 1:
        raise ValueError(f"a limit of {limit} cannot even hold the marker")
    total = len(model["runs"])
    body = render(model, limit) if bounded else render(model)
    if body is not None and len(body) <= limit:
        return Fitted(body, total)

    def attempt(plan: _Plan) -> Optional[Fitted]:
        out = _render(model, plan, render, limit if bounded else None)
        return out if out is not None and len(out.body) <= limit else None

    floor = max(0, total - keep_runs)
    stages = [
        (_Plan(details=True), 0, floor),  # 0: dropping long URLs alone may do
        (_Plan(details=False), 0, total),
        *((_Plan(details=False, caps=caps), 0, total) for caps in _CAPS),
        *((_Plan(details=False, caps=_CAPS[-1], tight=tight), 0, total) for tight in (1, 2)),
    ]
    for plan, lo, hi in stages:
        found = _least_drop(plan, lo, hi, attempt)
        if found is not None:
            return found
    minimal = _render(model, _Plan(runs_dropped=total, details=False, caps=_CAPS[-1], minimal=True), render)
    assert minimal is not None  # rendered whole: no most given
    if len(minimal.body) <= limit:
        return minimal
    return _hard_cut(minimal, limit, marker)


def _least_drop(plan: _Plan, lo: int, hi: int, attempt: Callable[[_Plan], Optional[Fitted]]) -> Optional[Fitted]:
    """The fitting render that drops the fewest runs in [lo, hi], if any."""
    if hi < lo:
        return None
    best = attempt(_replace(plan, hi))
    if best is None:
        return None
    while lo < hi:  # invariant: dropping hi runs fits
        mid = (lo + hi) // 2
        got = attempt(_replace(plan, mid))
        if got is not None:
            best, hi = got, mid
        else:
            lo = mid + 1
    return best


def _replace(plan: _Plan, runs_dropped: int) -> _Plan:
    return _Plan(runs_dropped, plan.details, plan.caps, plan.minimal, plan.tight)


# --------------------------------------------------------------------------
# One smaller model


def _render(model: dict, plan: _Plan, render: Callable[..., Optional[str]],
            most: Optional[int] = None) -> Optional[Fitted]:
    """``model`` made smaller by ``plan`` and rendered (``most``: None when it is sure to be
    longer than that, the renderer told so)."""
    m = copy.copy(model)
    counts = _Counts()
    total = len(model["runs"])
    # The view model lists runs oldest first: drop from the front.
    m["runs"] = list(model["runs"][plan.runs_dropped:])
    if plan.runs_dropped:
        kept = {(r["run_id"], r["config"]) for r in m["runs"]}
        m["experiments"] = [
            {**x, "results": [r for r in x["results"] if (r["run"]["run_id"], r["run"]["config"]) in kept]}
            for x in model.get("experiments", [])
        ]
    if plan.runs_dropped and model.get("series") is not None:
        from triage.render import pictures

        m["series"] = pictures.metric_series(m)
        m["chart"] = None if plan.minimal else pictures.metric_chart(m["series"])
    if not plan.details or plan.minimal:
        m["hypotheses"] = [{**h, "evidence": []} for h in model["hypotheses"]]
    if plan.tight:
        _tighten(m, counts, experiments=plan.tight < 2)
    if plan.caps is not None:
        _cap_lists(m, plan.caps, counts)
        m = _cut_texts(m, plan.caps[0], counts)
    else:  # URLs are bounded at every step: one huge link must not push the runs out
        m = _cut_texts(m, MAX_URL, counts, only_urls=True)
    if plan.minimal:
        m["hypotheses"] = [{**h, "summary": [], "not_counted": []} for h in m["hypotheses"]]
        m["bisects"], m["suggestions"], m["untested"], m["command"] = [], [], [], None
        m["command_shown"] = m["command_rest"] = None
        m["experiments"], m["similar"], m["chart"] = [], [], None
        counts.items += len(model["warnings"]) + len(model["bisects"]) + len(model["suggestions"])
        m["warnings"] = []
    details_dropped = not plan.details and any(h["evidence"] for h in model["hypotheses"])
    paged = model.get("runs_total", total) - total  # runs the report's paging left out already
    dropped = plan.runs_dropped + paged if plan.runs_dropped else 0
    note = _note(total + paged, dropped, details_dropped, counts, plan.minimal)
    m["shortened"] = {"text": note, "command": _command(model)} if note else None
    rendered = render(m) if most is None else render(m, most)
    if rendered is None:  # longer than most: the note only adds to it
        return None
    body = _with_note(rendered, m)
    return Fitted(body, total, plan.runs_dropped, details_dropped, counts.texts, counts.items, plan.minimal, note)


def _cap_lists(m: dict, caps: tuple[int, int, int, int], counts: _Counts) -> None:
    _, links, warnings, point_runs = caps

    def more_runs(runs: list, cap: int) -> list:
        if len(runs) <= cap:
            return runs
        counts.items += len(runs) - cap
        return runs[:cap] + [{"run_id": f"+{len(runs) - cap:,} more", "config": "", "url": None}]

    m["hypotheses"] = [
        {**h,
         "summary": [{**s, "runs": more_runs(s["runs"], links)} for s in h["summary"]],
         "not_counted": _capped(h["not_counted"], links, counts, "more")}
        for h in m["hypotheses"]
    ]
    if len(m["warnings"]) > warnings:
        left = len(m["warnings"]) - warnings
        counts.items += left
        m["warnings"] = m["warnings"][:warnings] + [{"kind": "more", "message": f"{left:,} more warnings left out"}]
    m["bisects"] = [
        {**b, "points": [{**p, "runs": more_runs(p["runs"], point_runs)} for p in b["points"]]}
        for b in m["bisects"]
    ]
    m["untested"] = _capped(m["untested"], warnings, counts, "more")
    m["experiments"] = [
        {**x, "results": _capped_runs(x["results"], links, counts)} for x in m.get("experiments", [])
    ]


def _tighten(m: dict, counts: _Counts, *, experiments: bool) -> None:
    """Each bisect's points around its answer, each hypothesis's first :data:`REASONS` reasons
    (``experiments=False``: and no per-recipe experiments table)."""
    m["bisects"] = [_around_answer(b, counts) for b in m["bisects"]]
    hyps = []
    for h in m["hypotheses"]:
        left = len(h["summary"]) - REASONS
        if left > 0:
            counts.items += left
            more = {"reason": f"+{left:,} more", "full": f"+{left:,} more", "runs": [], "flags": [], "verdict": ""}
            h = {**h, "summary": h["summary"][:REASONS] + [more]}
        hyps.append(h)
    m["hypotheses"] = hyps
    if not experiments and m.get("experiments"):
        counts.items += len(m["experiments"])
        m["experiments"] = []


def _around_answer(b: dict, counts: _Counts) -> dict:
    """A bisect with its points within :data:`POINTS_AROUND` of its answer (its last good and
    first bad points, and the next to test; the first ones when it has none yet), and a row that
    says how many more there are."""
    points = b["points"]
    if len(points) <= 2 * POINTS_AROUND + 1:
        return b
    marks = {b.get("last_good"), b.get("first_bad"), b.get("next")} - {None}
    at = [i for i, p in enumerate(points) if p["label"] in marks] or [0]
    kept = [p for i, p in enumerate(points) if any(abs(i - j) <= POINTS_AROUND for j in at)]
    left = len(points) - len(kept)
    counts.items += left
    more = {"label": "…", "state": "", "value": None, "runs": [],
            "reason": f"+{left:,} more points; triage bisect shows them"}
    return {**b, "points": kept + [more], "points_total": len(points)}


def _capped_runs(results: list, cap: int, counts: _Counts) -> list:
    """An experiment's newest results, and how many older ones were left out."""
    if len(results) <= cap:
        return results
    counts.items += len(results) - cap
    more = {"run": {"run_id": f"+{len(results) - cap:,} older", "config": "", "url": None}, "text": "left out",
            "valid": False}
    return [more] + results[-cap:]


def _capped(items: list, cap: int, counts: _Counts, word: str) -> list:
    if len(items) <= cap:
        return items
    counts.items += len(items) - cap
    return items[:cap] + [f"+{len(items) - cap:,} {word}"]


def _cut_texts(value: Any, cap: int, counts: _Counts, key: str = "", only_urls: bool = False) -> Any:
    """Every string longer than ``cap`` cut to ``cap`` with an ellipsis; a
    longer URL dropped (a cut one would lead elsewhere: the text stays, without
    its link); a Mermaid block kept whole or, past ``_BLOCK_TEXTS * cap``, dropped."""
    if key in _NO_CUT:
        return value
    if key == "url":
        if isinstance(value, str) and len(value) > cap:
            counts.texts = True
            return None
        return value
    if isinstance(value, str) and only_urls:
        return value
    if key in _BLOCKS:
        if isinstance(value, str) and len(value) > _BLOCK_TEXTS * cap:
            counts.items += 1
            return ""
        return value
    if key == "chart" and isinstance(value, dict):
        chart = _cut_texts(value, cap, counts, only_urls=only_urls)
        return chart if chart.get("mermaid") else None
    if isinstance(value, str):
        if len(value) <= cap:
            return value
        counts.texts = True
        return value[: cap - 1].rstrip() + "…"
    if isinstance(value, dict):
        return {k: _cut_texts(v, cap, counts, k, only_urls) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_texts(v, cap, counts, key, only_urls) for v in value]
    return value


# --------------------------------------------------------------------------
# The line that says what was left out


def _note(total: int, dropped: int, details: bool, counts: _Counts, minimal: bool) -> Optional[str]:
    parts = []
    if dropped:
        parts.append(f"{dropped:,} of {total:,} runs" + (" (the oldest)" if dropped < total else ""))
    if details:
        parts.append("the evidence details")
    if minimal:
        parts.append("the evidence, bisects, suggestions and warnings")
    elif counts.items:
        parts.append(f"{counts.items:,} run links, warnings and bisect details")
    text = ""
    if parts:
        text = (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) + " were left out"
    if counts.texts:
        text += ("; " if text else "") + "long texts were cut short"
    return text or None


def _command(model: dict) -> str:
    inv = model["investigation"]
    return f"triage report --pr {inv['pr']} --repo {inv['repo']}"


def _with_note(body: str, m: dict) -> str:
    """A template that does not show ``shortened`` still gets the line, above the marker."""
    note = m["shortened"]
    if note is None or note["text"] in body:
        return body
    from triage.render.env import code, md

    line = f"> {md(note['text'])}; {code(note['command'], cell=False)} shows everything."
    head = body.rstrip()[: -len(m["marker"])].rstrip()
    return f"{head}\n\n{line}\n\n{m['marker']}\n"


def _hard_cut(minimal: Fitted, limit: int, marker: str) -> Fitted:
    """Whole lines from the top, then the marker: only for absurd inputs."""
    lines = minimal.body.rstrip()[: -len(marker)].rstrip().splitlines(keepends=True)
    tail = "\n" + marker + "\n"
    kept, size = [], len(tail)
    for line in lines:
        if size + len(line) > limit:
            break
        kept.append(line)
        size += len(line)
    body = "".join(kept).rstrip("\n") + "\n" + tail
    if len(body) > limit:  # not even a first line fits
        body = marker + "\n"
    return Fitted(body, minimal.runs_total, minimal.runs_dropped, minimal.details_dropped, minimal.texts_cut,
                  minimal.items_dropped, True, minimal.note)
