"""Issue 8: the noise model through the engine, on other kinds of CI results than accuracy."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from triage.rules.engine.context import Context
from triage.rules.engine.evaluate import Investigation, RunRec, base_run, evaluate
from triage.rules.language.schema import RuleFile

LATENCY = """
schema_version: 1
investigation:
  id: t
  repo: o/r
  pr: 1
  title: wall time
  metric: wall_s
  direction: lower
  gate: 1480
  references:
    good: {value: 1470}
    bad: {value: 1487}
hypotheses:
  - {id: cache, title: Cache}
recipes:
  - id: warm
    base: main
    vary: {cache: warm}
    tests: [cache]
    predicts: {cache: recovers}
"""


def inv(base: str, extra: str = "", runs=()) -> Investigation:
    spec = RuleFile.model_validate(yaml.safe_load(textwrap.dedent(base) + textwrap.dedent(extra)))
    return Investigation(spec=spec.investigation, hypotheses=spec.hypotheses, recipes=spec.recipes,
                         rules=spec.rules, evidence=spec.evidence, bisects=spec.bisects, runs=list(runs),
                         signatures={})


def run(run_id: str, config: str, metrics: dict, status: str = "passed", **kw) -> RunRec:
    return RunRec(run_id=run_id, config=config, status=status,
                  metrics={k: (v if isinstance(v, tuple) else (v, None)) for k, v in metrics.items()}, **kw)


# ------------------------------------------------------------------ 1. direction everywhere


def test_lower_is_better_a_faster_run_recovers():
    ev = evaluate(inv(LATENCY, runs=[run("1", "warm", {"wall_s": 1430.0})]))
    assert ev.statuses["cache"] == "confirmed"
    reason = ev.evidence[0].reason
    assert "lower is better" in reason and "better than bad 1487" in ev.evidence[0].summary


def test_throughput_above_good_is_good_in_a_recovers_bisect():
    base = LATENCY.replace("metric: wall_s\n  direction: lower\n  gate: 1480", "metric: tok_s\n  gate: 900")
    base = base.replace("good: {value: 1470}\n    bad: {value: 1487}", "good: {value: 1000}\n    bad: {value: 800}")
    extra = """
    bisects:
      - id: commits
        axis: sha
        points: [a, b, c]
        good_when: {recovers: true}
    """
    runs = [run("1", "main", {"tok_s": 1360.0}, provenance={"sha": "a"}),
            run("2", "main", {"tok_s": 790.0}, provenance={"sha": "c"})]
    b = evaluate(inv(base, extra, runs)).bisects[0]
    assert [p.state for p in b.points] == ["good", "untested", "bad"]


def test_direction_words_and_a_metric_of_its_own():
    extra = """
      metrics:
        acc: {direction: higher}
    rules:
      - {id: faster, hypothesis: cache, when: {config: warm, better_than: bad}, then: supports}
      - {id: slower, hypothesis: cache, when: {config: warm, worse_than: good}, then: ruled_out}
      - {id: acc-ok, hypothesis: cache, when: {config: warm, metric: acc, passes: 0.9}, then: supports}
    """
    base = LATENCY.replace("    bad: {value: 1487}\n", "    bad: {value: 1487}\n" + textwrap.indent(
        textwrap.dedent(extra).split("rules:")[0].strip("\n"), "") + "\n")
    spec_extra = "rules:" + textwrap.dedent(extra).split("rules:")[1]
    ev = evaluate(inv(base, spec_extra, [run("1", "warm", {"wall_s": 1460.0, "acc": 0.95})]))
    verdicts = {e.rule: e.verdict for e in ev.evidence}
    assert verdicts.get("faster") == "supports" and "slower" not in verdicts and verdicts.get("acc-ok") == "supports"


def test_check_warns_when_good_when_points_the_wrong_way(tmp_path):
    from typer.testing import CliRunner

    from triage.cli import app

    text = textwrap.dedent(LATENCY) + textwrap.dedent("""
    bisects:
      - id: commits
        axis: sha
        points: [a, b]
        good_when: {at_least: gate}
    """)
    path = tmp_path / "lat.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 0
    assert "warning: good_when at_least on wall_s, where lower is better" in result.output
    path.write_text(text.replace("at_least: gate", "passes: gate"))
    assert "warning: good_when" not in CliRunner().invoke(app, ["check", str(path)]).output


# ------------------------------------------------------------------ 2. proportions, 3. pass rates

FLAKY = """
schema_version: 1
investigation:
  id: f
  repo: o/r
  pr: 2
  title: flaky test
  metric: fail_rate
  direction: lower
  references:
    bad: {config: main}
