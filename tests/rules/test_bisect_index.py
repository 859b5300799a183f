"""The bisect's one-pass point index and its judged-once runs read as the run-by-run scan did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.rules.engine import bisect as bisect_mod
from triage.rules.engine.context import Context, _provenance_matches, _run_order
from triage.rules.engine.records import Investigation, RunRec
from triage.rules.language.schema import BisectSpec, InvestigationSpec

IMAGES = ["i1", "i2", "i3", "i4"]
CONFIGS = ["a", "b", "c"]


def _scan(b: BisectSpec, values, axis, ctx: Context) -> list[RunRec]:
    """The reference: every run of the bisect's configs, matched against the point's provenance."""
    want = dict(zip(axis, values)) | dict(b.where)
    runs = ctx.runs
    if b.config is not None:
        configs = {b.config} if isinstance(b.config, str) else set(b.config)
        runs = [r for r in runs if r.config in configs]
    return sorted((r for r in runs if _provenance_matches(r, want)), key=_run_order)


runs_st = st.lists(st.builds(
    lambda i, config, image, node, status, value, time: RunRec(
        run_id=str(i), config=config, status=status,
        metrics={"acc": (value, 1319)} if value is not None else {},
        provenance={k: v for k, v in (("image", image), ("node", node)) if v is not None},
        time=time),
    st.integers(0, 30), st.sampled_from(CONFIGS), st.one_of(st.none(), st.sampled_from(IMAGES)),
    st.one_of(st.none(), st.sampled_from(["n1", "n2"]), st.integers(1, 2)),
    st.sampled_from(["passed", "failed", "crashed"]),
    st.one_of(st.none(), st.sampled_from([0.86, 0.88, 0.93, 0.94, 0.95])),
    st.one_of(st.none(), st.sampled_from(["2026-07-01T00:00:00", "2026-07-02T00:00:00"]))), max_size=40)

bisect_st = st.fixed_dictionaries({
    "id": st.just("img"), "axis": st.sampled_from(["image", ["image", "node"]]),
    "config": st.one_of(st.none(), st.sampled_from(CONFIGS), st.just(["a", "b"])),
    "where": st.one_of(st.just({}), st.just({"node": "n1"}), st.just({"node": 1}), st.just({"image": "i2"})),
    "good_when": st.sampled_from([{"at_least": 0.9}, {"same_as": {"config": "c"}}, {"status": "passed"}]),
})


def _spec(d: dict) -> BisectSpec:
    if isinstance(d["axis"], list):
        points = [[i, n] for i in IMAGES for n in ("n1", "n2")]
    else:
        points = list(IMAGES)
    return BisectSpec.model_validate(d | {"points": points})


def _ctx(runs: list[RunRec]) -> Context:
    spec = InvestigationSpec.model_validate({"id": "x", "pr": 1, "repo": "o/r", "title": "t", "metric": "acc", "gate": 0.9,
                                           "references": {"good": {"value": 0.94}, "bad": {"value": 0.88}}})
    return Context(Investigation(spec=spec, runs=runs))


@settings(max_examples=300, deadline=None)
@given(runs_st, bisect_st)
def test_the_point_index_finds_what_the_scan_finds(runs: list[RunRec], d: dict) -> None:
    b = _spec(d)
    ctx = _ctx(runs)
    axis = [b.axis] if isinstance(b.axis, str) else list(b.axis)
    values = [[p] if isinstance(p, str) else list(p) for p in b.points]
    got = bisect_mod._points_runs(b, values, axis, ctx)
    want = [_scan(b, v, axis, ctx) for v in values]
    assert [[id(r) for r in p] for p in got] == [[id(r) for r in p] for p in want]


@settings(max_examples=300, deadline=None)
@given(runs_st, bisect_st)
def test_runs_judged_once_per_content_read_as_judged_one_by_one(runs: list[RunRec], d: dict) -> None:
    b = _spec(d)
    ctx = _ctx(runs)
    valid = [r for r in runs if ctx.invalid_reason(r) is None]
    got = bisect_mod._judge_each(b, ctx, valid)
    want = [(r, bisect_mod._judge(b, ctx, [r])) for r in valid]
    assert [(r.key, res.value, res.parts) for r, res in got] == [(r.key, res.value, res.parts) for r, res in want]


@settings(max_examples=300, deadline=None)
@given(runs_st, runs_st, bisect_st)
def test_a_bisect_kept_after_runs_of_none_of_its_points_is_the_one_worked_out_again(runs, added, d) -> None:
    """Runs added to the config a bisect reads: when the stored bisect is kept as it was
    (``bisect._unmoved``: none of them is a run of one of its points), it is the bisect worked
    out from every run; and a good_when that judges a run by other runs keeps none."""
    d = d | {"config": "a"}
    b = _spec(d)
    before = [r for r in runs]
    added = [RunRec(run_id=f"new{i}", config="a", status=r.status, metrics=r.metrics, provenance=r.provenance,
                    time="2026-08-01T00:00:00") for i, r in enumerate(added)]
    old = bisect_mod.evaluate_bisect(b, _ctx(before))
    kept = bisect_mod._unmoved(b, old, added)
    if kept is not None:
        assert kept == bisect_mod.evaluate_bisect(b, _ctx(before + added))
    if "same_as" in d["good_when"]:
        assert kept is None
