"""``triage autopilot``: start the top suggestion through workflow_dispatch, within a budget.

Opt-in: the investigation says ``autopilot: {max_runs: N, max_cost: C}``, or
its PR carries the label ``triage:autopilot`` (then ``max_runs`` is
:data:`DEFAULT_MAX_RUNS`).  One step, after each evaluation:

1. a dispatch whose run is recorded is done (its workflow run id, or a run
   of its config recorded after it); while one is in flight, wait;
2. stop when the verdict holds: every bisect is done and a confirmed
   hypothesis has no open child that a suggestion could decide;
3. stop at the budget (dispatches made, their summed cost);
4. never twice for one evaluation (the runs it was decided on);
5. the best suggestion that declares ``dispatch:`` and whose last run is not
   a known failure waiting for its remedy is started:
   ``POST /repos/{repo}/actions/workflows/{workflow}/dispatches`` with the
   inputs filled in (``{ids}``, ``{point}``, ``{axis}``, each axis key), and
   recorded in the knowledge base.

A dry run sends nothing and needs no network: it says what it would start
and why, also where autopilot is not enabled.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence
from urllib.parse import quote

from triage.github.client import GitHubClient, GitHubNetworkError, GitHubPermissionError, GitHubServerError

__all__ = ["DEFAULT_MAX_RUNS", "LABEL", "Step", "fingerprint", "run_for"]

DEFAULT_MAX_RUNS = 5
LABEL = "triage:autopilot"


@dataclass
class Step:
    """What one autopilot step did: ``started``, ``would-start``, ``waiting``,
    ``done``, ``budget``, ``disabled``, ``nothing`` or ``uncertain``."""

    action: str
    lines: list[str] = field(default_factory=list)
    dispatch: Optional[dict] = None  # what was (or would be) sent

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def fingerprint(runs: Sequence[Any]) -> str:
    """The runs an evaluation rests on, as one hash."""
    rows = sorted((r.key, r.status, sorted(r.metrics.items()), sorted(r.provenance.items()), r.excluded,
                   r.signature) for r in runs)
    return hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()[:16]


def _fill(value: Any, fill: dict[str, str]) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    for key, v in fill.items():
        text = text.replace("{" + key + "}", v)
    return text


def _target(bundle: Any, s: Any) -> tuple[Any, dict[str, str]]:
    """The ``dispatch:`` that starts a suggestion, and what fills its inputs."""
    recipes = {r.id: r for r in bundle.recipes}
    if s.kind == "bisect":
        spec = next((b for b in bundle.bisects if f"bisect:{b.id}" == s.recipe), None)
        if spec is None or spec.dispatch is None:
            return None, {}
        axis = [spec.axis] if isinstance(spec.axis, str) else list(spec.axis)
        point = spec.points[spec.point_labels().index(s.point)]
        values = [point] if isinstance(point, str) else list(point)
        return spec.dispatch, {"point": s.point, "axis": " + ".join(axis), **dict(zip(axis, values))}
    own = recipes.get(s.recipe)
    if own is not None and own.dispatch is not None:
        return own.dispatch, {"ids": s.recipe, "id": s.recipe}
    if s.kind == "base":  # the base of a recipe: started the way the recipe is
        waiting = next((r for r in bundle.recipes if r.dispatch is not None and r.base == s.recipe), None)
        if waiting is not None:
            return waiting.dispatch, {"ids": s.recipe, "id": s.recipe}
    return None, {}


def _reason(s: Any, bundle: Any) -> str:
    if s.kind == "bisect":
        spec = next((b for b in bundle.bisects if f"bisect:{b.id}" == s.recipe), None)
        text = f"it decides the {(spec.title or spec.id) if spec else s.recipe} bisect"
        return text + (f" ({', '.join(s.tests)})" if s.tests else "")
    if s.kind == "base":
        return f"without it {', '.join(s.tests)} cannot be decided"
    return f"it decides {', '.join(s.tests)}" if s.tests else "it may decide through a rule"


def _verdict(bundle: Any, ev: Any) -> Optional[str]:
    """The verdict, when it holds: every bisect done, and a confirmed
    hypothesis none of whose open children a suggestion could decide."""
    if not all(b.done for b in ev.bisects):
        return None
    confirmed = [h for h, st in ev.statuses.items() if st == "confirmed"]
    if not confirmed:
        return None
    parents = {h.id: h.parent for h in bundle.hypotheses}

    def under(h: str, root: str) -> bool:
        while parents.get(h) is not None:
            h = parents[h]
            if h == root:
                return True
        return False

    reachable = {h for s in ev.suggestions for h in s.tests}
    if any(under(h, c) for h in reachable for c in confirmed):
        return None
    open_children = sorted(h for h, st in ev.statuses.items() if st != "confirmed" and st != "ruled_out"
                           and any(under(h, c) for c in confirmed))
    text = f"the verdict holds: {', '.join(confirmed)} confirmed"
    if ev.bisects:
        text += "; " + "; ".join(f"bisect {b.id}: first bad {b.first_bad}" for b in ev.bisects)
    if open_children:
        text += f" ({', '.join(open_children)} still open: no recipe decides them)"
    return text


def _describe(d: dict) -> str:
    what = d["suggestion"] if d["kind"] != "bisect" else f"{d['suggestion']} at {d['point']}"
    inputs = " ".join(f"-f {k}={v}" for k, v in d["inputs"].items())
    return f"{what}: {d['reason']} (workflow {d['workflow']} on {d['ref']}" + (f", {inputs})" if inputs else ")")


def run_for(db: Any, investigation_id: str, client: Optional[GitHubClient], dry_run: bool = False,
            only: Optional[Sequence[str]] = None) -> Step:
    """One autopilot step for an investigation, after an evaluation.

    ``only``: start only one of these suggestions (recipe ids, ``bisect:ID``), the best of them.
    ``db``: a database URL (a session of its own, committed) or an open
    session (the caller commits).  ``client`` may be None for a dry run.
    Raises GitHubError when GitHub refuses the dispatch (nothing recorded);
    a dispatch whose answer was lost (5xx, a dropped connection) is recorded
    as in flight, so that it is never sent twice.
    """
    from triage.kb import store

    if isinstance(db, str):
        with store.session(db) as s:
            return _step(s, investigation_id, client, dry_run, only)
    return _step(db, investigation_id, client, dry_run, only)


def _step(s: Any, iid: str, client: Optional[GitHubClient], dry_run: bool,
          only: Optional[Sequence[str]] = None) -> Step:
    from triage import views
    from triage.kb import store

    inv = store.find_investigation(s, ident=iid)
    # the stored evaluation, with only what changed since worked out again (and kept)
    bundle, ev, _ = views.evaluate(s, inv, runs=True)
    lines: list[str] = []
    budget = bundle.spec.autopilot
    max_runs, max_cost = (budget.max_runs, budget.max_cost) if budget else (DEFAULT_MAX_RUNS, None)
    enabled = budget is not None or _labelled(bundle.spec, iid, client, dry_run, lines)
    waiting = _in_flight(s, iid, bundle, dry_run)
    if waiting:
        return Step("waiting", lines + [waiting])
    verdict = _verdict(bundle, ev)
    if verdict:
        return Step("done", lines + [verdict])
    made = [d for d in store.dispatches(s, iid)]
    spent, cost = len(made), sum(d.cost for d in made)
    if spent >= max_runs or (max_cost is not None and cost >= max_cost):
        said = f"{spent} of {max_runs} runs" + (f", cost {cost:g} of {max_cost:g}" if max_cost is not None else "")
        return Step("budget", lines + [f"the budget is spent ({said}): nothing more is started"])
    key = fingerprint(bundle.runs)
    if any(d.evaluation == key for d in made):
        return Step("nothing", lines + ["a run was already started for this evaluation: waiting for a new result"])
    chosen = _choose(bundle, ev, only, cost, max_cost, key, lines)
    if chosen is None:
        named = f" named ({', '.join(only)})" if only else ""
        return Step("nothing", lines + [f"nothing to start: no suggestion{named} can be dispatched"])
    if dry_run or not enabled:
        lines.append(f"would start {_describe(chosen)}")
        return Step("would-start" if enabled else "disabled", lines, chosen)
    assert client is not None
    return _dispatch(s, iid, bundle.spec, client, chosen, lines)


def _labelled(spec: Any, iid: str, client: Optional[GitHubClient], dry_run: bool, lines: list[str]) -> bool:
    """With no ``autopilot:`` in the rule file: whether the PR carries the label (not looked up in a
    dry run); why not, in ``lines``."""
    if dry_run or client is None:
        lines.append(f"autopilot is not enabled for {iid}: the rule file has no autopilot: "
                     f"(the PR label {LABEL} is not looked up in a dry run)")
        return False
    pull = client.get_json(f"/repos/{spec.repo}/pulls/{spec.pr}")
    names = {lb.get("name") for lb in (pull.get("labels") or []) if isinstance(lb, dict)}
    if LABEL not in names:
        lines.append(f"autopilot is not enabled for {iid}: no autopilot: in the rule file and no "
                     f"{LABEL} label on {spec.repo}#{spec.pr}")
        return False
    return True


def _in_flight(s: Any, iid: str, bundle: Any, dry_run: bool) -> Optional[str]:
    """What a dispatch still in flight is waiting for, if one is (its run recorded closes it, but
    not in a dry run, which writes nothing)."""
    from triage.kb import store

    if not dry_run:
        in_flight = store.close_dispatches(s, iid, lambda d: _configs(bundle, d))
    else:
        in_flight = [d for d in store.dispatches(s, iid) if d.done_at is None]
    if not in_flight:
        return None
    d = in_flight[0]
    return (f"waiting for {d.suggestion}" + (f" at {d.point}" if d.point else "")
            + f" (started {d.at:%Y-%m-%d %H:%M}" + (f", run {d.run_id}" if d.run_id else "")
            + "): one run in flight at a time")


def _choose(bundle: Any, ev: Any, only: Optional[Sequence[str]], cost: float, max_cost: Optional[float],
            key: str, lines: list[str]) -> Optional[dict]:
    """The best suggestion that can be dispatched within the budget; why each one before it was
    passed over, in ``lines``."""
    for sug in [x for x in ev.suggestions if not only or x.recipe in only]:
        if sug.blocked:
            lines.append(f"passed over {sug.recipe}: fix first: {sug.blocked}")
            continue
        target, fill = _target(bundle, sug)
        if target is None:
            lines.append(f"passed over {sug.recipe}: no dispatch: beside its run:")
            continue
        c = next((r.cost for r in bundle.recipes if r.id == sug.recipe), None) or 1.0
        if max_cost is not None and cost + c > max_cost:
            lines.append(f"passed over {sug.recipe}: its cost {c:g} would go beyond max_cost {max_cost:g}")
            continue
        return {"suggestion": sug.recipe, "kind": sug.kind, "point": sug.point, "workflow": target.workflow,
                "ref": target.ref, "inputs": {k: _fill(v, fill) for k, v in target.inputs.items()},
                "cost": c, "reason": _reason(sug, bundle), "evaluation": key}
    return None


def _dispatch(s: Any, iid: str, spec: Any, client: GitHubClient, chosen: dict, lines: list[str]) -> Step:
    """Start ``chosen`` through workflow_dispatch and record it (also when GitHub's answer was lost)."""
    from triage.kb import models as m
    from triage.kb import store

    path = f"/repos/{spec.repo}/actions/workflows/{quote(chosen['workflow'], safe='')}/dispatches"
    body = {"ref": chosen["ref"], "inputs": chosen["inputs"], "return_run_details": True}
    note = None
    run_id = url = None
    try:
        resp = client.request("POST", path, json=body, retry=False)
    except GitHubPermissionError as err:
        raise GitHubPermissionError(f"GitHub refused the workflow dispatch (403): the token needs `actions: write` "
                                    f"({err.github_message or 'no message'})", status=403) from None
    except (GitHubServerError, GitHubNetworkError) as err:
        if isinstance(err, GitHubNetworkError) and not err.maybe_sent:
            raise  # never reached GitHub: nothing started, nothing recorded
        note = f"GitHub's answer was lost ({err.message}): it may have started; waiting for a run of it"
    else:
        if resp.status_code == 200 and resp.content:
            data = client.json(resp)
            run_id = str(data["workflow_run_id"]) if data.get("workflow_run_id") else None
            url = data.get("html_url")
    store.record_dispatch(s, m.Dispatch(investigation_id=iid, suggestion=chosen["suggestion"], kind=chosen["kind"],
                                        point=chosen["point"], workflow=chosen["workflow"], ref=chosen["ref"],
                                        inputs=chosen["inputs"], cost=chosen["cost"], reason=chosen["reason"],
                                        evaluation=chosen["evaluation"], at=store.now(), run_id=run_id, url=url,
                                        note=note))
    chosen["run_id"], chosen["url"] = run_id, url
    if note:
        return Step("uncertain", lines + [f"started? {_describe(chosen)}", note], chosen)
    return Step("started", lines + [f"started {_describe(chosen)}" + (f": run {run_id}" if run_id else "")], chosen)


def _configs(bundle: Any, d: Any) -> set[str]:
    """The configs whose new run answers a dispatch that GitHub gave no run id for."""
    if d.kind != "bisect":
        return {d.suggestion}
    spec = next((b for b in bundle.bisects if f"bisect:{b.id}" == d.suggestion), None)
    if spec is None or spec.config is None:
        return {r.config for r in bundle.runs} | {d.inputs.get("configs", "")}
    return {spec.config} if isinstance(spec.config, str) else set(spec.config)
