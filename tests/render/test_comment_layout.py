"""The PR comment a reviewer reads in one screen (issue #12).

The first screen (everything above the first fold) holds the title, the
verdict, the bisect answers and the next experiments with their command;
the rest is folded, each thing is said once, and the chart pools repeats.
"""

from __future__ import annotations

import re

import pytest

from tests.support.gfm import Html, gfm
from triage.render.digest import first_screen


def comment(cli) -> str:
    r = cli("report", "--pr", "30433")
    assert r.code == 0, r.err
    return r.out


def test_first_screen_golden(cli, seeded, golden):
    golden("kimik26-disagg.first-screen.md", first_screen(comment(cli)))


def test_sizes_first_screen_and_whole(cli, seeded):
    body = comment(cli)
    screen = first_screen(body)
    assert len(screen) < 2_500
    assert len(body) < 20_500  # a bar per bisect point (18 bars) since #25
    # above the fold: the verdict, the bisect answers, the next experiments and their command; nothing else
    headings = re.findall(r"^### (.+)$", screen, re.M)
    assert headings == ["Verdict so far", "Suggested next"]
    assert "| " not in screen and "```mermaid" not in screen
    assert "Ruled out:** 12 of 19" in screen
    assert "✅ **Confirmed:** The docker image" in screen
    assert "first bad `v0.5.14-rocm720-mi35x-20260626`: found (adjacent)" in screen
    assert screen.count("gh workflow run") == 1 and screen.rstrip().endswith("```")


def test_nothing_lost_everything_one_click_away(cli, seeded):
    """Every run, hypothesis, evidence number and known failure is still in the comment."""
    body = comment(cli)
    doc = Html(gfm(body))
    summaries = [b for b in doc.blocks if b.startswith(("What each", "❌ 12 ruled out", "The numbers", "All 33 runs",
                                                        "The 3 points'", "The 5 points'"))]
    assert len(summaries) == 6 and body.count("<details><summary>") == 6
    text = "".join(doc.text)
    for run_id in ("28903343346", "28907609511", "bisect-step2", "decodemeta-3", "29042114884", "pr31063-mitigation"):
        assert run_id in text
    # the numbers behind a ruled-out row and behind a confirmed one
    # (the sample count is said once, in the runs table's header)
    assert "gsm8k (n=1319)" in text and "at n=1319" not in text
    assert "1p1d-aiterdecode 0.879 vs good 0.944: Δ -0.065, beyond noise (±0.022, Fisher p < 0.001)" in text
    assert "1p1d-pinned 0.939 vs good 0.944: Δ -0.005, within noise (±0.018, Fisher p = 0.68)" in text
    # superseded evidence stays
    assert "warmup probe (seq_len 6→9)" in text
    # each run link points to its run, its URL written once
    assert body.count("https://github.com/sgl-project/sglang/actions/runs/28903343346") == 1
    hrefs = {a["href"] for t, a in doc.tags if t == "a"}
    assert "https://github.com/sgl-project/sglang/actions/runs/28903343346" in hrefs


def test_a_known_failure_is_explained_once_and_grouped(cli, seeded):
    body = comment(cli)
    meaning = "the run used the baked image's sglang without the runtime checkout"
    assert body.count(meaning) == 1
    line = next(x for x in body.splitlines() if meaning in x)
    assert line.startswith("- **inconclusive-run**: 3 runs: known failure unregistered-model (setup-error): ")
    assert "(1p1d-aiterdecode, 1p1d-nocudagraph, 1p1d-mtp-specdecode)" in line
    # a remedy that a suggestion gives before its re-run is referred to, not repeated
    remedy = "read the start-up traceback; a flag combination that cannot start needs a code-level probe instead"
    assert body.count(remedy) == 1 and body.index(remedy) < body.index("<details>")
    assert "known failure init-abort (crash): the server aborted before serving; no accuracy was measured; " \
           "remedy: under Suggested next" in body
    # the evidence does not repeat that invalid runs decide nothing
    assert "never rules anything out" not in body
    # excluded runs are not warnings; their reason is in the runs table, once
    warnings = body.split("### Warnings", 1)[1]
    assert "pr-test-base" not in warnings
    assert body.count("excluded: the PR's unit-test CI, not the accuracy gate") == 2  # two excluded runs


