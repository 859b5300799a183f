"""What a user looks up in one investigation: its runs, its bisects, its hypotheses that
other investigations share, its history, its replay (``triage runs list``, ``bisect``,
``similar``, ``history``, ``replay``).  Each evaluates first where what it shows depends on it.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from triage.errors import InputError


def runs(url: str, pr: int, repo: Optional[str], last: Optional[int] = None) -> tuple[list, Optional[str], int]:
    """The investigation's runs in the order recorded (the ``last`` recorded, if given), the prefix
    its configs share (its ``config_prefix``, if any) and how many runs it has."""
    from triage.kb import store

    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        rows = store.listed_runs(s, inv.id, last)
        total = len(rows) if last is None else store.count_runs(s, inv.id)
        prefix = inv.spec.get("config_prefix") if isinstance(inv.spec, dict) else None
    return rows, prefix, total


def runs_json(url: str, pr: int, repo: Optional[str], last: Optional[int] = None) -> Iterator[list[dict]]:
    """The investigation's runs as ``runs list --format json`` shows them (the ``last`` recorded, if
    given), in the order recorded, a batch at a time (:func:`triage.kb.runs.listed_records`)."""
    from triage.kb import store

    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        yield from store.listed_records(s, inv.id, last)


def bisects(url: str, pr: int, repo: Optional[str], ids: Optional[list[str]] = None) -> dict:
    """The investigation's view with its bisects (only those of ``ids``, if given): the stored
    view while nothing it rests on changed, as ``report`` reads it, else evaluated and kept."""
    from triage import views
    from triage.kb import store

    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        model = views.model(s, inv)
    known = [b["id"] for b in model["bisects"]]
    if not known:
        raise InputError(f"{inv.repo}#{inv.pr} has no bisects: add one under bisects: in its rule file")
    unknown = [i for i in ids or [] if i not in known]
    if unknown:
        raise InputError(f"--id {unknown[0]!r}: no such bisect; known: {', '.join(known)}")
    model["bisects"] = [b for b in model["bisects"] if not ids or b["id"] in ids]
    return model


def similar(url: str, pr: int, repo: Optional[str], hypotheses: Optional[list[str]] = None, *,
            undecided: bool = False, min_score: float = 70.0) -> tuple[list, list[dict]]:
    """The hypotheses to match (``hypotheses``; else with ``undecided`` every one not decided
    yet; else the open ones no recipe tests) and what reads like them in other
    investigations, scored ``min_score`` or more (:func:`triage.views.seen_elsewhere`)."""
    from triage import views
    from triage.kb import store
    from triage.rules.engine.evaluate import UNDECIDED

    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        bundle, ev, _ = views.evaluate(s, inv)
        known = {h.id: h for h in bundle.hypotheses}
        for h in hypotheses or []:
            if h not in known:
                raise InputError(f"--hypothesis {h!r}: no such hypothesis in {inv.repo}#{inv.pr}")
        if hypotheses:
            targets = [known[h] for h in hypotheses]
        elif undecided:
            targets = [h for h in bundle.hypotheses if ev.statuses.get(h.id) in UNDECIDED]
        else:
            targets = [h for h in bundle.hypotheses if h.id in ev.untested]
        matches = views.seen_elsewhere(s, inv, targets, min_score) if targets else []
    return targets, matches


def history(url: str, pr: int, repo: Optional[str]) -> dict[str, list[Any]]:
    """The investigation's history, evaluated first: each status change (``changes``), the
    evidence no longer derived (``retired``), the runs deleted (``deleted_runs``) and the
    commands taken from comments (``commands``), oldest first."""
    from triage import views
    from triage.kb import store

    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        views.evaluate(s, inv)
        return {"changes": store.status_history(s, inv.id),
                "retired": [e for e in store.evidence_history(s, inv.id) if e.retired_at is not None],
                "deleted_runs": store.run_deletions(s, inv.id),
                "commands": store.commands_of(s, inv.id)}


def replay(url: str, pr: int, repo: Optional[str], start: list[str], targets: dict[str, str],
           bisects: dict[str, str], leave_out: list[str], *, orders: int, seed: int) -> tuple[Any, str]:
    """The investigation replayed from the runs ``start`` until ``targets`` (hypothesis: status)
    and ``bisects`` (bisect: first bad point) hold (:func:`triage.rules.next.replay.replay`),
    and the prefix its configs share.  Nothing is written."""
    from triage.kb import store
    from triage.rules.next.replay import replay as run_replay

    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        bundle = store.load_bundle(s, inv)
    found = run_replay(bundle, start, targets, bisects, leave_out, orders=orders, seed=seed)
    return found, bundle.spec.config_prefix or ""
