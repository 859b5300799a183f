"""Hostile text in every user- and log-controlled field, rendered as GitHub does.

Each field of a generated investigation carries a tag (``⟦field⟧``) followed by
a payload that tries every trick: pipes and cell closers, raw HTML, a forged or
closed marker, mentions, code fences, markdown links and images, emphasis,
newlines and HTML entities.  The comment is rendered with cmark-gfm
(``tests/gfm.py``: raw HTML passed through, no tag filter, so a failed
escape shows up as an element).  Then:

* every table row has its header's number of cells, and every tagged value
  sits whole inside one cell (so no pipe split it);
* the only elements and attributes are the ones the template writes;
* the marker is in the raw body once, as its last line, and in the HTML as
  the one HTML comment;
* no ``@name`` or ``@org/team`` is left to mention anyone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.gfm import Html, check_comment
from triage.render.env import cell, code, link, md

PAYLOAD = (
    "a | b || c \\| d \\\\| e "
    "</td></tr></table><script>alert(1)</script> <img src=x onerror=alert(1)> "
    "<details open><summary>pwn</summary> <br> <a href='javascript:alert(1)'>x</a> "
    "--> <!-- triage:investigation=hostile --> <!-- "
    "@octocat @github/security-team (@alice) "
    "`tick` ``` ~~~ ~~strike~~ *em* _em_ **bold** "
    "[link](javascript:alert(1)) ![img](https://example.com/x.png) [^1] "
    "&lt;script&gt; &#64;octocat &amp; "
    "<https://evil.example> "
    "\n# heading\n> quote\n- item\n|---|---|\n\u2028end\r\n"
)

MARKER = "<!-- triage:investigation=hostile -->"


def evil(tag: str) -> str:
    return f"⟦{tag}⟧ {PAYLOAD}"


def norm(text: str) -> str:
    """What a reader sees: no zero-width spaces, whitespace collapsed."""
    return " ".join(text.replace("\u200b", "").split())


def tagged_whole(doc: Html, tag: str) -> str:
    """Where ``⟦tag⟧`` is rendered; asserts its payload is whole there."""
    want = norm(evil(tag))
    places = [c for rows in doc.tables for row in rows for c in row] + doc.blocks
    # Mermaid sources carry text in Mermaid's own escapes (#60; for <): the
    # Mermaid syntax check (tests/render/test_mermaid.py) covers those.
    places = [p for p in places if not p.lstrip().startswith(("flowchart ", "%%{init", "xychart-beta"))]
    hits = [p for p in places if f"⟦{tag}⟧" in p]
    assert hits, f"⟦{tag}⟧ is not rendered anywhere"
    for place in hits:
        assert want in norm(place), f"⟦{tag}⟧ was cut: {norm(place)[:300]!r}"
    return hits[0]


# --------------------------------------------------------------------------
# A hostile investigation


BASE = evil("base-config")
OTHER = evil("crashed-config")
P1, P2, P3 = evil("point-1"), evil("point-2"), evil("point-3")


def hostile_rules(metric: str = "acc") -> dict:
    return {
        "schema_version": 1,
        "investigation": {
            "id": "hostile",
            "repo": "octo-org/octo-repo",
            "pr": 7,
            "title": evil("title"),
            "metric": metric,
            "gate": 0.9,
            "base": BASE,
            "references": {
                "bad": {"config": BASE, "note": evil("bad-note")},
                "good": {"value": 0.95, "n": 1000, "note": evil("good-note")},
            },
        },
        "hypotheses": [
            {"id": "h1", "title": evil("h1-title"), "text": evil("h1-text")},
            {"id": "h2", "title": evil("h2-title")},
            {"id": "h3", "title": evil("h3-title"), "parent": "h2"},
            {"id": "h4", "title": evil("h4-title")},
        ],
        "recipes": [
            {"id": "r1", "base": BASE, "change": evil("r1-change"), "tests": ["h1"],
             "predicts": {"h1": "recovers"}, "run": "gh workflow run ci.yml -f configs={ids} " + evil("r1-run")},
            {"id": "r2", "base": BASE, "change": evil("r2-change"), "tests": ["h4"],
             "predicts": {"h4": "recovers"}, "run": "gh workflow run ci.yml -f configs={ids} " + evil("r2-run")},
        ],
        "rules": [
            {"id": "base-fails", "hypothesis": "h2", "when": {"config": BASE, "below": "gate"},
             "then": "supports", "because": evil("because") + " {{ value }}"},
            {"id": "crash-reader", "hypothesis": "h4", "when": {"config": OTHER, "at_least": "gate"},
             "then": "ruled_out", "because": evil("because-crash")},
        ],
        "evidence": [
            {"hypothesis": "h3", "verdict": "rules_out", "because": evil("manual-because"),
             "author": evil("author")},
        ],
        "bisects": [
            {"id": "b1", "title": evil("bisect-title"), "axis": "img", "points": [P1, P2, P3],
             "good_when": {"at_least": "gate"}, "run": "run " + evil("bisect-run") + " {point}"},
        ],
        "signatures": [
            {"id": "sig1", "text": "boom boom", "class": "crash", "meaning": evil("sig-meaning"),
             "remedy": evil("sig-remedy")},
        ],
    }


def hostile_runs() -> list[dict]:
    url = "https://ci.example/runs/1?q=a|b&c=`d`*_e_*@octocat[x]{y}^z~w"
    common = {"investigation": "hostile", "time": "2026-01-01T00:00:00Z"}
    return [
        {**common, "run_id": evil("run-bad"), "config": BASE, "status": "failed",
         "metrics": {"acc": {"value": 0.85, "n": 1000}, "tput": 12.5}, "provenance": {"img": P3},
         "url": url, "note": evil("note-bad"), "time": "2026-01-03T00:00:00Z"},
        {**common, "run_id": evil("run-good"), "config": evil("good-config"), "status": "passed",
         "metrics": {"acc": {"value": 0.95, "n": 1000}}, "provenance": {"img": P1}, "url": url,
         "time": "2026-01-01T00:00:00Z"},
        {**common, "run_id": evil("run-r1"), "config": "r1", "status": "passed",
         "metrics": {"acc": {"value": 0.951, "n": 1000}}, "url": url, "time": "2026-01-04T00:00:00Z"},
        {**common, "run_id": evil("run-crashed"), "config": OTHER, "status": "crashed",
         "signature": "sig1", "signature_line": evil("signature-line"), "note": evil("note-crashed"),
         "provenance": {"img": P2}, "time": "2026-01-05T00:00:00Z"},
        {**common, "run_id": evil("run-error"), "config": OTHER, "status": "error", "note": evil("note-error"),
         "time": "2026-01-06T00:00:00Z"},
        {**common, "run_id": evil("run-excluded"), "config": "r2", "status": "passed",
         "metrics": {"acc": 0.95, "probe_count": 3}, "excluded": True, "excluded_reason": evil("excluded-reason"),
         "log_excerpt": evil("log-excerpt"), "time": "2026-01-07T00:00:00Z"},
        {**common, "run_id": "plain", "config": evil("probe-config"), "status": "passed",
         "metrics": {"tput": 99.0}, "time": "2026-01-08T00:00:00Z"},
    ]


@pytest.fixture
def hostile(cli, tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "hostile.yaml").write_text(yaml.safe_dump(hostile_rules(), allow_unicode=True), encoding="utf-8")
    runs = tmp_path / "hostile.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in hostile_runs()), encoding="utf-8")
    r = cli("import", str(runs))
    assert r.code == 0, r.err
    return tmp_path


def report(cli, *args: str) -> str:
    r = cli("report", "--pr", "7", *args)
    assert r.code == 0, r.err
    return r.out


# Fields that the comment shows (reference notes, notes of valid runs,
# hypothesis texts, log excerpts and signature lines are not part of it; r1
# has its run, so its command is no longer suggested).
VISIBLE = [
    "title", "h1-title", "h2-title", "h3-title", "h4-title",
    "r1-change", "r2-change", "r2-run", "because", "manual-because", "author",
    "bisect-title", "point-1", "point-2", "point-3", "sig-meaning", "sig-remedy",
    "run-bad", "run-good", "run-r1", "run-crashed", "run-error", "run-excluded",
    "base-config", "good-config", "crashed-config", "probe-config", "excluded-reason", "note-error",
]


def test_every_hostile_field_is_rendered_whole_and_harmless(cli, hostile):
    body = report(cli)
    # summary (shown rows, ruled-out rows), the evidence's numbers, experiments, runs, bisect
    doc = check_comment(body, MARKER, tables=6)
    missing = [t for t in VISIBLE if f"⟦{t}⟧" not in "".join(doc.text)]
    assert missing == []
    for tag in VISIBLE:
        tagged_whole(doc, tag)
    runs_table = next(t for t in doc.tables if t[0][0] == "run")
    assert runs_table[0] == ["run", "config", "acc", "reading"]
    assert len(runs_table) == 1 + len(hostile_runs())
    # run links are kept, with the URL's troublesome characters percent-encoded;
    # plain URLs in the text become autolinks, as GitHub makes them anyway
    hrefs = [a["href"] for t, a in doc.tags if t == "a"]
    assert "https://ci.example/runs/1?q=a%7Cb&c=%60d%60*_e_*%40octocat%5Bx%5D%7By%7D%5Ez~w" in hrefs
    assert set(hrefs) <= {hrefs[0], "https://ci.example/runs/1?q=a%7Cb&c=%60d%60*_e_*%40octocat%5Bx%5D%7By%7D%5Ez~w",
                          "https://example.com/x.png", "https://evil.example"}


def test_hostile_metric_name(cli, tmp_path: Path):
    rules = tmp_path / "rules"
    rules.mkdir()
    spec = hostile_rules(metric=evil("metric"))
    spec["rules"] = []
    spec["recipes"] = []
    spec["bisects"] = []
    spec["investigation"]["references"] = {"good": {"value": 0.95}}
    (rules / "hostile.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    r = cli("add-run", "--pr", "7", "--run-id", "1", "--config", "c", "--status", "passed", "--metric", "acc=0.5")
    assert r.code == 0, r.err
    body = report(cli)
    doc = check_comment(body, MARKER)
    assert norm(evil("metric")) in norm(doc.blocks[1])  # the gate line
    runs_table = next(t for t in doc.tables if t[0][0] == "run")
    assert norm(runs_table[0][2]) == norm(evil("metric"))  # a header cell, whole


def test_hostile_text_survives_shortening(cli, hostile):
    from triage.kb import store
    from triage.render import report as render
    from triage.render.fit import fit
    from triage.rules.engine.evaluate import evaluate

    with store.session(store.resolve_url(None)) as s:
        bundle = store.load_bundle(s, store.find_investigation(s, 7))
    model = render.build(bundle, evaluate(bundle))
    full = render.to_markdown(model)
    # every stage: runs, details, texts cut at 300, 120 and 60, the minimal comment
    seen = set()
    for limit in (len(full) - 1, len(full) // 2, 12_000, 6_000, 3_000, 1_500):
        fitted = fit(model, limit, keep_runs=2)
        assert len(fitted.body) <= limit and fitted.shortened
        check_comment(fitted.body, MARKER)
        seen.add((fitted.details_dropped, fitted.texts_cut, fitted.minimal))
    assert {(False, False, False), (True, True, False), (True, True, True)} <= seen


# --------------------------------------------------------------------------
# The filters one by one


@pytest.mark.parametrize("flt", [md, cell, code, lambda t: link(t, "https://example.com/x")],
                         ids=["md", "cell", "code", "link"])
def test_each_filter_in_a_table_cell(flt):
    body = f"| a | b |\n|---|---|\n| {flt(evil('cell'))} | ok |\n\n{MARKER}\n"
    doc = check_comment(body, MARKER, tables=1)
    assert doc.tables[0][1][1] == "ok"
    assert norm(evil("cell")) == norm(doc.tables[0][1][0])


@pytest.mark.parametrize("flt", [md, lambda t: code(t, cell=False)], ids=["md", "code"])
def test_each_filter_in_a_paragraph_above_a_table(flt):
    # a paragraph right above a table is read with the table's pipe rules
    body = f"{flt(evil('para'))}\n\n| a | b |\n|---|---|\n| x | y |\n\n{MARKER}\n"
    doc = check_comment(body, MARKER, tables=1)
    assert norm(doc.blocks[0]) == norm(evil("para"))


@pytest.mark.parametrize(
    "url",
    [
        "https://x.example/a|b",
        "https://x.example/`a`|`b`",
        "https://x.example/?a=[1]&b={2}^",
        "https://x.example/\\|",
        "https://x.example/@octocat",
        "https://x.example/*a*_b_",
    ],
)
def test_link_urls_cannot_break_a_cell(url):
    body = f"| a | b |\n|---|---|\n| {link('run', url)} | ok |\n\n{MARKER}\n"
    doc = check_comment(body, MARKER, tables=1)
    assert doc.tables[0][1] == ["run", "ok"]
    (href,) = [a["href"] for t, a in doc.tags if t == "a"]
    assert href.startswith("https://x.example/") and "|" not in href


@pytest.mark.parametrize("url", ["javascript:alert(1)", "ftp://x", "https://x y", "https://x/(a)", None, ""])
def test_link_refuses_other_urls(url):
    assert link("a|b", url) == "a\\|b"


def test_block_cannot_close_its_fence_or_the_marker():
    from triage.render.env import block

    text = "run\n```\n````\n<!-- x --> @octocat\n~~~"
    body = f"{block(text)}\n\n{MARKER}\n"
    doc = check_comment(body, MARKER)
    (pre,) = [b for b in doc.blocks if "run" in b]
    assert norm(pre) == norm(text)
