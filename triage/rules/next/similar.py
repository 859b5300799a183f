"""Knowledge that carries over: hypotheses in other investigations that read alike.

When a hypothesis has no recipe yet, the knowledge base may already hold a
similar one, decided elsewhere by some recipe.  Similarity is rapidfuzz's
token-set and token-sort ratios over the titles (and over title + text when
both have text), with stop words dropped so that "the … in the … image" does
not make every pair alike.  Pure: records in, matches out.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional, Sequence

from rapidfuzz import fuzz, utils

DEFAULT_THRESHOLD = 70.0
STOP_WORDS = frozenset(
    "a an and are as at be by change changes does for from in into is it its of on or over the this that to vs "
    "with".split()
)


@dataclass(frozen=True)
class Decision:
    """How a hypothesis elsewhere was decided: a recipe's prediction or a rule."""

    recipe: Optional[str]
    change: str
    rule: str
    verdict: str
    reason: str
    runs: tuple[str, ...] = ()


@dataclass(frozen=True)
class KnownHypothesis:
    investigation: str
    repo: str
    pr: int
    id: str
    title: str
    text: str
    status: str
    decided_by: tuple[Decision, ...] = ()


@dataclass(frozen=True)
class Match:
    hypothesis: str  # ours
    title: str
    other: KnownHypothesis
    score: float


@lru_cache(maxsize=4096)  # each other hypothesis's words once, not once per hypothesis of ours
def _words(text: str) -> str:
    return " ".join(w for w in utils.default_process(text or "").split() if w not in STOP_WORDS)


def _pair(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    return (fuzz.token_set_ratio(a, b) + fuzz.token_sort_ratio(a, b)) / 2


def similarity(title: str, text: str, other_title: str, other_text: str) -> float:
    """0–100: how alike two hypotheses read."""
    score = _pair(_words(title), _words(other_title))
    if text and other_text:
        score = max(score, _pair(_words(f"{title} {text}"), _words(f"{other_title} {other_text}")))
    return score


def find_similar(ours: Sequence[Any], others: Sequence[KnownHypothesis], *, threshold: float = DEFAULT_THRESHOLD,
                 per_hypothesis: int = 3) -> list[Match]:
    """For each of ``ours`` (objects with id, title, text), the most similar
    hypotheses of other investigations scoring at least ``threshold``."""
    out: list[Match] = []
    for h in ours:
        scored = [(similarity(h.title, getattr(h, "text", "") or "", o.title, o.text), o) for o in others]
        scored = [(sc, o) for sc, o in scored if sc >= threshold]
        scored.sort(key=lambda x: (-x[0], x[1].repo, x[1].pr, x[1].id))
        out += [Match(h.id, h.title, o, round(sc, 1)) for sc, o in scored[:per_hypothesis]]
    return out


def view(match: Match) -> dict:
    """A match as the report's view model shows it."""
    o = match.other
    return {
        "hypothesis": match.hypothesis,
        "title": match.title,
        "investigation": o.investigation,
        "repo": o.repo,
        "pr": o.pr,
        "other_id": o.id,
        "other_title": o.title,
        "status": o.status,
        "score": match.score,
        "decided_by": [{"recipe": d.recipe, "change": d.change, "rule": d.rule, "verdict": d.verdict,
                        "reason": d.reason, "runs": list(d.runs)} for d in o.decided_by],
    }
