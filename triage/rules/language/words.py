"""Every condition word in words, and what else it needs to be decided.

One describer for every key of :class:`~triage.rules.language.schema.Condition`:
:func:`phrase` says what a condition expects, in the base form (after "was
predicted to": "recover to good", "come out better than reference") and as
what a run would show ("recovers to good").  :func:`targets` lists what a
condition compares its runs with (a reference, another config's runs, one
run): the runs :mod:`triage.rules.next.suggest` asks for while they have no value.

``PHRASES`` and ``DECIDED_BY`` hold an entry for every key of the schema (a
test checks it): how the key reads, and which runs decide it --

- ``compared``: the runs of what it compares with (:func:`targets`);
- ``own``: more runs of what it selects (a recipe's runs: the recipe is suggested);
- ``bisect``: the bisect's next point (the bisect is suggested);
- ``nested``: the runs its parts need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from triage.rules.language.schema import Condition, Selector


@dataclass(frozen=True)
class Phrase:
    """A condition in words: ``base`` after "was predicted to", ``does`` as a run's result."""

    base: str
    does: str


def _third(verb: str) -> str:
    if verb == "have":
        return "has"
    if verb.endswith(("s", "sh", "ch", "x")):
        return verb + "es"
    return verb + "s"


def clause(verb: str, rest: str = "") -> Phrase:
    """``clause("recover", "to good")``: "recover to good" / "recovers to good"."""
    tail = f" {rest}" if rest else ""
    return Phrase(verb + tail, _third(verb) + tail)


def _joined(parts: list[Phrase], word: str) -> Phrase:
    if len(parts) == 1:
        return parts[0]
    if word == "or":
        return Phrase("either " + " or ".join(p.base for p in parts), "either " + " or ".join(p.does for p in parts))
    return Phrase(" and ".join(p.base for p in parts), " and ".join(p.does for p in parts))


def _listed(value: Union[str, list[str]]) -> str:
    return value if isinstance(value, str) else " + ".join(value)


def who(target: Union[str, Selector]) -> str:
    """A comparison's other side in words: a reference's name, or the runs a selector picks."""
    if isinstance(target, str):
        return target
    bits = []
    if target.config is not None:
        bits.append(_listed(target.config))
    if target.run is not None:
        bits.append(f"run {_listed(target.run)}")
    if target.provenance:
        bits.append("runs with " + ", ".join(f"{k}={v}" for k, v in target.provenance.items()))
    return " ".join(bits) or "the other runs"


