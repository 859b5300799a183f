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


def test_markdown_renders_as_gfm_tables_with_the_marker(cli, seeded):
    text = render(cli, "markdown")
    html = gfm(text)
    assert html.count("<table>") == 5  # summary, all evidence, runs, two bisects
    # the elimination summary has one row per hypothesis, three cells each
    summary = html.split("<table>")[1]
    rows = re.findall(r"<tr>(.*?)</tr>", summary, re.S)
    assert len(rows) == 1 + 19
    assert all(r.count("<td>") == 3 for r in rows[1:])
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
    runs_table = html.split("<table>")[3]
    for row in re.findall(r"<tr>(.*?)</tr>", runs_table, re.S)[1:]:
        assert row.count("<td>") == 5
    assert "<script>" not in html
    assert text.count("<!--") == 1 and text.count("-->") == 1
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