hypotheses:
  - {id: race, title: A race}
recipes:
  - id: revert
    base: main
    tests: [race]
    predicts: {race: {better_than: bad}}
"""


def test_zero_of_one_is_not_certainly_better_than_four_of_four():
    runs = [run(str(i), "main", {}, status="failed") for i in range(4)] + [run("9", "revert", {})]
    ev = evaluate(inv(FLAKY, runs=runs))
    assert ev.statuses["race"] != "confirmed"
    (item,) = [e for e in ev.evidence if e.rule == "predicts:revert"]
    assert "Fisher p = 0.2" in item.reason


def test_fail_rate_from_pass_fail_counts():
    runs = [run(f"m{i}", "main", {}, status="failed" if i < 7 else "passed") for i in range(50)]
    runs += [run(f"r{i}", "revert", {}) for i in range(50)]
    ev = evaluate(inv(FLAKY, runs=runs))
    (item,) = [e for e in ev.evidence if e.rule == "predicts:revert"]
    assert item.verdict == "supports"
    assert "revert fails 0/50 vs bad fails 7/50" in item.reason and "Fisher p = 0.012" in item.reason


def test_fail_rate_carried_as_counts():
    from triage.ingest.runs import parse_metric

    assert parse_metric("fail_rate=3/20") == ("fail_rate", {"value": 0.15, "n": 20})
    runs = [run("m", "main", {"fail_rate": (7 / 50, 50)}), run("r", "revert", {"fail_rate": (0.0, 50)})]
    ev = evaluate(inv(FLAKY, runs=runs))
    assert ev.statuses["race"] == "open"  # supports
    assert [e.verdict for e in ev.evidence if e.rule == "predicts:revert"] == ["supports"]


def test_fail_rate_counts_must_be_whole():
    import pytest

    from triage.errors import InputError
    from triage.ingest.runs import parse_metric

    for bad in ("fail_rate=2.5/20", "fail_rate=21/20"):
        with pytest.raises(InputError):
            parse_metric(bad)


TOP1 = """
schema_version: 1
investigation:
  id: p
  repo: o/r
  pr: 3
  title: top-1
  metric: top1
  references:
    good: {value: 94.4, n: 511}
hypotheses:
  - {id: h, title: H}
rules:
  - {id: same, hypothesis: h, when: {config: x, same_as: good}, then: ruled_out}
"""


def test_a_percentage_needs_its_scale_and_says_so():
    runs = [run("1", "x", {"top1": (91.0, 511)})]
    ev = evaluate(inv(TOP1, runs=runs))
    assert any("top1 91.00 has n=511 but is not a proportion" in w.message for w in ev.warnings)
    scaled = TOP1.replace("  references:", "  metrics: {top1: {scale: 100}}\n  references:")
    ev = evaluate(inv(scaled, runs=runs))
    assert not any(w.kind == "noise" for w in ev.warnings)
    assert "at n=511, Fisher" in ev.evidence[0].reason


# ------------------------------------------------------------------ 4. repeats and prior noise


THRESHOLD = LATENCY + """
rules:
  - {id: slow, hypothesis: cache, when: {config: main, at_least: 1478.95}, then: supports}
