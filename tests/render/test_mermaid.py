"""The Mermaid blocks of the PR comment parse with the real Mermaid parser.

``tests/mermaid`` pins Mermaid (and jsdom, for the DOM its sanitizer needs);
the first test that needs it runs ``npm ci`` there (a gitignored
``node_modules``).  Without node and npm the tests are skipped, except in CI
(``CI`` set), where they fail: CI must really check the diagrams.
"""

from __future__ import annotations

import re


from triage.render import pictures

MERMAID = re.compile(r"^```mermaid\n(.*?)^```$", re.S | re.M)


def _bisect(states: list[str], labels: list[str]) -> dict:
    points = [{"label": lab, "state": st, "value": 0.9 if st in ("good", "bad") else None, "runs": [], "reason": ""}
              for st, lab in zip(states, labels)]
    return {"points": points, "last_good": labels[0], "first_bad": labels[-1], "next": labels[1]}


def test_every_diagram_of_the_comment_parses(cli, seeded, mermaid_parse):
    """The bundled report, a report with hostile names, and strips in every state."""
    text = cli("report", "--pr", "30433").out
    diagrams = MERMAID.findall(text)
    assert len(diagrams) == 3
    evil = 'x | y "q" `c` ``` --> <!-- #1; 50% @octocat\nnext'
    r = cli("add-run", "--pr", "30433", "--run-id", "666", "--config", evil, "--status", "failed",
            "--metric", "gsm8k=0.5", "--set", "image=" + evil, "--set", "python=67361ff")
    assert r.code == 0, r.err
    hostile = MERMAID.findall(cli("report", "--pr", "30433").out)
    strips = [
        pictures.bisect_strip(_bisect(["good", "untested", "skipped", "unknown", "flaky", "bad"],
                                      ["a", 'b"]', "c;d", "e#f", "<g>", "h%%"])),
        pictures.bisect_strip(_bisect(["untested", "untested"], ["v0.5.13.post1-rocm720-mi35x-20260623", "latest"])),
    ]
    results = mermaid_parse(diagrams + hostile + strips)
    failures = [(d, r["error"]) for d, r in zip(diagrams + hostile + strips, results) if not r["ok"]]
    assert failures == []
    assert [r["type"] for r in results[:3]] == ["xychart", "flowchart-v2", "flowchart-v2"]


def test_the_check_rejects_a_broken_diagram(mermaid_parse):
    """The checker is real: a diagram with a syntax error is refused."""
    ok, broken = mermaid_parse(["xychart-beta\n  x-axis [\"a\"]\n  bar [1]", "xychart-beta\n  x-axis [\"a\"\n  bar [1]"])
    assert ok["ok"] and not broken["ok"]
    assert "Parse error" in broken["error"] or "Expecting" in broken["error"]
