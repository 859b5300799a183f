"""What to run next: expected decisions per unit of cost, missing base runs, known failures."""

from __future__ import annotations

from tests.support.engine import BISECT, PARENT, RANKING, inv, run
from triage.rules.engine.evaluate import SignatureInfo, evaluate
from triage.rules.next.suggest import Outcome, rank


# --------------------------------------------------------------------------
# The repros of the issue


def test_a_missing_base_run_is_asked_for_and_the_recipe_waits_for_it():
    ev = evaluate(inv(base=PARENT, runs=[run("1", "child", 0.88)]))
    assert ev.statuses == {"h": "open"}
    (s,) = ev.suggestions
    assert (s.recipe, s.kind, s.tests) == ("parent", "base", ("h",))
    assert s.command == "ci -f configs=parent"
    assert "run `parent` (base of `child`): without it `h` cannot be decided" in s.why
    (st,) = ev.recipes
    assert st.state == "waiting" and st.waiting == ("parent",)
    assert st.predictions == (("h", "waiting for parent"),)
    # once the base has run, the prediction is decided and nothing is asked for
    ev = evaluate(inv(base=PARENT, runs=[run("1", "child", 0.88), run("2", "parent", 0.94)]))
    assert ev.statuses == {"h": "ruled_out"} and ev.suggestions == []
    assert ev.recipes[0].state == "run" and ev.recipes[0].predictions == (("h", "decided"),)


def test_a_top_level_all_without_selector_does_not_take_every_invalid_run():
    extra = """
rules:
  - id: probe-passes
    hypothesis: graph
    when: {all: [{config: probe, at_least: gate}]}
    then: ruled_out
"""
    ev = evaluate(inv(extra, runs=[run("9", "unrelated", status="crashed")]))
    assert ev.statuses["graph"] == "open"
    assert [e for e in ev.evidence if e.hypothesis == "graph"] == []
    # the run it names is still seen
    ev = evaluate(inv(extra, runs=[run("9", "probe", status="crashed")]))
    assert ev.statuses["graph"] == "inconclusive"


def test_a_bisect_is_not_done_while_its_ends_are_untested():
    from tests.support.engine import bisect_of, img

    _, b = bisect_of([img("1", "d2", 0.941), img("2", "d3", 0.879)])
    assert (b.last_good, b.first_bad) == ("d2", "d3")
    assert not b.ends_ok and not b.done
    _, b = bisect_of([img("0", "d1", 0.94), img("1", "d2", 0.941), img("2", "d3", 0.879), img("3", "d5", 0.88)])
    assert b.ends_ok and b.done


# --------------------------------------------------------------------------
# Ranking


def test_a_bisect_that_decides_a_hypothesis_outranks_recipes():
    extra = BISECT.replace("    run: ci run -f image={point}\n",
                           "    run: ci run -f image={point}\n    decides: {first_bad_found: {mode: confirmed}}\n")
    ev = evaluate(inv(extra))
    first = ev.suggestions[0]
    assert first.kind == "bisect" and first.tests == ("mode",)
    # 1 hypothesis + log2 of 4 positions the first bad can be at
    assert first.score == 3.0
    # without the link it still scores its range as information
    ev = evaluate(inv(BISECT))
    b = next(s for s in ev.suggestions if s.kind == "bisect")
    assert b.score == 2.0 and b.tests == ()


def test_a_bisect_whose_next_step_checks_an_end_is_worth_that_check():
    """A bisect whose first bad was found next to its last good, with an end of the range not
    checked yet, scored 0 (one point left: log2 1) and ranked below every recipe, though the
    check of that end tells whether the range holds.  While an end is unchecked, the range
    counts as at least two points: one bit."""
    from tests.support.engine import bisect_of, img

    for runs, end in (([img("1", "d2", 0.941), img("2", "d3", 0.879)], "d1"),  # good end unchecked
                      ([img("2", "d2", 0.879)], "d1"),  # the last good is the unchecked good end itself
                      ([img("1", "d1", 0.94), img("2", "d2", 0.941), img("3", "d3", 0.879)], "d5")):  # the bad end
        ev, b = bisect_of(runs)
        assert not b.ends_ok and b.next == end
        (s,) = [s for s in ev.suggestions if s.kind == "bisect"]
        assert s.score == 1.0 and s.command == f"ci run -f image={end}"
    # a range of four points still scores its log2 4, and a finished bisect is not suggested
    ev, b = bisect_of([])
    assert [s.score for s in ev.suggestions if s.kind == "bisect"] == [2.0]
    ev, b = bisect_of([img("0", "d1", 0.94), img("1", "d2", 0.941), img("2", "d3", 0.879), img("3", "d5", 0.88)])
    assert b.done and [s for s in ev.suggestions if s.kind == "bisect"] == []


def test_priors_weigh_hypotheses():
    base = RANKING.replace("  - {id: h1, title: One}\n", "  - {id: h1, title: One, prior: 5}\n")
    ev = evaluate(inv(base=base))
    scores = {s.recipe: s.score for s in ev.suggestions}
    assert scores == {"wide": 6.5, "narrow": 5.0, "pricey": 1.5}