"""


def test_two_runs_without_noise_use_their_spread_and_never_turn_the_answer_around():
    one = evaluate(inv(THRESHOLD, runs=[run("1", "main", {"wall_s": 1487.4})]))
    two = evaluate(inv(THRESHOLD, runs=[run("1", "main", {"wall_s": 1487.4}), run("2", "main", {"wall_s": 1486.0})]))
    assert [e.verdict for e in one.evidence] == ["supports"]
    assert [e.verdict for e in two.evidence] == ["inconclusive"]  # t with 1 df: can't tell, not "no"
    assert two.evidence[0].needed == ("≥ 3 repeats",)
    noisy = THRESHOLD.replace("  gate: 1480\n", "  gate: 1480\n  metrics: {wall_s: {noise: 2}}\n")
    two = evaluate(inv(noisy, runs=[run("1", "main", {"wall_s": 1487.4}), run("2", "main", {"wall_s": 1486.0})]))
    assert [e.verdict for e in two.evidence] == ["supports"]


def test_a_fixed_reference_adds_no_variance_and_no_repeats_are_asked_of_it():
    base = LATENCY.replace("  gate: 1480\n", "  gate: 1480\n  metrics: {wall_s: {noise: 9}}\n")
    runs = [run("1", "warm", {"wall_s": 1478.0}), run("2", "warm", {"wall_s": 1479.0})]
    ev = evaluate(inv(base, runs=runs))
    (item,) = [e for e in ev.evidence if e.rule == "predicts:warm"]
    assert item.verdict == "inconclusive"
    assert "over 2 runs" in item.reason and "2+1" not in item.reason
    assert item.needed and all("per side" not in n for n in item.needed)


def test_a_config_reference_pools_its_repeats():
    base = LATENCY.replace("bad: {value: 1487}", "bad: {config: main}")
    runs = [run(str(i), "main", {"wall_s": v}) for i, v in enumerate((1486.0, 1488.0, 1487.0))]
    ctx = Context(inv(base, runs=runs))
    ref, label = ctx.refs["bad"]
    assert ref.repeats == (1486.0, 1488.0, 1487.0) and label == "bad 1487.0 (×3)"


def test_newest_is_by_time_then_insertion_order_not_id_text():
    base = LATENCY.replace("    base: main\n", "    base: main\n")
    runs = [run("rerun-b", "main", {"wall_s": 1.0}), run("rerun-a", "main", {"wall_s": 2.0})]
    ctx = Context(inv(base, runs=runs))
    assert base_run(ctx.inv.recipes[0], ctx).run_id == "rerun-a"  # recorded last, though "b" > "a" as text
    timed = [run("10", "main", {"wall_s": 2.0}, time="2026-01-02"), run("9", "main", {"wall_s": 1.0}, time="2026-01-03")]
    ctx = Context(inv(base, runs=timed))
    assert base_run(ctx.inv.recipes[0], ctx).run_id == "9"


def test_unchanged_uses_the_recipes_base_run():
    base = LATENCY.replace("    predicts: {cache: recovers}", "    base_run: '2'\n    predicts: {cache: unchanged}")
    runs = [run("1", "main", {"wall_s": 1400.0}), run("2", "main", {"wall_s": 1487.0}),
            run("3", "warm", {"wall_s": 1487.0})]
    ev = evaluate(inv(base, runs=runs))
    (item,) = [e for e in ev.evidence if e.rule == "predicts:warm"]
    assert item.verdict == "supports"  # ≈ run 2, whatever run 1 says


def test_a_point_compared_with_its_own_runs_says_so():
    extra = """
    bisects:
      - id: commits
        axis: sha
        points: [a, b]
        good_when: {same_as: {config: main}}
    """
    b = evaluate(inv(LATENCY, extra, [run("1", "main", {"wall_s": 1.0}, provenance={"sha": "a"})])).bisects[0]
    assert "the same runs as compared" in b.points[0].reason
    assert "has no wall_s" not in b.points[0].reason


# ------------------------------------------------------------------ 5. tolerance, margin


def test_a_tolerance_wider_than_the_gap_cannot_tell_and_warns_once():
    base = LATENCY.replace("  gate: 1480\n", "  gate: 1480\n  tolerance: 2%\n")
    ev = evaluate(inv(base, runs=[run("1", "warm", {"wall_s": 1480.0})]))
    assert ev.readings["1/warm"].count("≈") == 0
    assert ev.statuses["cache"] in ("open", "inconclusive")
    noise = [w.message for w in ev.warnings if w.kind == "noise"]
    assert len(noise) == 1 and noise[0].startswith("tolerance 2% cannot tell good (1470.0) from bad (1487.0)")


def test_a_condition_margin_overrides_the_global_one():
    base = LATENCY.replace("  gate: 1480\n", "  gate: 1480\n  tolerance: 2%\n") + """
rules:
  - {id: near, hypothesis: cache, when: {config: warm, same_as: good, margin: 40}, then: supports}
