"""Renderers: one view model, three formats (markdown, JSON, text).

The view model is :func:`triage.render.model.build` (re-exported here); the
markdown comes from Jinja templates, the text from rich tables
(``triage/render/text.py``).
"""

from __future__ import annotations

from typing import Any, Optional, Union

from triage.render import jsonout
from triage.render.model import (  # noqa: F401  (the view model's names, as they were imported from here)
    COMMENT_LIMIT,
    CONFOUNDS_SHOWN,
    DECISIVE,
    DEFAULT_RUNS,
    EVIDENCE_KEYS,
    MARKER_PREFIX,
    RECIPE_STATE_WORDS,
    RUN_REFS,
    STATUS_ICONS,
    STATUS_ORDER,
    STATUS_WORDS,
    VERDICT_WORDS,
    _tree,
    build,
    dispatch_lines,
    marker,
)

#: In a view model read back from a stored view: the JSON report of that view kept with it
#: (:func:`json_template`), which :func:`to_json` then prints.
JSON_TEXT = "json_text"
#: What stands for "Seen elsewhere" in a kept JSON report: it changes without the view.
_SIMILAR = "\x00similar\x00"


def to_json(model: dict) -> str:
    """The JSON report: SPEC keys, stable order (the kept report of the view, if it has one)."""
    kept = model.get(JSON_TEXT)
    if kept is not None and model["since"] is None:
        return with_similar(kept, model["similar"])
    out = {
        "investigation": model["investigation"],
        "references": model["references"],
        "verdict": model["verdict"],
        "hypotheses": [
            {**{k: h[k] for k in ("id", "title", "parent", "status")},
             "evidence": [{k: e[k] for k in EVIDENCE_KEYS} for e in h["evidence"]]} for h in model["hypotheses"]
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
        "warnings": model["engine_warnings"],
        "changes": model["changes"],
    }
    if model.get("subjects") is not None:
        out["subjects"] = model["subjects"]
    if model["since"] is not None:
        out["since"] = model["since"]
    if model.get("runs_total", 0) > len(model["runs"]):
        out["runs_total"] = model["runs_total"]
    if model.get("confounds_total", 0) > len(model["confounds"]):
        out["confounds_total"] = model["confounds_total"]
    return jsonout.dumps(out) + "\n"


def json_template(model: dict) -> str:
    """The JSON report of a view, "Seen elsewhere" a mark to put it in (:func:`with_similar`):
    what a stored view keeps, so that its next JSON reports neither read its long lists back
    nor write them out again.  The mark is a text holding a NUL, which no text of a knowledge
    base may hold."""
    return to_json({k: v for k, v in model.items() if k != JSON_TEXT} | {"similar": _SIMILAR, "since": None})


def with_similar(template: str, similar: list) -> str:
    """A kept JSON report with "Seen elsewhere" put in: at its place (a key of the report's
    top level), each line of it indented as a value there is."""
    mark = '"similar": ' + jsonout.dumps(_SIMILAR)
    return template.replace(mark, '"similar": ' + jsonout.dumps(similar).replace("\n", "\n  "), 1)


def to_markdown(model: dict, templates: Union[str, tuple[str, ...], None] = None, *,
                most: Optional[int] = None) -> Optional[str]:
    """The PR comment, from ``report.md.j2`` (``templates``: directories whose templates
    override ours, :func:`triage.render.env.template_dirs`); always ends with the marker.

    ``most``: None as soon as the comment is sure to be longer than that (what the template
    wrote so far, less trailing space and a marker, is longer already: what follows it only
    adds), without rendering the rest.  Fitting a wide investigation's comment renders several
    shortened views that are each megabytes long before one fits."""
    from triage.render.env import LinkRefs, environment, users_templates

    refs = LinkRefs()
    model = _common_n_said_once(model)
    with users_templates(templates):
        template = environment(templates).get_template("report.md.j2")
        if most is None:
            body = template.render(**model, link_refs=refs)
        else:
            body = _bounded(template.generate(**model, link_refs=refs), most + len(model["marker"]))
    if body is None:
        return None
    body = body.rstrip()
    if body.endswith(model["marker"]):
        body = body[: -len(model["marker"])].rstrip()
    # Each URL once, as a reference definition, just above the marker.
    definitions = refs.definitions()
    if definitions:
        body += "\n\n" + definitions
    return body + "\n\n" + model["marker"] + "\n"


def _bounded(pieces: Any, most: int) -> Optional[str]:
    """The text of ``pieces``, or None once it is longer than ``most`` without its trailing space."""
    out: list[str] = []
    size, check = 0, most
    for piece in pieces:
        out.append(piece)
        size += len(piece)
        if size > check:
            joined = "".join(out)
            kept = len(joined.rstrip())
            if kept > most:
                return None
            out, check = [joined], size + (most - kept)  # trailing space so far: look again past it
    text = "".join(out)
    return None if size > most and len(text.rstrip()) > most else text


def _common_n_said_once(model: dict) -> dict:
    """When every run's primary metric has one sample count, the runs table's
    header says it ("gsm8k (n=1319)"): the comment's reasons then leave out
    their "at n=1319" (the JSON and the text report keep it)."""
    ns = {r.get("n") for r in model.get("runs", []) if r.get("value")}
    if len(ns) != 1 or None in ns:
        return model
    said = f" at n={ns.pop()}"

    def cut(text: Any) -> Any:
        return text.replace(said + ",", ",").replace(said + ")", ")") if isinstance(text, str) else text

    def rows(items: list, keys: tuple[str, ...]) -> list:
        return [{**x, **{k: cut(x[k]) for k in keys if k in x}} for x in items]

    hyps = [{**h, "summary": rows(h["summary"], ("reason", "full")), "evidence": rows(h["evidence"], ("reason", "numbers"))}
            for h in model["hypotheses"]]
    bisects = [{**b, "points": rows(b["points"], ("reason",))} for b in model["bisects"]]
    return {**model, "hypotheses": hyps, "bisects": bisects}


def to_text(model: dict, width: int = 110, color: bool = False) -> str:
    """The terminal report (``triage/render/text.py``)."""
    from triage.render import text

    return text.to_text(model, width, color)


def bisects_to_text(model: dict, width: int = 110, color: bool = False) -> str:
    """Only the bisect sections of the terminal report (``triage bisect``)."""
    from triage.render import text

    return text.bisects_to_text(model, width, color)


def similar_to_text(targets: list, matches: list[dict], min_score: float, width: int = 110) -> str:
    """``triage similar``: each hypothesis asked about, then its matches elsewhere."""
    from triage.render import text

    return text.similar_to_text(targets, matches, min_score, width)
