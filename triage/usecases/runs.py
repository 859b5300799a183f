"""Runs judged by hand: exclude one (it stays in the report but decides nothing), include it
again, delete a mistaken one (kept in the history).

``triage runs exclude|include`` and the ``/triage exclude|include`` comment
commands both call these; ``triage runs delete`` calls :func:`delete`.
"""

from __future__ import annotations

from typing import Any, Optional

from triage.errors import InputError


def find_run(s: Any, pr: Optional[int], repo: Optional[str], run: str, config: Optional[str]) -> tuple[Any, list]:
    """The investigation and the legs of ``run`` (every leg unless ``config``); exactly one investigation."""
    from triage.kb import store

    invs = [store.find_investigation(s, pr, repo)] if pr is not None else store.list_investigations(s)
    hits = [(inv, r) for inv in invs for r in store.find_runs(s, inv.id, run, config)]
    if not hits:
        leg = f" with config {config}" if config else ""
        raise InputError(f"no run {run}{leg} in the knowledge base")
    if len({inv.id for inv, _ in hits}) > 1:
        raise InputError(f"run {run} is in several investigations: add --pr")
    return hits[0][0], [r for _, r in hits]


def set_excluded_in(s: Any, inv: Any, run: str, config: Optional[str], excluded: bool,
                    because: Optional[str]) -> list[tuple[str, str]]:
    """Exclude (or include again) the legs of ``run`` in the investigation ``inv``, in the
    session ``s``, without evaluating; the (run id, config) of each leg."""
    _, hits = find_run(s, inv.pr, inv.repo, run, config)
    return _set(s, hits, excluded, because)


def _set(s: Any, hits: list, excluded: bool, because: Optional[str]) -> list[tuple[str, str]]:
    from triage.kb import store

    for r in hits:
        store.upsert_run(s, r.investigation_id, store.RunInput(
            run_id=r.run_id, config=r.config, excluded=excluded, excluded_reason=because if excluded else ""))
    return [(r.run_id, r.config) for r in hits]


def set_excluded(url: str, run: str, excluded: bool, because: Optional[str], *, config: Optional[str] = None,
                 pr: Optional[int] = None, repo: Optional[str] = None) -> list[tuple[str, str]]:
    """Exclude (``because`` says why) or include again every leg of ``run`` (one leg with
    ``config``), then evaluate; the (run id, config) of each leg.  ``pr`` (and ``repo``)
    pick the investigation when the run id is in several."""
    from triage import views
    from triage.kb import store

    if excluded and not (because or "").strip():
        raise InputError("--because must say why")
    with store.session(url) as s:
        inv, hits = find_run(s, pr, repo, run, config)
        legs = _set(s, hits, excluded, because)
        views.evaluate(s, inv)
    return legs


def delete(url: str, run: str, because: str, *, config: Optional[str] = None, pr: Optional[int] = None,
           repo: Optional[str] = None) -> tuple[list[tuple[str, str]], dict]:
    """Delete every leg of ``run`` (one leg with ``config``), the record and ``because`` kept in
    the history, then evaluate; the (run id, config) of each leg and the status changes."""
    from triage import views
    from triage.kb import store

    if not because.strip():
        raise InputError("--because must say why")
    with store.session(url) as s:
        inv, hits = find_run(s, pr, repo, run, config)
        store.delete_runs(s, hits, because)
        _, _, changed = views.evaluate(s, inv)
        return [(r.run_id, r.config) for r in hits], changed