def _value(v: Any) -> str:
    """A bound as written: a reference's name, "gate", or a number (1470, not 1470.0)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


def _bound(b: Any) -> str:
    return "the gate" if b == "gate" else _value(b)


def _what(c: Condition) -> tuple[str, str]:
    """The verb and the subject of a comparison: "come out", or "have p99_ms" for a metric of its own."""
    return ("have", f"{c.metric} ") if c.metric is not None else ("come", "out ")


def _compared(sym: str) -> Callable[[Condition, Any], Phrase]:
    def say(c: Condition, v: Any) -> Phrase:
        verb, subject = _what(c)
        margin = f" (margin {c.margin})" if c.margin is not None else ""
        return clause(verb, f"{subject}{sym} {who(v)}{margin}")
    return say


def _threshold(sym: str) -> Callable[[Condition, Any], Phrase]:
    def say(c: Condition, v: Any) -> Phrase:
        verb, subject = _what(c)
        return clause(verb, f"{subject}{sym} {_value(v)}")
    return say


def _between(c: Condition, v: Any) -> Phrase:
    verb, subject = _what(c)
    return clause(verb, f"{subject}between {_value(v[0])} and {_value(v[1])}")


def _gate(verb: str) -> Callable[[Condition, Any], Phrase]:
    def say(c: Condition, v: Any) -> Phrase:
        of = f" on {c.metric}" if c.metric is not None else ""
        return clause(verb, f"{_bound(v)}{of}")
    return say


def _status_words(c: Condition) -> str:
    s = c.status
    return "" if s is None else (s if isinstance(s, str) else " or ".join(s))


def _status(c: Condition, v: Any) -> Optional[Phrase]:
    if c.count is not None or c.distinct is not None:
        return None  # said with the count
    return clause("come", f"out {_status_words(c)}")


def _count(c: Condition, v: Any) -> Phrase:
    status = _status_words(c)
    runs = f"≥ {v} valid run{'s' if v != 1 else ''}"
    return clause("come", f"out {status} in {runs}") if status else clause("have", runs)


def _distinct(c: Condition, v: Any) -> Phrase:
    status = _status_words(c)
    n = c.at_least if isinstance(c.at_least, (int, float)) else 1
    values = f"on ≥ {int(n)} distinct {v} values"
    return clause("come", f"out {status} {values}") if status else clause("have", f"runs {values}")


def _at_least(c: Condition, v: Any) -> Optional[Phrase]:
    return None if c.distinct is not None else _threshold("≥")(c, v)


def _recovers(c: Condition, v: Any) -> Phrase:
    return clause("recover", "to good") if v else Phrase("not recover", "does not recover")


def _on_bisect(c: Condition, v: Any) -> Phrase:
    if c.done is not None:
        return clause("have", f"bisect {v} {'converged' if c.done else 'not converged yet'}")
    if c.first_bad is not None:
        return clause("have", f"bisect {v} find {c.first_bad} as its first bad point")
    return clause("have", f"bisect {v} find {c.last_good} as its last good point")


def _nested(word: str) -> Callable[[Condition, Any], Phrase]:
    def say(c: Condition, v: Any) -> Phrase:
        return _joined([phrase(sub) for sub in v], "or" if word == "any" else "and")
    return say


def _not(c: Condition, v: Any) -> Phrase:
    inner = phrase(v)
    return Phrase(f"not {inner.base}", f"does not {inner.base}")


def _said_elsewhere(c: Condition, v: Any) -> None:
    """A key that qualifies another (said with it, or with the runs)."""
    return None


def _with_runs(c: Condition, v: Any) -> Phrase:
    return clause("have", f"≥ {v} valid runs")


#: How each key of a condition reads (None: said with another key).
PHRASES: dict[str, Callable[[Condition, Any], Optional[Phrase]]] = {
    "config": _said_elsewhere, "run": _said_elsewhere, "provenance": _said_elsewhere,  # see _selection
    "status": _status,
    "metric": _said_elsewhere,  # "have METRIC ..." in each comparison
    "at_least": _at_least,
    "below": _threshold("<"),
    "between": _between,
    "same_as": _compared("≈"),
    "differs_from": _compared("≠"),
    "recovers": _recovers,
    "passes": _gate("pass"),
    "fails": _gate("fail"),
    "better_than": _compared("better than"),
    "worse_than": _compared("worse than"),
    "no_worse_than": _compared("no worse than"),
    "margin": _said_elsewhere,  # with the comparison it is the margin of
    "min_runs": _with_runs,
    "count": _count,
    "distinct": _distinct,
    "bisect": _on_bisect,
    "first_bad": _said_elsewhere, "last_good": _said_elsewhere, "done": _said_elsewhere,  # with bisect
    "all": _nested("all"),
    "any": _nested("any"),
    "not_": _not,
    "subjects": _said_elsewhere,  # how the per-subject values combine: see _for_subjects
}

#: Which runs decide each key (see the module docstring).
DECIDED_BY: dict[str, str] = {
    "config": "own", "run": "own", "provenance": "own", "status": "own", "metric": "own", "min_runs": "own",
    "count": "own", "distinct": "own", "margin": "compared",
    "at_least": "compared", "below": "compared", "between": "compared", "same_as": "compared",
    "differs_from": "compared", "recovers": "compared", "passes": "compared", "fails": "compared",
    "better_than": "compared", "worse_than": "compared", "no_worse_than": "compared",
    "bisect": "bisect", "first_bad": "bisect", "last_good": "bisect", "done": "bisect",
    "all": "nested", "any": "nested", "not_": "nested", "subjects": "own",
}


def _for_subjects(v: Any) -> str:
    """Which subjects a condition must hold for (its own ``subjects:``)."""
    if v == "all":
        return "for every subject"
    if v == "any":
        return "for some subject"
    return f"for at least {v.at_least} subjects"


def _selection(c: Condition, own: Optional[str]) -> str:
    """The runs a condition picks, when they are not the ones in hand (``own``: a recipe's)."""
    if c.config is None and c.run is None and not c.provenance:
        return ""
    if c.config == own and c.run is None and not c.provenance:
        return ""
    return who(Selector(config=c.config, run=c.run, provenance=c.provenance))


def phrase(c: Condition, own: Optional[str] = None) -> Phrase:
    """What the condition expects, in words; ``own``: the config whose runs are in hand (not named)."""
    parts = []
    for key in PHRASES:
        value = getattr(c, key)
        if value is None:
            continue
        said = PHRASES[key](c, value)
        if said is not None:
            parts.append(said)
    out = _joined(parts, "and") if parts else clause("have", "a valid run")
    picked = _selection(c, own)
    if picked:
        out = Phrase(f"{out.base} (in {picked})", f"{out.does} (in {picked})")
    if c.subjects is not None:
        out = Phrase(f"{out.base} {_for_subjects(c.subjects)}", f"{out.does} {_for_subjects(c.subjects)}")
    return out


Target = tuple[str, str]  # ("ref", name) | ("config", name) | ("run", id)


def _side(v: Any) -> list[Target]:
    """The other side of a comparison: a reference by name, or a selector's configs and runs."""
    if isinstance(v, str):
        return [] if v == "gate" else [("ref", v)]
    if isinstance(v, (int, float)):
        return []
    if isinstance(v, Selector):
        if v.config is not None:
            return [("config", x) for x in ([v.config] if isinstance(v.config, str) else v.config)]
        if v.run is not None:
            return [("run", x) for x in ([v.run] if isinstance(v.run, str) else v.run)]
    return []


def targets(c: Condition) -> list[Target]:
    """What a condition compares its runs with, nested conditions too: ("ref", name),
    ("config", name) or ("run", id), in the order written, each once."""
    out: list[Target] = []
    for key in ("at_least", "below", "same_as", "differs_from", "passes", "fails", "better_than", "worse_than",
                "no_worse_than"):
        v = getattr(c, key)
        if v is not None and not (key == "at_least" and c.distinct is not None):
            out += _side(v)
    for v in c.between or ():
        out += _side(v)
    if c.recovers is not None:
        out += [("ref", "good"), ("ref", "bad")]
    for sub in c.parts():
        out += targets(sub)
    return list(dict.fromkeys(out))
