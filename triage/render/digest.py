"""What the PR comment says once: the headline, grouped warnings, split trees.

The comment's first screen holds the verdict, the bisect answers and the
next experiments; everything else is one click away.  This module shapes the
view-model pieces that make that possible without repeating anything:

- ``headline``: confirmed and conflicting titles, how many are ruled out, the
  inconclusive and open ones (past five of a kind, five named and the rest
  counted), and the next level under a confirmed parent;
- ``group_warnings``: the engine's warnings with the runs they name, one
  entry per known failure (or per identical message) instead of one per run;
  excluded runs are not warnings (the runs table says why they are out);
- ``group_trees``: the tree prefix of each hypothesis among those shown with
  it (the ruled-out rows are folded away from the others);
- ``suggested``: the suggestions' commands, for the best ones shown and the rest folded;
- ``first_screen``: the part of a comment above its first fold.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

FOLD = "<details>"


def first_screen(body: str) -> str:
    """The comment above its first ``<details>`` (all of it when nothing is folded)."""
    at = body.find(FOLD)
    return body if at < 0 else body[:at]


#: Up to this many ruled-out hypotheses are named in the headline; more are counted.
NAMED_RULED_OUT = 5
#: The comment's first screen lists this many suggestions, the best, and the command that
#: runs them; the rest are folded below them, numbered on, with a command of their own.
SHOWN_SUGGESTIONS = 10
#: Up to this many conflicting, inconclusive or open hypotheses are named in the headline
#: (each conflicting one in a line of its own); past it, one line names this many and counts
#: the rest (the elimination summary lists them all).
NAMED_MOST = 5


def headline(hyps: list[dict], next_level: list[dict], runs: int = 0, finished: bool = False) -> dict:
    """The verdict in one short block: what is confirmed (each with the next level
    under it), what is out (named when few), what is left; ``finished``: nothing
    is left to run, said with how many ``runs`` the verdict rests on."""
    level = {c for x in next_level for c in x["children"]}
    under = {x["parent"]: list(x["children"]) for x in next_level}

    def titles(status: str) -> list[str]:
        return [h["title"] for h in hyps if h["status"] == status]

    out, conflicting, inconclusive = titles("ruled_out"), titles("conflicting"), titles("inconclusive")
    open_ = [h for h in hyps if h["status"] == "open"]
    still = [h["title"] for h in open_ if h["id"] not in level]
    return {
        "confirmed": [{"title": h["title"], "next_level": under.get(h["id"], [])}
                      for h in hyps if h["status"] == "confirmed"],
        "conflicting": conflicting,
        # past NAMED_MOST, the first ones of each (else empty): said with a count of the rest
        "conflicting_named": _first(conflicting),
        "inconclusive": inconclusive,
        "inconclusive_named": _first(inconclusive),
        "ruled_out": len(out),
        "ruled_out_named": out if len(out) <= NAMED_RULED_OUT else [],
        "total": len(hyps),
        "open": still,
        "open_named": _first(still),
        "open_count": len(open_),
        "next_level": [{"parent": x["parent"], "title": x.get("title", x["parent"]),
                        "open": sum(1 for h in open_ if h["id"] in x["children"])} for x in next_level],
        "runs": runs,
        "finished": finished,
        "finished_line": finished_line(bool(titles("confirmed")), runs) if finished else "",
    }


def _first(titles: list[str]) -> list[str]:
    """The first :data:`NAMED_MOST` titles when there are more (else none: all are named)."""
    return titles[:NAMED_MOST] if len(titles) > NAMED_MOST else []


def suggested(inv: Any, suggestions: list, command: Callable[[Any, list], Optional[str]]) -> dict:
    """The commands the comment gives: ``command`` (a function of the investigation and some
    suggestions) of the :data:`SHOWN_SUGGESTIONS` best, and of the rest (None for none)."""
    if len(suggestions) <= SHOWN_SUGGESTIONS:
        return {"command_shown": None, "command_rest": None}
    return {"command_shown": command(inv, suggestions[:SHOWN_SUGGESTIONS]),
            "command_rest": command(inv, suggestions[SHOWN_SUGGESTIONS:])}


def finished_line(confirmed: bool, runs: int) -> str:
    """What the report says when nothing is left to run (``confirmed``: a verdict holds)."""
    if not confirmed:
        return "Nothing left to run."
    return f"Nothing left to run: the verdict holds on {runs} run{'s' if runs != 1 else ''}."


def group_trees(hypotheses: list, folded: set[str]) -> dict[str, str]:
    """Each hypothesis's tree prefix among its own group (shown or folded)."""
    from triage.render.model import _tree

    out: dict[str, str] = {}
    for group in (
        [h for h in hypotheses if h.id not in folded],
        [h for h in hypotheses if h.id in folded],
    ):
        ids = {h.id for h in group}
        # a parent in the other group does not draw a branch here
        fixed = [_Node(h.id, h.parent if h.parent in ids else None) for h in group]
        out.update({h.id: tree for h, tree in _tree(fixed)})
    return out


