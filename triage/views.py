"""An investigation's view model: the stored one while what it was derived from holds, else
an evaluation that reuses the stored pieces, kept for the next reader.

What ``triage report`` and ``triage post`` show, and what the dashboard's pages show:
on an unchanged knowledge base a view costs a few indexed queries
(:mod:`triage.kb.snapshot`), not an evaluation; after new runs, the pieces that read
them are worked out again (:mod:`triage.rules.engine.memo`) and the view is stored anew
(``add-run`` stores it with its own evaluation, :func:`evaluate_kept`; other writers of
runs leave it to its next reader).
Above the knowledge base, the engine and the renderer: it uses all three.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from triage.render.report import DEFAULT_RUNS  # the newest runs a stored view holds


def evaluate(s: Any, inv: Any, *, runs: bool = False, full: bool = False, helper: Any = None,
             keep: bool = True, release: bool = False, view: bool = False) -> tuple[Any, Any, dict]:
    """Evaluate and store, re-deriving only the pieces whose runs changed since the
    last evaluation (``full``: every piece).  ``runs``: the bundle also holds
    every run (for a view of them).  ``helper``: a process working out part of
    the pieces (:mod:`triage.kb.parallel`).  ``keep=False``: evaluate in memory
    from the stored pieces and write nothing (a read-only session).
    ``view``: the caller stores a view of this evaluation next (:func:`evaluate_kept`), which
    replaces the stored one unless it is the same.
    ``release``: the runs read are let go before the evaluation is stored, and a whole
    evaluation without a helper is worked out a few configs' runs at a time
    (:func:`triage.rules.engine.evaluate.work_through`): for a caller that builds no
    view from them, such as an import."""
    return _evaluate(s, inv, runs=runs, full=full, helper=helper, keep=keep, release=release, view=view)[:3]


def _evaluate(s: Any, inv: Any, *, runs: bool, full: bool, helper: Any, keep: bool, release: bool,
              view: bool, meanwhile: Optional[Callable[[], None]] = None) -> tuple[Any, Any, dict, bool]:
    """:func:`evaluate`, and whether its pieces were every one found stored as they are (and no
    others): a whole evaluation of what the stored one was derived from.  ``meanwhile``: work
    to do while a helper finishes its part (:meth:`triage.kb.parallel.Helper.help`)."""
    from triage.kb import pieces, snapshot, store
    from triage.kb.runsource import DbSource
    from triage.rules.engine.evaluate import evaluate
    from triage.rules.engine.memo import configs_again

    if keep:
        store.lock_investigation(s, inv.id)  # evaluations of one investigation take turns
    bundle = store.load_bundle(s, inv, runs=False)
    bundle.source = DbSource(s, inv.id)
    memo = pieces.load(s, inv.id, snapshot.code_stamp(), full=full)
    if not memo.stored and helper is None and release and keep:
        # a whole evaluation whose runs the caller lets go: worked out a config at a time,
        # each config's runs let go when its units are done
        from triage.rules.engine.evaluate import work_through

        work_through(bundle, memo, bundle.source.read_ahead, bundle.source.forget, bundle.source.size)
    elif not memo.stored and helper is None:  # a whole evaluation (or the first): every config's runs
        # read in one query rather than one each (with a helper, half of them are its to read)
        bundle.source.read_ahead(bundle.source.configs())
    if helper is not None:
        helper.help(s, bundle, memo, meanwhile=meanwhile)
    # the configs the pieces to work out again will read, in one query rather than one each
    bundle.source.read_ahead(configs_again(memo, bundle.source.fingerprint))
    if memo.stored:  # the runs recorded since the stored pieces, for the configs they were added to
        bundle.source.recorded_since(lambda: (fp for reads, _ in memo.stored.values() for kind, _, fp in reads
                                              if kind == "c"))
    ev = evaluate(bundle, memo)
    if not keep:
        return bundle, ev, {}, False
    if release:
        bundle.source.release()
    wrote = pieces.save(s, inv.id, memo)
    as_stored = not memo.stored and not wrote
    snapshot.note_definitions(s, inv.id)  # what tells the next report whether it will be whole
    changed = store.store_evaluation(s, inv.id, ev)
    if (memo.worked or changed) and not view:  # the stored view may be of other runs than its fingerprint says
        snapshot.drop(s, inv.id)
    if runs:  # every run in the bundle: it can be rendered after the session ends
        bundle.runs, bundle.source = bundle.source.all(), None
    return bundle, ev, changed, as_stored


def evaluate_kept(s: Any, inv: Any, runs: Optional[int] = DEFAULT_RUNS, *, full: bool = False,
                  helper: Any = None, keep: bool = True, read: bool = True,
                  fp: Optional[str] = None, json: bool = False) -> tuple[Any, Any, dict, dict]:
    """:func:`evaluate`, and the view model with the newest ``runs`` runs, kept
    for the next report of an unchanged knowledge base (unless ``keep=False``).

    A long list of the stored view made of what this one's would be is kept as it is, not
    built again (unless ``full``); ``read=False``: the caller does not read the model, and
    such a list stays :class:`~triage.render.model.Kept` in it.  ``fp``: the knowledge base's
    :func:`~triage.kb.snapshot.fingerprint` for ``inv``, if the caller has it.  ``json``: the
    caller prints the JSON report alone: a stored view that stands is given as its kept JSON
    report, if it has one (:func:`_stored_view`)."""
    from triage.kb import snapshot
    from triage.render.report import build

    stored = keep and runs == DEFAULT_RUNS
    # what the view is derived from: the evaluation changes none of it (runs, manual evidence,
    # definitions), so it is worked out once, for the stored view read or written
    if fp is None:
        fp = snapshot.fingerprint(s, inv.id) if stored else ""
    early: dict = {}

    def meanwhile() -> None:  # a whole evaluation's: it may find every piece stored (see below)
        early["kept"] = _stored_view(s, inv.id, fp, json)

    # the view reads its runs from the source
    bundle, ev, changed, as_stored = _evaluate(s, inv, runs=False, full=full, helper=helper, keep=keep,
                                               release=False, view=stored, meanwhile=meanwhile if stored else None)
    if stored and as_stored:
        # a whole evaluation that found every piece as the stored one: the stored view, if it is
        # of the same runs, rule files and code, is what a view built from it would be.  Read
        # while the helper finished, it stands unless storing the evaluation changed the evidence
        # version (which says whether the view's "seen elsewhere" still holds).
        kept = early.get("kept")
        if "kept" not in early or kept is not None and kept["others"] != snapshot.others(s):
            kept = _stored_view(s, inv.id, fp, json)
        if kept is not None:
            return bundle, ev, changed, kept["model"]
    if not stored:
        return bundle, ev, changed, build(bundle, ev, runs_limit=runs)
    from triage.render.basis import digests

    made = snapshot.basis(s, inv.id, digests(bundle, ev))
    same = [] if full else _keepable(s, inv.id, ev, made)
    model = build(bundle, ev, runs_limit=runs, keep=same)
    untested = [{"id": h.id, "title": h.title, "text": h.text or ""} for h in bundle.hypotheses
                if h.id in ev.untested]
    snapshot.write(s, inv.id, fp, {"model": model, "untested": untested}, made)
    return bundle, ev, changed, snapshot.kept_parts(s, inv.id, model) if same and read else model


def _stored_view(s: Any, iid: str, fp: str, json: bool) -> Optional[dict]:
    """The stored view derived from ``fp`` (:func:`triage.kb.snapshot.read`); for a caller that
    prints its JSON report alone (``json``), without its long lists if it keeps that report, the
    report in their place (:data:`triage.render.report.JSON_TEXT`)."""
    from triage.kb import snapshot
    from triage.render.report import JSON_TEXT

    text = snapshot.read_json(s, iid, fp) if json else None
    kept = snapshot.read(s, iid, fp, parts=text is None)
    if kept is not None and text is not None:
        kept["model"][JSON_TEXT] = text
    return kept


def _keep_json(s: Any, iid: str, fp: str, view: dict) -> None:
    """Keep the JSON report of the stored view ``view`` (derived from ``fp``) with it, for its
    next JSON reports (:func:`triage.render.report.json_template`)."""
    from triage.kb import snapshot, store
    from triage.render.report import JSON_TEXT, json_template

    view[JSON_TEXT] = text = json_template(view)
    store.lock_investigation(s, iid)  # two reports at once keep it in turn, as evaluations store theirs
    snapshot.write_json(s, iid, fp, text)


def _keepable(s: Any, iid: str, ev: Any, made: dict) -> list[str]:
    """The long lists of the stored view that a build would make as they are
    (:func:`triage.kb.snapshot.keepable`), unless a run added since is one the evaluation
    names without having read it (manual evidence, a warning): a list that names it
    would now find it."""
    from triage.kb import snapshot

    same, added = snapshot.keepable(s, iid, made)
    if not same or not added:
        return same
    keys = {f"{run_id}/{config}" for run_id, config in added}
    if any(key.count("/") != 1 for key in keys):  # a run id or config with a "/": its key splits several ways
        return []
    if any(e.rule == "manual" and not keys.isdisjoint(e.runs) for e in ev.evidence):
        return []
    heads = tuple(f"{run_id} (" for run_id, _ in added) + tuple(f"run {run_id} (" for run_id, _ in added)
    return [] if any(w.message.startswith(heads) for w in ev.warnings) else same


def model(s: Any, inv: Any, *, runs: Optional[int] = DEFAULT_RUNS, full: bool = False, helper: Any = None,
          keep: bool = True, json: bool = False) -> dict:
    """The view model of ``inv`` (``model["since"]`` left for the caller): the stored one
    when nothing it rests on changed (unless ``full``, or another count of ``runs``),
    else from an evaluation, stored for the next reader unless ``keep=False``;
    with "Seen elsewhere" and what autopilot started.  ``json``: the caller prints the JSON
    report alone (:func:`triage.render.report.to_json`, without ``since``): the stored view's is
    kept with it, and printed as kept, its long lists not read (:func:`_stored_view`)."""
    from triage.kb import snapshot, store
    from triage.render.report import JSON_TEXT, dispatch_lines
    from triage.rules.next.similar import DEFAULT_THRESHOLD

    fp = snapshot.fingerprint(s, inv.id)
    json = json and keep and runs == DEFAULT_RUNS
    kept = None if full or runs != DEFAULT_RUNS else _stored_view(s, inv.id, fp, json)
    if kept is not None:
        view, no_recipe = kept["model"], [Untested(**h) for h in kept["untested"]]
    else:
        bundle, ev, _, view = evaluate_kept(s, inv, runs, full=full, helper=helper, keep=keep, fp=fp, json=json)
        no_recipe = [Untested(h.id, h.title, h.text or "") for h in bundle.hypotheses if h.id in ev.untested]
    if json and JSON_TEXT not in view:
        _keep_json(s, inv.id, fp, view)
    if kept is not None and "similar" in kept:
        view["similar"] = kept["similar"]
    else:
        view["similar"] = seen_elsewhere(s, inv, no_recipe, DEFAULT_THRESHOLD) if no_recipe else []
        if keep and runs == DEFAULT_RUNS:
            version = kept["others"] if kept is not None else snapshot.others(s)
            snapshot.write_similar(s, inv.id, version, view["similar"])
    # what autopilot started changes without the runs: read it every time
    view["dispatched"] = dispatch_lines(store.dispatch_rows(s, inv.id))
    return view


class Untested:
    """A hypothesis no recipe tests, as "Seen elsewhere" compares it."""

    def __init__(self, id: str, title: str, text: str) -> None:
        self.id, self.title, self.text = id, title, text


def seen_elsewhere(s: Any, inv: Any, hypotheses: list, min_score: float) -> list[dict]:
    """Hypotheses of other investigations that read like ``hypotheses``, with how they were decided."""
    from dataclasses import replace

    from triage.kb import elsewhere
    from triage.rules.next import similar

    matches = similar.find_similar(hypotheses, elsewhere.known_hypotheses(s, inv.id), threshold=min_score)
    decided = {(k.investigation, k.id): k for k in elsewhere.decisions_of(s, [x.other for x in matches])}
    return [similar.view(replace(x, other=decided[(x.other.investigation, x.other.id)])) for x in matches]
