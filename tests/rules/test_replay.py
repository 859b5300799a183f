"""`triage replay`: how many runs the suggestions would have spent on a finished investigation."""

from __future__ import annotations

import json

from tests.conftest import EXAMPLE_RUNS, RULES
from tests.support.engine import PARENT as SUGGEST_PARENT
from tests.support.engine import inv, run
from triage.rules.engine.evaluate import Investigation, SignatureInfo
from triage.rules.next.replay import replay
from tests.support.replay import FIRST_BAD, START


def bundled() -> Investigation:
    from triage.rules.language.loader import load_rules
    from triage.usecases.ruletests import _runrecs

    rs = load_rules([RULES])
    spec = next(i.spec for i in rs.investigations if i.spec.investigation.id == "kimik26-disagg")
    sigs = {s.id: SignatureInfo(s.id, s.cls, s.meaning, s.remedy) for f in rs.files for s in f.spec.signatures}
    lines = [json.loads(x) for x in EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines() if x.strip()]
    runs = _runrecs(lines, str(EXAMPLE_RUNS), spec.investigation.id)
    return Investigation(spec.investigation, spec.hypotheses, spec.recipes, spec.rules, spec.evidence,
                         spec.bisects, runs, sigs)


def test_the_bundled_investigation_reaches_its_verdict_in_at_most_5_runs():
    rp = replay(bundled(), START, {"image-regression": "confirmed"}, {"image": FIRST_BAD}, orders=0)
    assert rp.reached and rp.spent <= 5
    assert rp.spent == 4 and rp.recorded == 29  # the image bisect, walked first
    assert [s.suggestion.kind for s in rp.steps] == ["bisect"] * 4
    assert rp.recorded_order == 28  # the investigators' own order


def test_the_mitigation_run_is_not_what_gets_there():
    rp = replay(bundled(), START, {"image-regression": "confirmed"}, {"image": FIRST_BAD},
                leave_out=["pr31063-mitigation"], orders=0)
    assert rp.reached and rp.spent <= 5 and rp.recorded == 28
    assert "kimik26-fp8-1k1k-1p1d-pinned" not in {s.run.config for s in rp.steps}


PARENT = SUGGEST_PARENT.replace("  - {id: h, title: H}\n", "  - {id: h, title: H}\n  - {id: g, title: G}\n") + """
  - id: other
    predicts: {g: same_as_bad}
    run: ci -f configs={ids}
"""


def test_a_replay_asks_for_the_missing_base_run_and_reaches_the_verdict():
    runs = [run("1", "child", 0.88), run("2", "other", 0.88), run("3", "other", 0.89), run("4", "parent", 0.94)]
    rp = replay(inv(base=PARENT, runs=runs), ["1"], {"h": "ruled_out"}, orders=3)
    assert rp.reached, rp.stuck
    base = [s for s in rp.steps if s.suggestion.kind == "base"]
    assert [(s.suggestion.recipe, s.run.key) for s in base] == [("parent", "4/parent")]
    assert rp.steps[-1].changed == (("h", "open", "ruled_out"),)
    assert rp.spent == 1 and rp.recorded_order == 3 and len(rp.random_orders) == 3


def test_replay_cli_prints_the_trace_and_the_counts(cli, seeded):
    r = cli("replay", "--pr", "30433", "--start", START[0], "--start", START[1],
            "--target", "image-regression=confirmed", "--bisect", f"image={FIRST_BAD}", "--orders", "3")
    assert r.code == 0, r.err
    assert r.out.startswith("start: nightly-current (1p1d), 28873810961 (1p1d)\n")
    assert "  4. bisect:image at v0.5.14-rocm720-mi35x-20260626 (score 2.00) → 29277682836 (1p1d-imagebisect)" in r.out
    assert "       image-regression: open → confirmed\n" in r.out
    assert "runs to verdict: 4 of 29 recorded (4/29 = 14%)\n" in r.out
    assert "recorded order: 28 of 29 recorded (28/29 = 97%)\n" in r.out
    assert "random orders: median " in r.out and " over 3\n" in r.out


def test_replay_refuses_what_it_cannot_check(cli, seeded):
    for args, said in [(["--target", "nope=confirmed"], "no hypothesis 'nope'"),
                       (["--target", "image-regression=fine"], "the status must be one of"),
                       (["--target", "image-regression"], "expected NAME=VALUE"),
                       (["--bisect", "image=somewhere"], "not a point of bisect 'image'"),
                       ([], "replay needs a verdict to reach")]:
        r = cli("replay", "--pr", "30433", "--start", "nightly-current", *args)
        assert r.code == 2 and said in r.err, (args, r.err)
    r = cli("replay", "--pr", "30433", "--start", "no-such-run", "--target", "image-regression=confirmed")
    assert r.code == 2 and "no run 'no-such-run'" in r.err
