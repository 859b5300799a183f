"""`/triage` commands read from a PR comment: what counts as a command, what is
ignored (code blocks, quotes), what is malformed (quoted back), and the cap."""

from __future__ import annotations

import pytest

from triage.usecases.comments import LIMIT, Command, parse


def test_each_command_is_read_with_its_arguments_and_reason():
    text = "\r\n".join([
        "Thanks, looking at it.",
        "/triage exclude 28903343346 because based on plain main, not #30386",
        "/triage include 28903343346",
        "  /triage mark image v0.5.14 bad because gsm8k 0.87 on a local run",
        "/triage evidence runtime-args rules_out because flags identical in both legs",
        "/triage run",
        "/triage run fp8-aiter  tp8",
        "/triage refresh",
        "/triage help",
    ])
    read = parse(text)
    assert read.malformed == [] and read.dropped == 0
    assert [(c.verb, c.args, c.because) for c in read.commands] == [
        ("exclude", ("28903343346",), "based on plain main, not #30386"),
        ("include", ("28903343346",), None),
        ("mark", ("image", "v0.5.14", "bad"), "gsm8k 0.87 on a local run"),
        ("evidence", ("runtime-args", "rules_out"), "flags identical in both legs"),
        ("run", (), None),
        ("run", ("fp8-aiter", "tp8"), None),
        ("refresh", (), None),
        ("help", (), None),
    ]
    assert read.commands[2].line == "/triage mark image v0.5.14 bad because gsm8k 0.87 on a local run"


def test_code_blocks_quotes_and_lookalikes_are_not_commands():
    text = "\n".join([
        "```",
        "/triage exclude 1 because in a fence",
        "```",
        "~~~~sh",
        "/triage refresh",
        "```",  # a shorter, other fence does not close it
        "/triage refresh",
        "~~~~",
        "    /triage exclude 2 because indented code",
        "\t/triage refresh",
        "> /triage exclude 3 because quoted",
        ">> /triage help",
        "/triagex help",
        "see /triage help",
        "`/triage help`",
    ])
    assert parse(text).commands == [] and parse(text).malformed == []


def test_an_unclosed_fence_hides_the_rest_of_the_comment():
    assert parse("```\n/triage refresh\n").commands == []
    assert [c.verb for c in parse("```\nx\n```\n/triage refresh").commands] == ["refresh"]


@pytest.mark.parametrize("line, why", [
    ("/triage", "no command"),
    ("/triage frobnicate 1", "unknown command 'frobnicate'"),
    ("/triage exclude 123", "needs a reason"),
    ("/triage exclude because why", "needs RUN"),
    ("/triage exclude 1 2 because why", "exclude RUN because"),
    ("/triage exclude 1 because   ", "needs a reason"),
    ("/triage include", "needs RUN"),
    ("/triage include 1 because no", "include RUN"),
    ("/triage mark image v1 maybe because x", "good or bad"),
    ("/triage mark image bad because x", "mark BISECT POINT good|bad because"),
    ("/triage evidence h1 proves because x", "rules_out, supports, confirms or inconclusive"),
    ("/triage evidence h1 rules_out", "needs a reason"),
    ("/triage refresh now", "takes nothing"),
    ("/triage help me", "takes nothing"),
    ("/triage run because x", "run [RECIPE"),
])
def test_a_malformed_line_is_kept_with_why(line, why):
    read = parse(f"Please:\n{line}\n/triage refresh")
    assert [c.verb for c in read.commands] == ["refresh"]
    (bad,) = read.malformed
    assert bad.line == line.strip() and why in bad.why, bad.why


def test_at_most_limit_commands_are_read():
    read = parse("\n".join(["/triage refresh"] * (LIMIT + 3)))
    assert len(read.commands) == LIMIT and read.dropped == 3


def test_a_long_line_is_malformed_and_cut_short():
    read = parse("/triage exclude 1 because " + "x" * 5000)
    (bad,) = read.malformed
    assert "too long" in bad.why and len(bad.line) < 300


def test_command_is_a_value():
    assert Command("help", (), None, "/triage help") == Command("help", (), None, "/triage help")
