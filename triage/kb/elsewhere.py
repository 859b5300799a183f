"""What other investigations decided, for "Seen elsewhere" and ``triage similar``.

Two steps, each a query whose count does not grow with the investigations:
every other investigation's hypotheses (id, title, text, stored status), which
the caller scores for similarity; then, for the few that match, the evidence
that decided them and their investigations' recipes.  No other
investigation's evidence is read unless one of its hypotheses matched.
"""

from __future__ import annotations

from typing import Any, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from triage.kb import tables


def known_hypotheses(s: Session, exclude: str) -> list[Any]:
    """Every other investigation's hypotheses with their stored status, in one
    query; what decided them is read by :func:`decisions_of` for the few that
    match, so nothing here grows with other investigations' evidence."""
    from triage.rules.next.similar import KnownHypothesis

    h, i = tables.Hypothesis, tables.Investigation
    q = (select(i.c.id, i.c.repo, i.c.pr, h.c.id, h.c.title, h.c.spec, h.c.status)
         .join(i, i.c.id == h.c.investigation_id).where(h.c.investigation_id != exclude)
         .order_by(i.c.repo, i.c.pr, h.c.position))
    return [KnownHypothesis(iid, repo, pr, hid, title, (spec or {}).get("text", ""), status)
            for iid, repo, pr, hid, title, spec, status in s.execute(q)]


def decisions_of(s: Session, known: Sequence[Any]) -> list[Any]:
    """``known`` hypotheses with the evidence that decided them (the engine's
    last evaluation of their investigation): two queries over the evidence and
    recipes of those investigations only."""
    from dataclasses import replace

    from sqlalchemy import tuple_

    from triage.rules.next.similar import Decision

    if not known:
        return []
    deciding = {"ruled_out": ("rules_out",), "confirmed": ("confirms",), "conflicting": ("rules_out", "confirms")}
    pairs = list({(k.investigation, k.id) for k in known})
    invs = sorted({k.investigation for k in known})
    e, r = tables.Evidence, tables.Recipe
    recipes = {(iid, rid): spec for iid, rid, spec in
               s.execute(select(r.c.investigation_id, r.c.id, r.c.spec).where(r.c.investigation_id.in_(invs)))}
    q = (select(e.c.investigation_id, e.c.hypothesis_id, e.c.rule_id, e.c.verdict, e.c.reason, e.c.runs, e.c.flags)
         .where(tuple_(e.c.investigation_id, e.c.hypothesis_id).in_(pairs), e.c.retired_at.is_(None),
                e.c.verdict != "inconclusive")
         .order_by(e.c.pk))
    by_h: dict[tuple[str, str], list] = {}
    for iid, hid, rule_id, verdict, reason, runs, flags in s.execute(q):
        if {"superseded", "invalid-run"} & set(flags):
            continue
        by_h.setdefault((iid, hid), []).append((rule_id, verdict, reason, runs))
    out = []
    for k in known:
        wanted = deciding.get(k.status, ("supports",))
        decisions = []
        for rule_id, verdict, reason, runs in by_h.get((k.investigation, k.id), []):
            if verdict not in wanted:
                continue
            configs = [x.partition("/")[2] for x in runs]
            recipe = rule_id.partition(":")[2] if rule_id.startswith("predicts:") else next(
                (c for c in configs if (k.investigation, c) in recipes), None)
            change = recipes.get((k.investigation, recipe), {}).get("change", "") if recipe else ""
            decisions.append(Decision(recipe, change, rule_id, verdict, reason, tuple(runs)))
        out.append(replace(k, decided_by=tuple(decisions)))
    return out
