"""What a finished bisect decides: its `decides:` as evidence.

A bisect that found its first bad point (last good and first bad adjacent,
both ends holding) gives each hypothesis its `decides: {first_bad_found:
{HYPOTHESIS: VERDICT}}` names that verdict, with the bisect's answer (and the
runs of its last good and first bad points) as the evidence. Before that it
says nothing; its `decides:` also ranks the bisect's next point among the
suggestions (:mod:`triage.rules.next.suggest`).
"""

from __future__ import annotations

from typing import Iterator, Sequence

from triage.rules.engine.records import BisectState, EvidenceItem
from triage.rules.language.schema import BisectSpec

#: A verdict as a status, in the words `triage check` and the README use.
STATUS = {"confirms": "confirmed", "rules_out": "ruled out", "supports": "supported", "inconclusive": "inconclusive"}


def bisect_evidence(specs: Sequence[BisectSpec], states: Sequence[BisectState]) -> Iterator[EvidenceItem]:
    """The evidence of every finished bisect's `decides:`, in the bisects' order."""
    by_id = {s.id: s for s in states}
    for b in specs:
        found = b.decides.get("first_bad_found")
        state = by_id.get(b.id)
        if not found or state is None or not (state.done and state.ends_ok and state.first_bad):
            continue
        text = f"bisect {state.title}: first bad {state.first_bad}, last good {state.last_good}"
        points = {p.label: p for p in state.points}
        runs = tuple(run for label in (state.last_good, state.first_bad) if label in points
                     for run in points[label].runs[:20])
        for hypothesis, verdict in found.items():
            yield EvidenceItem(hypothesis, f"bisect:{b.id}", verdict, text, runs, summary=text)


def describe(b: BisectSpec) -> str:
    """What a bisect's `decides:` does, in words (`triage check`); empty without one."""
    found = b.decides.get("first_bad_found")
    if not found:
        return ""
    said = ", ".join(f"{h} {STATUS.get(v, v)}" for h, v in found.items())
    return f"bisect {b.id}: its first bad point, once found, decides {said}"
