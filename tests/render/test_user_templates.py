"""Comment templates of a user's (``report --templates DIR``, ``TRIAGE_TEMPLATES``): they override
ours by name, stay sandboxed, and a broken one is a clear error (exit 2, ``path:line: …``), not a
traceback."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st


@pytest.fixture
def mine(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    return d


def test_a_template_of_the_users_overrides_ours(cli, seeded, mine):
    (mine / "report.md.j2").write_text("Gate {{ investigation.metric | md }}: {{ counts.confirmed }} confirmed\n"
                                       "{{ marker }}\n")
    r = cli("report", "--pr", "30433", "--templates", str(mine))
    assert r.code == 0, r.err
    assert r.out.startswith("Gate gsm8k: 1 confirmed") and r.out.rstrip().endswith("kimik26-disagg -->")


@pytest.mark.parametrize("text, says", [
    ("{{ marker.__class__.__mro__ }}\n", "report.md.j2:1: access to attribute '__class__' of 'str' object is unsafe"),
    ("ok\n{% if %}\n", "report.md.j2:2: "),
    ("ok\n\n{{ nope }}\n", "report.md.j2:3: 'nope' is undefined"),
    ("{{ investigation | runlink }}\n", "report.md.j2:1: 'dict object' has no attribute 'run_id'"),
])
def test_a_broken_or_unsafe_template_of_the_users_is_a_clear_error(cli, seeded, mine, text, says):
    (mine / "report.md.j2").write_text(text)
    r = cli("report", "--pr", "30433", "--templates", str(mine))
    assert r.code == 2 and says in r.err and "Traceback" not in r.err, r.err
    assert "template" in r.err and str(mine) in r.err


def _md_as_it_was(text) -> str:
    """``md`` before its shortcut for a run id or a word: every step, whatever the text."""
    import re

    s = "" if text is None else str(text)
    s = s.translate(str.maketrans({"<": "&lt;", ">": "&gt;", "&": "&amp;"}))
    s = re.sub(r"([\\`*_\[\]|#~])", r"\\\1", s)
    s = re.sub(r"@(?=[A-Za-z0-9])", "@&#8203;", s)
    return " ".join(s.split())


@given(st.one_of(st.text(), st.text(alphabet=st.characters(categories=["L", "N"])), st.integers(), st.none()))
@example("28903343346")
@example("ａｂ٣")
def test_md_says_what_every_step_says(text):
    from triage.render.env import md

    assert md(text) == _md_as_it_was(text)


def test_a_run_is_linked_by_the_filter_as_by_the_macro(cli, seeded, mine):
    """Ours link runs by ``| runlink``; a user's template may still call the macro."""
    (mine / "report.md.j2").write_text('{% import "_macros.md.j2" as m with context %}'
                                       "{% for r in (runs | selectattr('url') | list)[:2] %}{{ m.runlink(r) }}={{ r | runlink }};{% endfor %}\n"
                                       "{{ marker }}\n")
    r = cli("report", "--pr", "30433", "--templates", str(mine))
    assert r.code == 0, r.err
    pairs = r.out.splitlines()[0].rstrip(";").split(";")
    assert len(pairs) == 2 and all(a == b and a.startswith("[") for a, b in (p.split("=") for p in pairs))