class _Node:
    __slots__ = ("id", "parent")

    def __init__(self, id: str, parent: Optional[str]) -> None:
        self.id, self.parent = id, parent


def group_warnings(warnings: list, runs: Any, signatures: dict, short: Callable[[str], str],
                   advice: tuple[str, ...] = ()) -> list[dict]:
    """The engine's warnings, each thing said once.

    A warning about one run starts ``RUN (config): `` (or ``run RUN (config):
    ``); those of one kind that say the same (for a known failure: the same
    signature) become one entry naming all their runs.  ``inconclusive-run``
    warnings about excluded runs are dropped: being excluded is a decision,
    shown where the run is listed, not a problem.  A remedy that a suggestion
    already gives as its advice (``advice``) is referred to, not repeated.
    """
    groups: dict[tuple, dict] = {}
    out: list[dict] = []
    for w in warnings:
        run, rest = _run_of(w.message, lambda prefix: runs.head(prefix, short))
        if run is not None and w.kind == "inconclusive-run" and run.excluded:
            continue
        sig = signatures.get(run.signature) if run is not None and run.signature else None
        if sig is not None and w.kind == "inconclusive-run":
            key: tuple = (w.kind, "signature", sig.id)
            text = f"known failure {sig.id} ({sig.cls})" + (f": {sig.meaning}" if sig.meaning else "")
            if sig.remedy:
                said = any(sig.remedy in a for a in advice)
                text += "; remedy: under Suggested next" if said else f"; remedy: {sig.remedy}"
        else:
            key, text = (w.kind, rest), rest
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"kind": w.kind, "message": text, "runs": []}
            out.append(group)
        if run is not None:
            group["runs"].append(run)
    return [_finish(g, short) for g in out]


def _run_of(message: str, find: Callable[[str], Any]) -> tuple[Any, str]:
    at = message.find("): ")
    if at < 0:
        return None, message
    run = find(message[: at + 3])
    return (run, message[at + 3:]) if run is not None else (None, message)


def _finish(group: dict, short: Callable[[str], str]) -> dict:
    """Runs listed once per run id, with the configs it ran; a plain line for terminals."""
    by_run: dict[str, dict] = {}
    for r in group.pop("runs"):
        entry = by_run.setdefault(r.run_id, {"run_id": r.run_id, "url": r.url, "configs": []})
        entry["configs"].append(short(r.config))
    entries = list(by_run.values())
    count = sum(len(e["configs"]) for e in entries)
    names = ", ".join(f"{e['run_id']} ({', '.join(e['configs'])})" for e in entries)
    text = group["message"]
    if entries:
        text = f"{count} runs: {text} — {names}" if count > 1 else f"{names}: {text}"
    return {**group, "count": count, "by_run": entries, "text": text}