"""
    ev = evaluate(inv(base, runs=[run("1", "warm", {"wall_s": 1480.0})]))
    assert [e.verdict for e in ev.evidence if e.rule == "near"] == ["supports"]


def test_thresholds_use_the_tolerance():
    base = LATENCY.replace("  gate: 1480\n", "  gate: 1480\n  tolerance: 0.5%\n") + """
rules:
  - {id: under, hypothesis: cache, when: {config: main, below: 1487.5}, then: supports}
"""
    ev = evaluate(inv(base, runs=[run("1", "main", {"wall_s": 1487.4})]))
    assert [e.verdict for e in ev.evidence] == ["inconclusive"]


# ------------------------------------------------------------------ 6. advice that can be followed


GSM = """
schema_version: 1
investigation:
  id: g
  repo: o/r
  pr: 4
  title: gsm8k
  metric: gsm8k
  metrics: {gsm8k: {n_max: 1319}}
  references:
    good: {value: 0.944, n: 1319}
    bad: {value: 0.878, n: 1319}
hypotheses:
  - {id: h, title: H}
rules:
  - {id: close, hypothesis: h, when: {config: x, same_as: good, margin: 0.002}, then: supports}
"""


def test_advice_beyond_the_benchmark_size():
    ev = evaluate(inv(GSM, runs=[run("1", "x", {"gsm8k": (0.943, 1319)})]))
    (item,) = ev.evidence
    assert item.verdict == "inconclusive"
    (needed,) = item.needed
    assert "repeats of the full benchmark" in needed and "beyond its 1,319" in needed
    assert not needed.startswith("n ≥")


def test_suggestion_advice_within_the_benchmark_size():
    base = GSM.replace("rules:\n  - {id: close, hypothesis: h, when: {config: x, same_as: good, margin: 0.002}, then: supports}\n",
                       "recipes:\n  - {id: x, tests: [h], predicts: {h: {same_as: good, margin: 0.002}}}\n")
    ev = evaluate(inv(base, runs=[run("1", "x", {"gsm8k": (0.943, 1319)})]))
    (s,) = ev.suggestions
    assert "repeats of the full benchmark" in s.advice
    assert "re-run with n ≥" not in s.advice
    # it costs the repeats it still needs (it has one), not one run
    k = int(s.advice.split(" repeats of the full benchmark")[0].split()[-1].replace(",", ""))
    never = evaluate(inv(base))
    assert k > 100 and s.score == pytest.approx(never.suggestions[0].score / (k - 1), rel=1e-6)


def test_a_reading_without_any_noise_still_says_something():
    base = LATENCY.replace("  gate: 1480\n", "")
    ev = evaluate(inv(base, runs=[run("1", "main", {"wall_s": 1486.9}), run("2", "main", {"wall_s": 1486.7})]))
    assert ev.readings["1/main"] == "≈ bad"  # exact, within half the good–bad gap
    assert any("wall_s has no noise estimate" in w.message for w in ev.warnings)


def test_check_refuses_unknown_references_in_direction_words(tmp_path):
    import pytest

    from triage.errors import RuleFileError
    from triage.rules.language.loader import load_rules

    path = tmp_path / "lat.yaml"
    path.write_text(textwrap.dedent(LATENCY) + "rules:\n  - {id: r, hypothesis: cache, when: {better_than: fast}, then: supports}\n"
                    "  - {id: s, hypothesis: cache, when: {passes: fastest}, then: supports}\n")
    with pytest.raises(RuleFileError) as e:
        load_rules([path])
    text = str(e.value)
    assert "unknown reference 'fast'" in text and "unknown reference 'fastest'" in text


def test_repeats_that_disagree_beyond_the_declared_noise_are_warned_about():
    base = LATENCY.replace("  gate: 1480\n", "  gate: 1480\n  metrics: {wall_s: {noise: 3}}\n")
    agree = [run("1", "main", {"wall_s": 1486.0}), run("2", "main", {"wall_s": 1487.4})]
    assert not [w for w in evaluate(inv(base, runs=agree)).warnings if w.kind == "repeats"]
    wild = [run("1", "main", {"wall_s": 1470.0}), run("2", "main", {"wall_s": 1500.0})]
    (w,) = [w for w in evaluate(inv(base, runs=wild)).warnings if w.kind == "repeats"]
    assert "from run noise ±3.000 SD" in w.message
