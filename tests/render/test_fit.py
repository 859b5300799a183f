"""Shortening the comment to GitHub's 65,536-character limit (render.fit)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.support.generate import HUGE_PR, HUGE_REPO, huge_model
from tests.support.gfm import check_comment
from triage.render.fit import KEEP_RUNS, fit
from triage.render.report import COMMENT_LIMIT, to_markdown

MARKER = "<!-- triage:investigation=huge -->"
COMMAND = f"`triage report --pr {HUGE_PR} --repo {HUGE_REPO}` shows everything."


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return huge_model(tmp_path_factory.mktemp("huge"), runs=3000)


def run_ids(body: str) -> list[int]:
    """The run ids in the runs table, in order."""
    section = body.split("### Runs\n", 1)[1]
    table = section[section.index("| run |"):].split("\n\n", 1)[0]
    return [int(m) for m in re.findall(r"^\| \[(\d+)\]", table, re.M)]


def test_a_small_report_is_left_alone(cli, seeded):
    from triage.kb import store
    from triage.render.report import build
    from triage.rules.engine.evaluate import evaluate

    with store.session(store.resolve_url(None)) as s:
        bundle = store.load_bundle(s, store.find_investigation(s, 30433))
    model = build(bundle, evaluate(bundle))
    fitted = fit(model)
    assert fitted.body == to_markdown(model) and fitted.note is None and not fitted.shortened
    assert "Shortened" not in fitted.body


def test_huge_investigation_fits_with_the_marker_last(huge):
    full = to_markdown(huge)
    assert len(full) > 5 * COMMENT_LIMIT
    fitted = fit(huge)
    body = fitted.body
    assert len(body) <= COMMENT_LIMIT
    assert body.rstrip("\n").splitlines()[-1] == MARKER and body.count(MARKER) == 1
    check_comment(body, MARKER)
    # the newest runs are kept, in order, the oldest left out
    ids = run_ids(body)
    assert ids == list(range(10_000_000 + 3000 - len(ids), 10_000_000 + 3000))
    assert fitted.runs_dropped == 3000 - len(ids) > 0
    # the line that says so, near the top
    assert f"{fitted.runs_dropped:,} of 3,000 runs (the oldest)" in body
    assert "the evidence details" in body and "The numbers behind" not in body
    assert COMMAND in body
    assert body.index("Shortened to fit") < body.index("### Verdict so far")


def test_order_runs_first_down_to_the_floor(huge):
    full = to_markdown(huge)
    rows = run_ids(full)
    assert len(rows) == 3000
    # a limit that dropping some of the oldest runs meets: details stay
    limit = len(full) - 5000
    fitted = fit(huge, limit)
    assert len(fitted.body) <= limit
    assert not fitted.details_dropped and not fitted.texts_cut and fitted.items_dropped == 0
    assert 0 < fitted.runs_dropped < 3000 - KEEP_RUNS
    assert "<details>" in fitted.body and COMMAND in fitted.body
    # the fewest runs dropped: one fewer would not fit
    from triage.render.fit import _Plan, _render

    assert len(_render(huge, _Plan(runs_dropped=fitted.runs_dropped - 1), to_markdown).body) > limit


def test_details_go_before_the_last_runs_and_runs_come_back(huge):
    # Without the details and without any run it fits; the floor alone does not.
    without = fit(huge, COMMENT_LIMIT)
    assert without.details_dropped
    assert len(run_ids(without.body)) > KEEP_RUNS


@pytest.mark.parametrize("limit", [60_000, 20_000, 8_000, 3_000, 1_000, 200])
def test_any_limit_is_met_and_the_marker_survives(huge, limit):
    fitted = fit(huge, limit)
    assert len(fitted.body) <= limit
    assert fitted.body.rstrip("\n").splitlines()[-1] == MARKER
    assert fitted.body.count("<!--") == 1
    if limit >= 3_000:
        check_comment(fitted.body, MARKER)
        assert "Shortened to fit" in fitted.body


def test_long_texts_are_cut_with_an_ellipsis(huge):
    fitted = fit(huge, 20_000)
    assert fitted.texts_cut and "…" in fitted.body
    assert "long texts were cut short" in fitted.body
    assert "y" * 300 not in fitted.body


def test_limit_below_the_marker_is_refused(huge):
    with pytest.raises(ValueError):
        fit(huge, 10)


def test_codepoints_not_bytes(huge):
    # GitHub counts characters; a four-byte emoji is one.
    model = {**huge, "investigation": {**huge["investigation"], "title": "😀" * 5000}}
    fitted = fit(model)
    assert len(fitted.body) <= COMMENT_LIMIT < len(fitted.body.encode("utf-8"))


def test_a_template_without_the_note_still_gets_it(huge, tmp_path: Path):
    from triage.render.env import template_dirs

    own = tmp_path / "tpl"
    own.mkdir()
    (own / "report.md.j2").write_text("## {{ investigation.title }}\n{% for r in runs %}{{ r.run_id }}\n{% endfor %}\n{{ marker }}\n")
    assert str(own) in template_dirs(str(own))

    def render(m: dict) -> str:
        return to_markdown(m, str(own))

    fitted = fit(huge, 5_000, render=render)
    assert len(fitted.body) <= 5_000
    assert COMMAND in fitted.body and fitted.body.rstrip().endswith(MARKER)


def test_report_fit_flag(cli, seeded, tmp_path: Path):
    full = cli("report", "--pr", "30433")
    fitted = cli("report", "--pr", "30433", "--fit")
    assert fitted.code == 0 and fitted.out == full.out and fitted.err == ""
    r = cli("report", "--pr", "30433", "--fit", "--format", "json")
    assert r.code == 2 and r.err.startswith("Error: --fit shortens the markdown comment")


def test_report_fit_on_a_huge_investigation(cli, tmp_path: Path):
    from tests.support.generate import write_huge

    _, runs = write_huge(tmp_path, runs=600)
    assert cli("import", str(runs)).code == 0
    full = cli("report", "--pr", str(HUGE_PR))
    assert len(full.out) > COMMENT_LIMIT and "Shortened" not in full.out
    r = cli("report", "--pr", str(HUGE_PR), "--fit", "-o", "comment.md")
    assert r.code == 0
    body = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert len(body) <= COMMENT_LIMIT and body.rstrip().endswith(MARKER)
    assert "shortened to fit GitHub's comment limit: " in r.err and "of 600 runs (the oldest)" in r.err


def _seeded_model() -> dict:
    from triage.kb import store
    from triage.render.report import build
    from triage.rules.engine.evaluate import evaluate

    with store.session(store.resolve_url(None)) as s:
        bundle = store.load_bundle(s, store.find_investigation(s, 30433))
    return build(bundle, evaluate(bundle))


MERMAID_BLOCK = re.compile(r"^```mermaid\n(.*?)^```$", re.S | re.M)


@pytest.mark.slow
def test_shortening_keeps_or_drops_mermaid_blocks_whole(cli, seeded, mermaid_parse):
    model = _seeded_model()
    model["hypotheses"][0]["title"] = "t" * 70_000  # forces the text-cutting stages
    whole = set(MERMAID_BLOCK.findall(to_markdown(model)))
    assert len(whole) >= 2  # the chart and the bisect strips
    fitted = fit(model)
    assert fitted.texts_cut and fitted.runs_dropped == 0
    assert set(MERMAID_BLOCK.findall(fitted.body)) == whole  # every diagram kept, whole
    for limit in (20_000, 8_000, 4_000):  # fewer runs: the chart is drawn again for them
        blocks = MERMAID_BLOCK.findall(fit(model, limit).body)
        assert all(r["ok"] for r in mermaid_parse(blocks)), limit


def test_a_huge_url_is_dropped_not_the_runs(cli, seeded):
    model = _seeded_model()
    model["runs"][-1]["url"] = "https://ci.example/" + "a" * 70_000
    total = len(model["runs"])
    fitted = fit(model)
    assert fitted.runs_dropped == 0 and len(fitted.body) <= COMMENT_LIMIT
    assert "a" * 1000 not in fitted.body
    runs = fitted.body.split("### Runs\n", 1)[1].split("\n\n| run |", 1)[1].split("\n\n", 1)[0]
    assert runs.count("\n| ") == total  # every run, the last one without its link


@pytest.mark.parametrize("limit", [2_000, 5_000, 20_000, COMMENT_LIMIT, 300_000])
def test_attempts_given_up_early_fit_as_whole_renders_do(huge, limit):
    """An attempt is given up as soon as what the template wrote is sure not to fit: the comment
    fitted so is the one fitting whole renders gives, at every limit."""
    whole = fit(huge, limit, render=lambda m: to_markdown(m))  # a render of its own: never given up
    assert fit(huge, limit) == whole


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=" \nab", max_size=12), max_size=12), st.integers(0, 60))
@example(["a   ", "b"], 2)  # space, then a character past it
def test_a_text_is_given_up_only_when_its_kept_part_is_longer(pieces, most):
    from triage.render.report import _bounded

    text = "".join(pieces)
    got = _bounded(iter(pieces), most)
    assert got == (None if len(text.rstrip()) > most else text)


def test_a_wide_investigation_shortened_keeps_its_suggestions_and_bisects():
    """A wide investigation's comment at the tightest caps was still too long, and the minimal
    one kept only the verdict and the hypotheses' names: no suggestion, no bisect. Tighter steps
    come first: each bisect's points around its answer, each hypothesis's first reasons, then
    no experiments table."""
    from tests.support.wideinv import wide_investigation
    from triage.render.fit import _CAPS, POINTS_AROUND, REASONS, _Plan, _render
    from triage.render.report import build
    from triage.rules.engine.evaluate import evaluate

    inv, _ = wide_investigation(1, 400)
    model = build(inv, evaluate(inv))
    n = len(model["runs"])
    tightest = _render(model, _Plan(runs_dropped=n, details=False, caps=_CAPS[-1]), to_markdown).body
    tight = _render(model, _Plan(runs_dropped=n, details=False, caps=_CAPS[-1], tight=2), to_markdown).body
    limit = len(tight) + 200
    assert len(tightest) > limit  # the steps before would have left the minimal comment
    fitted = fit(model, limit)
    body = fitted.body
    assert len(body) <= limit and not fitted.minimal and body.rstrip().endswith(model["marker"])
    check_comment(body, model["marker"])
    assert "### Suggested next" in body and "### Bisect" in body and "### Experiments" not in body
    assert model["suggestions"] and all(f"**{s['short']}**" in body for s in model["suggestions"][:3])
    long = [b for b in model["bisects"] if len(b["points"]) > 2 * POINTS_AROUND + 1]
    assert long
    for b in long:
        answer = [b[k] for k in ("last_good", "first_bad", "next") if b[k]]
        assert all(f"`{label}`" in body for label in answer)
        assert f"The {len(b['points'])} points' evidence" in body
    assert body.count(" more points; triage bisect shows them") == len(long)
    rows = [line for line in body.split("### Elimination summary", 1)[1].split("\n\n", 2)[1].splitlines()
            if line.startswith("| ") and "<br>" in line]
    assert all(line.count("<br>") <= REASONS for line in rows)
