"""The rendered report: golden files, and the markdown as GitHub renders it."""

from __future__ import annotations

import json
import re

import pytest

from triage.render.env import cell, code, md


def render(cli, fmt: str) -> str:
    r = cli("report", "--pr", "30433", "--format", fmt)
    assert r.code == 0, r.err
    return r.out


@pytest.mark.parametrize("fmt, name", [("markdown", "kimik26-disagg.md"), ("json", "kimik26-disagg.json"),
                                       ("text", "kimik26-disagg.txt")])
def test_golden(cli, seeded, golden, fmt, name):
    golden(name, render(cli, fmt))


def gfm(text: str) -> str:
    import cmarkgfm
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)


MERMAID = re.compile(r"^```mermaid\n(.*?)^```$", re.S | re.M)


def table(html: str, first_header: str) -> list[str]:
    """The rows of the rendered table whose first header cell is ``first_header``."""
    for t in html.split("<table>")[1:]:
        head = re.search(r"<th(?: [^>]*)?>(.*?)</th>", t, re.S)
        if head and head.group(1) == first_header:
            return re.findall(r"<tr>(.*?)</tr>", t.split("</table>")[0], re.S)
    raise AssertionError(f"no table starting with {first_header!r}")


def test_markdown_renders_as_gfm_tables_with_the_marker(cli, seeded):
    text = render(cli, "markdown")
    html = gfm(text)
    data = json.loads(render(cli, "json"))
    statuses = [h["status"] for h in data["hypotheses"]]
    ruled_out = statuses.count("ruled_out")
    assert 0 < ruled_out < len(statuses)  # both kinds of rows are there to check
    # summary (shown, ruled out), the evidence's numbers, experiments, runs, one per bisect
    assert html.count("<table>") == 5 + len(data["bisects"])
    # the elimination summary has one row per hypothesis: the undecided or confirmed ones
    # with their status, the ruled-out ones folded without it
    rows = table(html, "hypothesis")
    assert len(rows) == 1 + len(statuses) - ruled_out
    assert all(r.count("<td>") == 3 for r in rows[1:])
    folded = [t for t in html.split("<table>")[1:] if "<th>hypothesis</th>\n<th>evidence</th>" in t]
    assert len(folded) == 1 and folded[0].count("<tr>") == 1 + ruled_out
    experiments = table(html, "recipe")
    assert len(experiments) == 1 + len(data["experiments"]) and all(r.count("<td>") == 4 for r in experiments[1:])
    assert html.count('<pre lang="mermaid">') == 1 + len(data["bisects"])  # the metric chart and each bisect strip
    assert text.rstrip().endswith("<!-- triage:investigation=kimik26-disagg -->")
    assert "<!-- triage:investigation=kimik26-disagg -->" in html
    assert len(text) < 65536


def test_hostile_text_cannot_break_tables_or_the_marker(cli, seeded):
    evil = "x | y\n</td><script>alert(1)</script> --> <!-- @octocat @org/team `code` ```"
    r = cli("add-run", "--pr", "30433", "--run-id", "666", "--config", evil, "--status", "failed",
            "--metric", "gsm8k=0.5", "--note", evil)
    assert r.code == 0, r.err
    text = render(cli, "markdown")
    html = gfm(text)
    for row in table(html, "run")[1:]:
        assert row.count("<td>") == 4
    assert "<script>" not in html
    # In a Mermaid block "-->" is an arrow (syntax); everywhere else only the marker closes a comment.
    diagrams = MERMAID.findall(text)
    assert len(diagrams) == 3
    assert text.count("<!--") == 1 and MERMAID.sub("", text).count("-->") == 1
    assert "x | y" in diagrams[0]  # the hostile config is in the chart, defused
    for d in diagrams:
        assert "<!--" not in d and "</td>" not in d and "```" not in d and "<script" not in d
    assert re.search(r"(?<![\w&;])@octocat", html) is None


@pytest.mark.parametrize(
    "raw, want",
    [
        ("a|b", "a\\|b"),
        ("<b>x</b>", "&lt;b&gt;x&lt;/b&gt;"),
        ("line\nbreak", "line break"),
        ("@alice hi", "@&#8203;alice hi"),
        ("`tick`", "\\`tick\\`"),
        ("<!-- x -->", "&lt;!-- x --&gt;"),
    ],
)
def test_cell_escaping(raw, want):
    assert cell(raw) == want == md(raw)


def test_code_span_survives_backticks_and_pipes():
    assert code("a`b") == "``a`b``"
    assert code("x|y") == "`x\\|y`"
    assert code("`x`") == "`` `x` ``"


def test_json_report_is_valid_and_sorted(cli, seeded):
    data = json.loads(render(cli, "json"))
    ids = [h["id"] for h in data["hypotheses"]]
    assert ids[0] == "runtime-args" and len(ids) == 19


def test_hypotheses_are_shown_as_a_tree_children_under_their_parent():
    from triage.render.report import build, to_markdown
    from triage.rules.engine.evaluate import evaluate
    from tests.support.engine import BASE, inv

    base = BASE.replace("  - {id: mode, title: Mode}\n",
                        "  - {id: mode, title: Mode}\n  - {id: late-child, title: Late child, parent: backend}\n"
                        "  - {id: grandchild, title: Grandchild, parent: late-child}\n"
                        "  - {id: second, title: Second child, parent: backend}\n")
    bundle = inv(base=base)
    model = build(bundle, evaluate(bundle))
    nb = "\u00a0"
    assert [(h["tree"], h["id"]) for h in model["hypotheses"]] == [
        ("", "backend"),
        (f"├─{nb}", "late-child"),
        (f"│{nb}{nb}└─{nb}", "grandchild"),
        (f"└─{nb}", "second"),
        ("", "graph"),
        ("", "mode"),
    ]
    rows = table(gfm(to_markdown(model)), "hypothesis")
    assert "│\u00a0\u00a0└─\u00a0Grandchild" in rows[3]


def test_a_suggestion_without_a_run_template_says_to_start_it_by_hand():
    from triage.render.report import build, to_markdown, to_text
    from triage.rules.engine.evaluate import evaluate
    from tests.support.engine import BASE, inv

    bundle = inv(base=BASE.replace("    run: ci run -f configs={ids}\n  - id: eager", "  - id: eager"))
    model = build(bundle, evaluate(bundle))
    assert [s["command"] is None for s in model["suggestions"]] == [True, False]
    assert model["command"] == "ci run -f configs=eager"
    assert "1. **swap** — never run; decides `backend`, `mode` *(no `run:` template: start it by hand)*" in \
        to_markdown(model)
    assert "1. swap: never run; decides backend, mode (no run: template: start it by hand)" in to_text(model)
