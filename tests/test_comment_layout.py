"""The PR comment a reviewer reads in one screen (issue #12).

The first screen (everything above the first fold) holds the title, the
verdict, the bisect answers and the next experiments with their command;
the rest is folded, each thing is said once, and the chart pools repeats.
"""

from __future__ import annotations

import re

import pytest

from tests.gfm import Html, gfm
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
    assert len(body) < 20_000
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
    assert "1p1d-aiterdecode 0.879 vs good 0.944: Δ -0.065, beyond noise (±0.022 at n=1319)" in text
    assert "1p1d-pinned 0.939 vs good 0.944: Δ -0.005, within noise (±0.018 at n=1319)" in text
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
    # the evidence does not repeat that invalid runs decide nothing
    assert "never rules anything out" not in body
    # excluded runs are not warnings; their reason is in the runs table, once
    warnings = body.split("### Warnings", 1)[1]
    assert "pr-test-base" not in warnings
    assert body.count("excluded: the PR's unit-test CI, not the accuracy gate") == 2  # two excluded runs


def test_the_chart_pools_repeats_one_bar_per_config(cli, seeded):
    body = comment(cli)
    chart = re.search(r"```mermaid\n(%%\{init.*?)```", body, re.S).group(1)
    categories = re.search(r"x-axis \[(.*)\]", chart).group(1)
    labels = re.findall(r'"([^"]*)"', categories)
    assert len(labels) == len({label.split(" ×")[0] for label in labels}) == 16
    assert "1p1d-decodemeta ×3 0.876–0.885" in labels
    bars = [float(x) for x in re.search(r"bar \[(.*)\]", chart).group(1).split(", ")]
    assert bars[labels.index("1p1d-decodemeta ×3 0.876–0.885")] == pytest.approx((0.876 + 0.879 + 0.885) / 3, abs=1e-4)
