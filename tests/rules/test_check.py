"""`triage check`: every problem of every file in one pass, and text cut short by a comment (issue #9)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support.rulelang import HEAD
from triage.rules.language.loader import load_file


def test_check_warns_when_a_comment_cuts_the_text(tmp_path: Path, cli):
    f = tmp_path / "cut.yaml"
    f.write_text(textwrap.dedent(HEAD) + textwrap.dedent("""
        hypotheses:
          - {id: a, title: A}
        evidence:
          - hypothesis: a
            verdict: rules_out
            because: main, which does not have #14462
          - {hypothesis: a, verdict: supports, because: "quoted #14462 is kept"}
        """))
    loaded, problems = load_file(f, display="cut.yaml")
    assert problems == [] and loaded is not None
    assert [str(w) for w in loaded.warnings] == [
        "cut.yaml:19:14: warning: the text stops before '#14462', which YAML reads as a comment; "
        'quote it to keep it: "main, which does not have #14462"']
    r = cli("check", str(f))
    assert r.code == 0 and "warning: the text stops before '#14462'" in r.err


def test_check_reports_schema_references_and_cycles_in_one_pass(tmp_path: Path, cli):
    f = tmp_path / "bad.yaml"
    f.write_text(textwrap.dedent(HEAD) + textwrap.dedent("""
        hypotheses:
          - {id: a, title: A, parnet: x}
          - {id: b, title: B}
        exclusive: [[b, nope]]
        rules:
          - {id: r, hypothesis: c, when: {bisect: x, first_bad: z}, then: confirmed}
        bisects:
          - {id: x, axis: sha, points: [p, q], good_when: {bisect: y, done: true}}
          - {id: y, axis: sha, points: [p, q], good_when: {bisect: x, last_good: p}}
        """))
    _, problems = load_file(f, display="bad.yaml")
    got = [p.message for p in problems]
    assert "unknown key 'parnet' (did you mean 'parent'?)" in got
    assert "unknown hypothesis 'nope'" in got
    assert "unknown hypothesis 'c'" in got
    assert "'z' is not a point of bisect 'x'" in got
    assert sum("bisects read each other in a cycle" in m for m in got) == 2
    assert "unknown hypothesis 'a'" not in " ".join(got)  # the item left out still counts as declared
    r = cli("check", str(f))
    assert r.code == 2 and r.out == "" and "6 problems" in r.err
