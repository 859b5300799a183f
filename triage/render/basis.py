"""What each of the view's long lists is made of, as a digest.

The view's hypotheses, experiments, bisects and warnings are each made from a part
of the evaluation (the evidence and statuses; the recipes' states, the evidence that
decides them and the confounds, which say what a shown run's reading adds; the
bisects; the warnings), from the definitions, and from the runs they name.
:func:`digests` sums up the first two for each list.  A list kept from an earlier
view whose digest is this evaluation's is the list a build would make, as long as the
runs it names are what they were: that the caller knows
(:func:`triage.views.evaluate_kept` keeps a list only while every run recorded since
was added, none written again or deleted).
"""

from __future__ import annotations

import hashlib
from typing import Any

from msgspec.msgpack import encode

from triage.render.model import LONG, RUN_REFS
from triage.rules.engine.keys import text_digest


def digests(bundle: Any, ev: Any) -> dict[str, str]:
    """Each long list's name (:data:`triage.render.model.LONG`) -> the digest of what it is made of."""
    spec = bundle.spec
    shape = (spec.config_prefix or "", RUN_REFS)  # how a config is shortened, how many runs are named
    # an item's key says its hypothesis, rule, verdict, runs and reason
    evidence = _digest([(e.key, e.flags, e.summary) for e in ev.evidence])
    warnings = _digest([(w.kind, w.message) for w in ev.warnings])
    made = {
        "hypotheses": (shape, [(h.id, h.title, h.text, h.parent) for h in bundle.hypotheses],
                       sorted(ev.statuses.items()), evidence),
        "experiments": (shape, [(r.id, r.change) for r in bundle.recipes], evidence, _recipes(ev), _confounds(ev)),
        "bisects": (shape, [_bisect(b) for b in ev.bisects]),
        "warnings": (shape, warnings, [s.advice for s in ev.suggestions if s.advice]),
        "engine_warnings": warnings,
    }
    assert set(made) == set(LONG)
    return {name: _digest(parts) for name, parts in made.items()}


def _digest(data: Any) -> str:
    # SHA-256, as the run digests (triage.rules.engine.keys): a CPU's SHA instructions make it two
    # to three times BLAKE2b's speed (the interpreter's is the reference code), and the recipes'
    # and confounds' lists of a wide investigation at a million runs are 16 MB to hash each add-run
    return hashlib.sha256(encode(data)).hexdigest()[:32]


def _recipes(ev: Any) -> list:
    """Each recipe's state as its row reads it."""
    # its valid runs as a digest: a recipe's config's keys are read only for what looks into them
    return [(st.recipe, st.state, st.why, st.needed, st.confounded, st.shown, len(st.runs), text_digest(st.valid))
            for st in ev.recipes]


def _confounds(ev: Any) -> list:
    """The confounds, which say what each shown run's reading adds."""
    plain = getattr(ev.confounds, "plain", None)
    if plain is not None:
        return plain()
    return [(c.run, c.recipe, c.key, c.value, c.base_value, c.base_run, c.declared) for c in ev.confounds]


def _bisect(b: Any) -> tuple:
    points = [(p.label, p.state, p.value, p.reason, list(p.runs[:RUN_REFS]), len(p.runs)) for p in b.points]
    return (b.id, b.title, b.axis, b.last_good, b.first_bad, b.next, list(b.remaining), b.steps, list(b.notes),
            b.ends, b.ends_ok, b.command, b.done, points)