def test_the_chart_pools_repeats_one_bar_per_config_and_bisect_point(cli, seeded):
    body = comment(cli)
    chart = re.search(r"```mermaid\n(%%\{init.*?)```", body, re.S).group(1)
    categories = re.search(r"x-axis \[(.*)\]", chart).group(1)
    labels = re.findall(r'"([^"]*)"', categories)
    assert len(labels) == len({label.split(" ×")[0] for label in labels}) == 18
    assert "1p1d-decodemeta ×3 0.876–0.885" in labels
    # the two image-bisect points are two bars, not one "×2 0.888–0.939" across the gate
    assert {"1p1d-imagebisect @ …-mi35x-20260625", "1p1d-imagebisect @ …-mi35x-20260626"} <= set(labels)
    assert not any(label.startswith("1p1d-imagebisect ×") for label in labels)
    bars = [float(x) for x in re.search(r"bar \[(.*)\]", chart).group(1).split(", ")]
    assert bars[labels.index("1p1d-decodemeta ×3 0.876–0.885")] == pytest.approx((0.876 + 0.879 + 0.885) / 3, abs=1e-4)


# --------------------------------------------------------------------------
# Grouping and pooling on small investigations


def _model(runs, signatures=None):
    from tests.support.engine import inv
    from triage.render.report import build
    from triage.rules.engine.evaluate import evaluate

    bundle = inv(runs=runs, signatures=signatures)
    return build(bundle, evaluate(bundle))


def test_warnings_of_one_kind_that_say_the_same_are_one_line():
    from tests.support.engine import run
    from triage.render.report import to_markdown, to_text
    from triage.rules.engine.evaluate import SignatureInfo

    sig = {"oom": SignatureInfo("oom", "oom", "ran out of memory", "halve the batch")}
    runs = [run("1", "swap", status="crashed", signature="oom"), run("2", "swap", status="error", signature="oom"),
            run("2", "eager", status="crashed", signature="oom"),
            run("3", "eager", status="crashed", note="node lost"), run("4", "eager", status="crashed", note="node lost"),
            run("5", "swap", status="failed", excluded=True, excluded_reason="wrong branch"),
            run("9", "base", 0.878)]
    model = _model(runs, sig)
    lines = [w["text"] for w in model["warnings"] if w["kind"] == "inconclusive-run"]
    assert lines == [
        "3 runs: known failure oom (oom): ran out of memory; remedy: halve the batch — 1 (swap), 2 (swap, eager)",
        "2 runs of eager (3, 4): crashed (node lost)",  # one config, one reason: the engine said it once
    ]
    # the engine's own list is what JSON gives: one warning per config and reason, the excluded run too
    assert sum(w["kind"] == "inconclusive-run" for w in model["engine_warnings"]) == 5
    body = to_markdown(model)
    assert body.count("ran out of memory") == 1 and "wrong branch" not in body.split("### Warnings")[1]
    assert "- **inconclusive-run**: 3 runs: known failure oom (oom): ran out of memory; remedy: halve the batch — " \
           "1 (swap), 2 (swap, eager)" in body
    assert "[inconclusive-run] 2 runs of eager (3, 4): crashed (node lost)" in to_text(model)


def test_one_warning_keeps_its_run_first():
    from tests.support.engine import run

    model = _model([run("7", "swap", status="crashed", note="oops"), run("9", "base", 0.878)])
    (w,) = [w for w in model["warnings"] if w["kind"] == "inconclusive-run"]
    assert w["text"] == "7 (swap): crashed (oops)" and w["count"] == 1


def test_repeats_pool_into_one_bar_with_their_range():
    from tests.support.engine import run
    from triage.render import pictures

    model = _model([run("1", "swap", 0.90), run("2", "swap", 0.94), run("3", "swap", 0.92), run("9", "base", 0.878),
                    run("4", "eager", status="crashed")])
    bars = model["series"]["bars"]
    assert [(b["short"], b["n"], round(b["value"], 6), b["min"], b["max"]) for b in bars] == [
        ("swap", 3, 0.92, 0.90, 0.94), ("base", 1, 0.878, 0.878, 0.878)]
    chart = pictures.metric_chart(model["series"])["mermaid"]
    assert 'x-axis ["swap ×3 0.900–0.940", "base"]' in chart and "bar [0.92, 0.878]" in chart


def test_the_first_screen_without_folds_is_the_whole_comment():
    assert first_screen("## T\n\nno folds\n") == "## T\n\nno folds\n"
    assert first_screen("a\n\n<details><summary>x</summary>\n\nb\n</details>\n") == "a\n\n"