def test_a_known_failure_scores_below_an_equal_candidate_until_a_run_after_it():
    base = RANKING.replace("    tests: [h1]\n    predicts: {h1: recovers}\n", "    predicts: {h4: recovers}\n")
    sigs = {"abort": SignatureInfo("abort", "setup-error", "no model class", "rebase onto the checkout PR")}
    ev = evaluate(inv(base=base, runs=[run("1", "narrow", status="error", signature="abort")], signatures=sigs))
    by = {s.recipe: s for s in ev.suggestions}
    assert by["narrow"].score == 0.5  # one decision, one failed attempt
    assert by["narrow"].advice == "fix first: abort (setup-error): rebase onto the checkout PR"
    assert by["narrow"].blocked
    # a valid run after the remedy: decided, not suggested
    ev = evaluate(inv(base=base, runs=[run("1", "narrow", status="error", signature="abort"),
                                       run("2", "narrow", 0.879)], signatures=sigs))
    assert "narrow" not in {s.recipe for s in ev.suggestions}


def test_outcomes_come_from_a_function_that_can_be_replaced():
    ev = evaluate(inv(base=RANKING))

    def only_wide(candidate, ctx):
        if candidate.id == "wide":
            return [Outcome("recovers", 1.0, (("h1", "confirmed"),))]
        return []

    from triage.rules.engine.context import Context

    i = inv(base=RANKING)
    ranked = rank(i, Context(i), ev.statuses, ev.bisects, ev.recipes, ev.next_level, outcomes=only_wide)
    assert [(s.recipe, s.score) for s in ranked] == [("wide", 1.0)]


def test_a_missing_reference_or_compared_with_run_is_asked_for():
    base = PARENT.replace("    bad: {value: 0.878, n: 1319}\n", "    bad: {config: nightly}\n").replace(
        "predicts: {h: unchanged}", "predicts: {h: recovers}")
    base += """
rules:
  - id: same-as-twin
    hypothesis: h
    when: {config: probe, same_as: {config: twin}}
    then: ruled_out
"""
    ev = evaluate(inv(base=base, runs=[run("1", "child", 0.94), run("2", "probe", 0.9)]))
    by = {s.recipe: s for s in ev.suggestions}
    assert set(by) == {"nightly", "twin"}
    assert by["nightly"].kind == "base" and "(reference `bad`, for `child`)" in by["nightly"].why
    assert by["nightly"].command == "ci -f configs=nightly"
    assert by["twin"].why.startswith("run `twin` (compared with, for rule `same-as-twin`): without it `h` cannot")
    assert by["nightly"].score == 1.0 and by["twin"].score == 0.5  # a recovery decides either way
    assert ev.recipes[0].state == "waiting" and ev.recipes[0].waiting == ("nightly",)


def test_a_rule_part_waiting_for_its_comparison_asks_for_it_and_a_support_only_rule_does_not():
    base = PARENT + """
rules:
  - id: both
    hypothesis: h
    when:
      all:
        - {config: probe, same_as: {config: twin}}
        - {config: other, at_least: gate}
    then: confirmed
  - id: hint
    hypothesis: h
    when: {config: probe, same_as: {config: cousin}}
    then: supports
"""
    ev = evaluate(inv(base=base, runs=[run("2", "probe", 0.9)]))
    assert [(s.recipe, s.kind) for s in ev.suggestions] == [("twin", "base"), ("child", "recipe")]  # tie: the missing run


def test_a_rule_of_some_provenance_waits_for_its_reference_only_when_those_runs_have_data():
    """A rule that selects a config's runs of some provenance asks for what its comparison
    waits for (a reference without a value yet) when such a run has the number, and not
    otherwise; with nothing to wait for, it asks for nothing either way."""
    base = PARENT.replace("    good: {value: 0.944, n: 1319}\n", "    good: {config: nightly}\n")
    base += """
rules:
  - id: py312
    hypothesis: h
    when: {config: probe, provenance: {python: "3.12"}, recovers: true}
    then: confirmed
"""
    py = lambda v: {"provenance": {"python": v}}  # noqa: E731
    asked = evaluate(inv(base=base, runs=[run("1", "probe", 0.9, **py("3.12"))]))
    assert [(s.recipe, s.kind) for s in asked.suggestions if s.recipe == "nightly"] == [("nightly", "base")]
    assert "(reference `good`, for rule `py312`)" in next(s for s in asked.suggestions if s.recipe == "nightly").why
    other = evaluate(inv(base=base, runs=[run("1", "probe", 0.9, **py("3.11"))]))
    assert "nightly" not in {s.recipe for s in other.suggestions}
    valued = evaluate(inv(base=base.replace("    good: {config: nightly}\n", "    good: {value: 0.944, n: 1319}\n"),
                          runs=[run("1", "probe", 0.9, **py("3.12"))]))
    assert "nightly" not in {s.recipe for s in valued.suggestions}
