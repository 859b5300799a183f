"""What people judge by hand: a bisect point marked good or bad, manual evidence on a hypothesis.

``triage bisect mark`` and ``triage evidence add`` call these, and so do the
``/triage mark`` and ``/triage evidence`` comment commands.  Each records,
evaluates again and returns the statuses that changed (hypothesis id ->
(before, after)).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from triage.errors import InputError

def check_mark(verdict: str, because: str) -> None:
    if verdict not in ("good", "bad"):
        raise InputError(f"verdict {verdict!r}: expected good or bad")
    _check_because(because)


def check_evidence(verdict: str, because: str) -> None:
    from triage.rules.language.schema import THEN_ALIASES

    if verdict not in THEN_ALIASES:
        raise InputError(f"--verdict {verdict!r}: expected rules_out, confirms, supports or inconclusive")
    _check_because(because)


def _check_because(because: str) -> None:
    if not because.strip():
        raise InputError("--because must say why")


def mark_in(s: Any, iid: str, bisect: str, point: str, verdict: str, because: str, author: Optional[str]) -> str:
    """Mark a bisect point in the session ``s`` (not evaluated); what was done, in a few words."""
    from triage.kb import store

    check_mark(verdict, because)
    store.add_bisect_mark(s, iid, bisect, point, verdict, because, author)
    return f"marked {bisect} {point} {verdict} (manual)"


def evidence_in(s: Any, iid: str, hypothesis: str, verdict: str, because: str, author: Optional[str],
                runs: Sequence[str] = (), source: str = "cli") -> str:
    """Record manual evidence in the session ``s`` (not evaluated); what was done, in a few words."""
    from triage.kb import store
    from triage.rules.language.schema import THEN_ALIASES

    check_evidence(verdict, because)
    store.add_manual_evidence(s, iid, hypothesis, THEN_ALIASES[verdict], because, author, list(runs), source=source)
    return f"recorded manual evidence for {hypothesis}: {THEN_ALIASES[verdict]}"


def mark(url: str, pr: int, repo: Optional[str], bisect: str, point: str, verdict: str, because: str,
         author: Optional[str] = None) -> tuple[str, dict]:
    """Judge a bisect point by hand, as git bisect good|bad does; what was done and what changed."""
    check_mark(verdict, because)
    return _record(url, pr, repo, lambda s, iid: mark_in(s, iid, bisect, point, verdict, because, author))


def evidence(url: str, pr: int, repo: Optional[str], hypothesis: str, verdict: str, because: str,
             author: Optional[str] = None, runs: Sequence[str] = ()) -> tuple[str, dict]:
    """Record manual evidence (a code reading, a config diff); what was done and what changed."""
    check_evidence(verdict, because)
    return _record(url, pr, repo, lambda s, iid: evidence_in(s, iid, hypothesis, verdict, because, author, runs))


def _record(url: str, pr: int, repo: Optional[str], add: Callable[[Any, str], str]) -> tuple[str, dict]:
    from triage import views
    from triage.kb import store

    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        said = add(s, inv.id)
        _, _, changed = views.evaluate(s, inv)
    return said, changed
