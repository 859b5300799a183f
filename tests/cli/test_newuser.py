"""What a new user trips on (#29): a failing command leaves nothing behind,
every command that writes creates the knowledge base, errors say what to do."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import EXAMPLE_RUNS


def _scaffold(cli) -> None:
    r = cli("init", "--id", "p99", "--repo", "acme/server", "--pr", "1234", "--metric", "p99_ms",
            "--direction", "lower", "--gate", "150")
    assert r.code == 0, r.err


def test_a_command_that_fails_creates_no_knowledge_base(cli, rules_dir, tmp_path):
    r = cli("add-run", "--pr", "4321", "--run-id", "1", "--config", "c", "--status", "failed")
    assert r.code == 3, r.err
    assert "no investigation" in r.err
    assert not list(tmp_path.glob("kb.sqlite*")), list(tmp_path.iterdir())
    r = cli("add-run", "--pr", "30433", "--run-id", "1", "--config", "c", "--status", "failed",
            "--log", str(tmp_path / "no-such.log"))
    assert r.code == 2 and not list(tmp_path.glob("kb.sqlite*")), r.err


def test_a_failing_command_keeps_a_knowledge_base_that_was_there(cli, seeded, tmp_path):
    before = (tmp_path / "kb.sqlite").stat().st_size
    assert cli("add-run", "--pr", "4321", "--run-id", "1", "--config", "c", "--status", "failed").code == 3
    assert (tmp_path / "kb.sqlite").stat().st_size >= before
    assert cli("report", "--pr", "30433").code == 0


@pytest.mark.parametrize("args, said", [
    (("bisect", "mark", "--pr", "1234", "image", "img-1", "good", "--because", "ran it by hand"),
     "marked image img-1 good (manual)"),
    (("evidence", "add", "--pr", "1234", "--hypothesis", "suspect-change", "--verdict", "rules_out",
      "--because", "the diff does not touch it"), "recorded manual evidence for suspect-change: rules_out"),
])
def test_recording_by_hand_creates_the_knowledge_base(cli, tmp_path, args, said):
    _scaffold(cli)
    if args[0] == "bisect":  # a bisect to mark: the scaffold's commented example, live
        path = tmp_path / "rules" / "p99.yaml"
        text = path.read_text().replace(
            "# bisects:\n#   - id: image\n#     axis: image\n",
            "bisects:\n  - id: image\n    axis: image\n    points: [img-1, img-2]\n    good_when: {below: gate}\n"
            "# old:\n")
        path.write_text(text)
        assert cli("check").code == 0, cli("check").err
    r = cli(*args)
    assert r.code == 0, r.err
    assert said in r.out
    assert (tmp_path / "kb.sqlite").exists()


def test_interrupted_says_nothing_was_written(cli, rules_dir, tmp_path, monkeypatch):
    from triage.ingest import importer

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(importer, "import_file", interrupted)
    r = cli("import", str(EXAMPLE_RUNS))
    assert r.code == 130
    assert r.err.strip() == "interrupted: nothing was written"
    assert not list(tmp_path.glob("kb.sqlite*"))


@pytest.mark.parametrize("url", ["postgres://u@localhost/triage", "postgresql+nodriver://u@localhost/triage"])
def test_a_postgres_url_says_what_to_install_and_write(cli, rules_dir, url):
    r = cli("--db", url, "report", "--pr", "30433")
    assert r.code == 2
    assert "triage[postgres]" in r.err and "postgresql+psycopg://" in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


@pytest.mark.parametrize("text, line, hint", [
    ("schema_version: 1\ninvestigation:\n\tid: x\n", 3, "a tab"),
    ("schema_version: 1\nhypotheses:\n  - id: a\n    title: A\n  id: b\n  title: B\n", 5, "does not start with `- `"),
    ("schema_version: 1\nhypotheses:\n  - id: a\n    title: A\n   - id: b\n     title: B\n", 5,
     "indented 3 spaces"),
    ("schema_version: 1\nhypotheses:\n  - id: a\n    title: A\n  - id: b\n      title: B\n", 6,
     "deeper than"),
])
def test_yaml_syntax_errors_come_with_a_plain_hint(cli, tmp_path, text, line, hint):
    (tmp_path / "bad.yaml").write_text(text)
    r = cli("check", "bad.yaml")
    assert r.code == 2
    assert f"bad.yaml:{line}:" in r.err and hint in r.err, r.err
    assert len(r.err.strip().splitlines()) == 1


# ---------------------------------------------------------------- the comment


def _screen(cli) -> str:
    from triage.render.digest import first_screen

    r = cli("report", "--pr", "30433")
    assert r.code == 0, r.err
    return first_screen(r.out)


def _line(screen: str, start: str) -> str:
    return next(x for x in screen.splitlines() if x.startswith(start))


def test_next_level_is_named_under_its_own_parent_only(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "28907609511", "--config", "kimik26-fp8-1k1k-1p1d-aiterdecode",
            "--metric", "gsm8k=0.943/1319", "--status", "failed")
    assert r.code == 0, r.err
    screen = _screen(cli)
    backend = _line(screen, "- ✅ **Confirmed:** The decode attention backend")
    image = _line(screen, "- ✅ **Confirmed:** The docker image")
    assert "next level" not in backend, backend
    assert image.endswith("next level: `image-aiter`, `image-rocm`, `image-sgl-kernel`"), image


def test_open_says_what_the_next_level_is(cli, seeded):
    line = _line(_screen(cli), "- ⬜ **Open (5):**")
    assert line.endswith("; and the 3 of the next level under The docker image (aiter / ROCm / sgl-kernel)"), line


def _p99(cli, revert_value: str, revert_status: str) -> str:
    _scaffold(cli)
    for run, config, value, status in (("1", "p99-nightly", "171.2", "failed"),
                                       ("2", "p99-nightly-revert", revert_value, revert_status)):
        r = cli("add-run", "--pr", "1234", "--run-id", run, "--config", config, "--metric", f"p99_ms={value}",
                "--status", status)
        assert r.code == 0, r.err
    r = cli("report", "--pr", "1234")
    assert r.code == 0, r.err
    return r.out


def test_few_ruled_out_are_named(cli):
    body = _p99(cli, "172", "failed")
    assert "- ❌ **Ruled out:** 1 of 1: The suspected change" in body, body[:1500]


def test_a_finished_investigation_says_so(cli):
    body = _p99(cli, "140", "passed")
    assert "✅ **Confirmed:** The suspected change" in body, body[:1500]
    assert "### Suggested next\n\nNothing left to run: the verdict holds on 2 runs." in body, body[:1500]
    r = cli("report", "--pr", "1234", "--format", "text")
    assert "Nothing left to run: the verdict holds on 2 runs." in r.out, r.out


def test_the_run_command_is_one_option_a_line(cli, seeded):
    screen = _screen(cli)
    block = screen[screen.index("```\ngh workflow run"):].split("```")[1]
    lines = block.strip("\n").splitlines()
    assert lines[0] == 'gh workflow run "Nightly Test (AMD MI355X 2N 1P1D Disagg)" \\'
    assert lines[1] == "    --ref amd/kimik26-disagg-decode-repro \\"
    assert lines[2].startswith("    -f configs=kimik26-fp8-1k1k-1p1d-kvlatent,") and len(lines) == 3
    r = cli("report", "--pr", "30433", "--format", "json")
    assert '"command": "gh workflow run \\"Nightly Test' in r.out  # the JSON keeps it on one line


def test_wrapping_keeps_quoted_words_whole():
    from triage.render.commands import wrap, words

    assert words("""a "b c" 'd e' f\\ g""") == ['a', '"b c"', "'d e'", "f\\ g"]
    assert wrap("short -x 1") == "short -x 1"
    assert wrap("cmd " + "y" * 80 + " --flag 'v w' -q") == "cmd " + "y" * 80 + " \\\n    --flag 'v w' \\\n    -q"


# ---------------------------------------------------------------- init without a gate


def test_init_needs_no_gate_and_its_report_says_there_is_none(cli, tmp_path):
    r = cli("init", "--id", "walltime", "--repo", "acme/ci", "--pr", "7", "--metric", "wall_s", "--direction", "lower")
    assert r.code == 0, r.err
    text = (tmp_path / "rules" / "walltime.yaml").read_text()
    assert "\n  gate:" not in text and "better_than: bad" in text
    r = cli("check")
    assert r.code == 0, r.err
    r = cli("test")
    assert r.code == 0 and "2 passed, 0 failed" in r.out, r.out
    for run, config, value in (("1", "walltime-nightly", "1560"), ("2", "walltime-nightly-revert", "1470")):
        r = cli("add-run", "--pr", "7", "--run-id", run, "--config", config, "--metric", f"wall_s={value}",
                "--status", "failed")
        assert r.code == 0, r.err
    r = cli("report", "--pr", "7")
    assert r.code == 0, r.err
    assert "no gate" in r.out.split("###")[0] and "gate:" not in r.out, r.out[:600]
    assert "✅ **Confirmed:** The suspected change" in r.out
    r = cli("report", "--pr", "7", "--format", "text")
    assert "no gate" in r.out.splitlines()[1], r.out[:300]


def test_init_with_a_gate_confirms_a_revert_that_passes_it(cli, tmp_path):
    _scaffold(cli)
    text = (tmp_path / "rules" / "p99.yaml").read_text()
    assert "{when: {passes: gate}, confirms: true}" in text
    r = cli("test")
    assert r.code == 0 and "2 passed, 0 failed" in r.out, r.out


# ---------------------------------------------------------------- a bisect's decides:

DECIDES = """\
schema_version: 1
investigation: {id: img, repo: acme/server, pr: 55, title: image regression, metric: score, gate: 0.9}
hypotheses:
  - {id: image-regression, title: The image}
  - {id: other, title: Something else}
bisects:
  - id: image
    axis: image
    points: [i1, i2, i3]
    good_when: {at_least: gate}
    decides: {first_bad_found: {image-regression: confirmed, other: ruled_out}}
"""


def test_a_finished_bisect_sets_the_status_it_decides(cli, tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "img.yaml").write_text(DECIDES)
    r = cli("check")
    assert r.code == 0, r.err
    assert "bisect image: its first bad point, once found, decides image-regression confirmed, other ruled out" \
        in r.out, r.out

    def add(run: str, image: str, value: str) -> str:
        r = cli("add-run", "--pr", "55", "--run-id", run, "--config", "nightly", "--metric", f"score={value}",
                "--status", "passed" if float(value) >= 0.9 else "failed", "--set", f"image={image}")
        assert r.code == 0, r.err
        return r.out

    add("1", "i1", "0.95")
    add("2", "i3", "0.80")
    r = cli("hypotheses", "--pr", "55", "--format", "json")
    assert all(h["status"] == "open" for h in __import__("json").loads(r.out)), r.out  # not found yet
    out = add("3", "i2", "0.96")
    assert "image-regression: open → confirmed" in out and "other: open → ruled_out" in out, out
    import json

    hyps = {h["id"]: h for h in json.loads(cli("hypotheses", "--pr", "55", "--format", "json").out)}
    assert hyps["image-regression"]["status"] == "confirmed"
    assert any("first bad i3" in x and "last good i2" in x for x in hyps["image-regression"]["reasons"]), hyps


# ---------------------------------------------------------------- hypotheses at common widths


@pytest.mark.parametrize("width", [80, 100, 120, 132, 200])
def test_hypotheses_read_at_every_common_width(cli, seeded, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    r = cli("hypotheses", "--pr", "30433")
    assert r.code == 0, r.err
    lines = r.out.rstrip("\n").splitlines()
    assert max(len(x) for x in lines) <= width
    header = next(x for x in lines if x.startswith("┃"))
    cells = [c for c in header.split("┃")[1:-1]]
    assert [c.strip() for c in cells][-1] == "evidence" and len(cells[-1]) >= 30, header
    assert ("title" in header) == (width >= 160)
    assert len(lines) <= 5 + 3 * 19, len(lines)  # at most three lines a hypothesis
    assert "│ image-regression" in r.out and "(+3 more)" in r.out


# ---------------------------------------------------------------- config typos

TYPO = """\
schema_version: 1
investigation: {id: img, repo: acme/server, pr: 55, title: image regression, metric: score, gate: 0.9}
hypotheses:
  - {id: image-regression, title: The image}
bisects:
  - id: image
    axis: image
    config: nigthly
    points: [i1, i2, i3]
    good_when: {at_least: gate}
"""


def test_a_misspelt_bisect_config_is_warned_about_once_runs_exist(cli, tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "img.yaml").write_text(TYPO)
    r = cli("check")
    assert r.code == 0 and "config" not in r.err, r.err  # no runs yet: nothing to compare with
    r = cli("add-run", "--pr", "55", "--run-id", "1", "--config", "nightly", "--metric", "score=0.95",
            "--status", "passed", "--set", "image=i1")
    assert r.code == 0, r.err
    r = cli("check")
    assert r.code == 0, r.err
    assert "bisect `image` names config `nigthly`, which no run records; did you mean `nightly`?" in r.err, r.err
    assert "runs under config `nightly`, which nothing in the rule file names; did you mean `nigthly`?" in r.err
    r = cli("report", "--pr", "55", "--format", "json")
    assert {"kind": "config", "message": "bisect `image` names config `nigthly`, which no run records; "
            "did you mean `nightly`?"} in json.loads(r.out)["warnings"], r.out


def test_a_run_of_an_unknown_config_is_told_the_base_when_no_name_is_close(cli, tmp_path):
    """`--config base` after `triage init` (the rule file's key is `base:`): nothing is close to
    `base`, so the warning names the base the new user meant."""
    _scaffold(cli)
    r = cli("add-run", "--pr", "1234", "--run-id", "1", "--config", "base", "--metric", "p99_ms=180",
            "--status", "failed")
    assert r.code == 0, r.err
    assert ("warning: --config base: not a recipe, the base or a bisect's config of p99 (its base is "
            "p99-nightly)") in r.err, r.err
    r = cli("add-run", "--pr", "1234", "--run-id", "2", "--config", "p99-nightlyy", "--metric", "p99_ms=180",
            "--status", "failed")
    assert "did you mean p99-nightly?" in r.err and "its base is" not in r.err, r.err  # a close name says it

# ---------------------------------------------------------------- the README's promises

README = (__import__("pathlib").Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _input_forms() -> list[list[str]]:
    """The rows of the README's table of a metric's value in every input: each cell's `code` spans."""
    import re

    table = README.split("**A metric's value, in every input.**", 1)[1].split("\n\n")[1]
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    return [[re.findall(r"`([^`]+)`", cell) for cell in row.strip("|").split(" | ")] for row in rows]


def test_every_input_form_in_the_table_records_the_same_value(cli, tmp_path):
    forms = _input_forms()
    assert len(forms) == 4
    _scaffold(cli)
    for i, (_, (flag,), (jsonl, *_), csv_cells) in enumerate(forms[:3]):
        name = flag.partition("=")[0]
        r = cli("add-run", "--pr", "1234", "--run-id", f"flag{i}", "--config", "p99-nightly", "--metric", flag,
                "--status", "failed")
        assert r.code == 0, r.err
        record = {"investigation": "p99", "run_id": f"jsonl{i}", "config": "p99-nightly", "status": "failed",
                  "metrics": json.loads(jsonl)}
        (tmp_path / "one.jsonl").write_text(json.dumps(record) + "\n")
        assert cli("import", "one.jsonl").code == 0
        runs = {x["run_id"]: x["metrics"].get(name) for x in json.loads(cli("runs", "list", "--pr", "1234",
                                                                            "--format", "json").out)}
        assert runs[f"flag{i}"] is not None
        assert runs[f"flag{i}"] == runs[f"jsonl{i}"], (flag, jsonl, runs)
        import csv
        import io

        rows = {row["run_id"]: row for row in csv.DictReader(io.StringIO(cli("export", "--pr", "1234", "--format",
                                                                                "csv").out))}
        cells = dict(zip(csv_cells[::2], csv_cells[1::2]))
        assert {k: rows[f"flag{i}"][k] for k in cells} == cells, (flag, rows[f"flag{i}"])
    # the repeats row: three runs ID-r1..r3 from one flag
    (_, (flag,), _, _) = forms[3]
    assert cli("add-run", "--pr", "1234", "--run-id", "rep", "--config", "p99-nightly", "--metric", flag,
               "--status", "failed").code == 0
    ids = {x["run_id"] for x in json.loads(cli("runs", "list", "--pr", "1234", "--format", "json").out)}
    assert {"rep-r1", "rep-r2", "rep-r3"} <= ids


def test_the_readme_names_every_manual_verdict_the_cli_takes(cli):
    import re

    from triage.rules.language.schema import THEN_ALIASES

    said = README.split("**Manual evidence**", 1)[1].split("\n\n")[0]
    words = set(re.findall(r"`([a-z_]+)`", said))
    assert words == set(THEN_ALIASES), words
    _scaffold(cli)
    for word in sorted(words):
        r = cli("evidence", "add", "--pr", "1234", "--hypothesis", "suspect-change", "--verdict", word,
                "--because", f"a reading that {word}")
        assert r.code == 0, (word, r.err)


def test_the_readme_says_how_long_the_suite_takes_and_how_to_run_one_file():
    import re

    top = README.split("## A worked example", 1)[0]
    assert re.search(r"make test .*~\d+ min", top), top[:400]
    assert ".venv/bin/python -m pytest -q tests/cli/test_cli.py" in top


def test_many_unnamed_configs_are_one_warning():
    from triage.rules.language.configcheck import config_warnings

    spec = {"id": "x", "metric": "m", "base": "base"}
    recorded = ["base"] + [f"extra{i}" for i in range(8)]
    out = config_warnings(spec, [], [], [], recorded)
    assert out == ["runs under 8 configs that nothing in the rule file names: `extra0`, `extra1`, `extra2`, "
                   "`extra3`, `extra4` (+3 more)"]
    assert config_warnings(spec, [], [], [], []) == []  # before the first run: nothing


def _scaffolded(cli, tmp_path) -> str:
    """The rule file ``triage init`` writes, as text to edit."""
    _scaffold(cli)
    return (tmp_path / "rules" / "p99.yaml").read_text()


def _edited_report(cli, tmp_path, text: str) -> str:
    """The report after the rule file is ``text`` and the base has a run."""
    (tmp_path / "rules" / "p99.yaml").write_text(text)
    r = cli("add-run", "--pr", "1234", "--run-id", "1", "--config", "p99-nightly", "--metric", "p99_ms=171.2",
            "--status", "failed")
    assert r.code == 0, r.err
    r = cli("report", "--pr", "1234")
    assert r.code == 0, r.err
    return r.out


def _conflicting(cli, tmp_path, count: int, verdicts: tuple[str, ...] = ("confirms", "rules_out")) -> str:
    """A report whose ``count`` hypotheses each hold manual evidence of these ``verdicts`` (both
    ways by default: conflicting; none: open)."""
    text = _scaffolded(cli, tmp_path)
    extra = "".join(f"  - id: knob-{i}\n    title: Knob {i} changes the result\n" for i in range(count))
    text = text.replace("hypotheses:\n", "hypotheses:\n" + extra, 1)
    if verdicts:
        text += "evidence:\n" + "".join(
            f"  - {{hypothesis: knob-{i}, verdict: {v}, because: a reading {v}, author: alice}}\n"
            for i in range(count) for v in verdicts)
    return _edited_report(cli, tmp_path, text)


def test_a_few_conflicting_hypotheses_get_a_line_each(cli, tmp_path):
    body = _conflicting(cli, tmp_path, 3)
    lines = [x for x in body.splitlines() if x.startswith("- ⚠️ **Conflicting evidence")]
    assert lines == [f"- ⚠️ **Conflicting evidence:** Knob {i} changes the result" for i in range(3)], body[:1500]


def test_many_conflicting_hypotheses_are_counted_in_one_line(cli, tmp_path):
    """A wide investigation's verdict gave 29 conflicting hypotheses a line each, while it
    counted the ruled-out ones: past five they are one line, the first five named."""
    body = _conflicting(cli, tmp_path, 8)
    lines = [x for x in body.splitlines() if x.startswith("- ⚠️ **Conflicting evidence")]
    named = "; ".join(f"Knob {i} changes the result" for i in range(5))
    assert lines == [f"- ⚠️ **Conflicting evidence (8 of 9):** {named}; and 3 more in the elimination summary"], lines
    summary = body[body.index("### Elimination summary"):]
    assert all(f"Knob {i} changes the result" in summary for i in range(8))


def _many_recipes(cli, tmp_path, count: int) -> str:
    """A report whose ``count`` recipes are all never run, each deciding a hypothesis of its own."""
    text = _scaffolded(cli, tmp_path)
    text = text.replace("hypotheses:\n", "hypotheses:\n" + "".join(
        f"  - id: knob-{i}\n    title: Knob {i}\n" for i in range(count)), 1)
    text = text.replace("recipes:\n", "recipes:\n" + "".join(
        f"  - id: knob-{i}-off\n    base: p99-nightly\n    vary: {{knob{i}: 'off'}}\n    tests: [knob-{i}]\n"
        f"    predicts: {{knob-{i}: {{when: {{passes: gate}}, confirms: true}}}}\n"
        "    run: gh workflow run nightly.yml -f configs={ids}\n" for i in range(count)), 1)
    return _edited_report(cli, tmp_path, text)


def _commands(text: str) -> list[str]:
    """The shell blocks of a comment, each with its continued lines joined."""
    return [re.sub(r" \\\n\s+", " ", b).strip() for b in re.findall(r"^```\n(.*?)^```", text, re.M | re.S)]


def test_the_first_screen_shows_the_ten_best_suggestions_and_folds_the_rest(cli, tmp_path):
    """A wide investigation's first screen listed 159 suggestions and a command running them
    all.  It shows the ten best and the command that runs those; the rest are one click away,
    numbered on, with their own command."""
    from triage.render.digest import first_screen

    body = _many_recipes(cli, tmp_path, 13)  # and the scaffold's own recipe (no `run:`): fourteen
    screen = first_screen(body)
    items = re.findall(r"^(\d+)\. \*\*(\S+)\*\*", screen, re.M)
    assert [n for n, _ in items] == [str(i) for i in range(1, 11)], screen
    shown = [name for _, name in items]
    run = "gh workflow run nightly.yml -f configs="
    assert _commands(screen) == [run + ",".join(x for x in shown if x.startswith("knob-"))]
    rest = body[len(screen):]
    assert rest.startswith("<details><summary>4 more suggestions, ranked below these</summary>"), rest[:200]
    fold = rest[:rest.index("</details>")]
    later = re.findall(r"^(\d+)\. \*\*(\S+)\*\*", fold, re.M)
    assert [n for n, _ in later] == ["11", "12", "13", "14"]
    names = [name for _, name in later]
    assert sorted(shown + names) == sorted([f"knob-{i}-off" for i in range(13)] + ["p99-nightly-revert"])
    assert _commands(fold) == [run + ",".join(x for x in names if x.startswith("knob-"))]
    # as GitHub reads it: the first ten and the rest are each one ordered list, the rest's in its fold
    from tests.support.gfm import Html, gfm

    html = gfm(body)
    assert '<ol start="11">' in html and html.count("<ol") == 2, html[:3000]
    assert "4 more suggestions, ranked below these" in Html(html).blocks
    r = cli("report", "--pr", "1234", "--format", "json")
    assert len(json.loads(r.out)["suggestions"]) == 14  # the JSON report keeps them all


def test_ten_suggestions_or_fewer_are_not_folded(cli, tmp_path):
    body = _many_recipes(cli, tmp_path, 9)  # and the scaffold's own recipe: ten
    assert "more suggestions" not in body
    assert len(re.findall(r"^(\d+)\. \*\*", body, re.M)) == 10


def test_many_open_or_inconclusive_hypotheses_are_named_five_and_counted(cli, tmp_path):
    """A fresh wide investigation's verdict named 26 open hypotheses in one line; past five,
    the first five are named and the rest counted, as the ruled-out and conflicting are."""
    body = _conflicting(cli, tmp_path, 8, verdicts=())
    (line,) = [x for x in body.splitlines() if x.startswith("- ⬜ **Open")]
    named = "; ".join(f"Knob {i} changes the result" for i in range(5))
    assert line == f"- ⬜ **Open (9):** {named}; and 4 more in the elimination summary", line


def test_many_inconclusive_hypotheses_are_named_five_and_counted(cli, tmp_path):
    body = _conflicting(cli, tmp_path, 7, verdicts=("inconclusive",))
    (line,) = [x for x in body.splitlines() if x.startswith("- ❔ **Inconclusive")]
    named = "; ".join(f"Knob {i} changes the result" for i in range(5))
    assert line == f"- ❔ **Inconclusive (7):** {named}; and 2 more in the elimination summary", line


def test_a_few_inconclusive_hypotheses_are_all_named(cli, tmp_path):
    few = [x for x in _conflicting(cli, tmp_path, 2, verdicts=("inconclusive",)).splitlines()
           if x.startswith("- ❔ **Inconclusive")]
    assert few == ["- ❔ **Inconclusive:** Knob 0 changes the result; Knob 1 changes the result"], few


def test_a_comment_shortened_to_fit_keeps_its_commands_whole(cli, tmp_path):
    """Fitting a long comment cut long texts, and with them the commands of the ten best
    suggestions and of the rest: a command that dispatched a config cut in half."""
    from triage.kb import store
    from triage.render.fit import fit
    from triage.render.report import build, to_markdown
    from triage.rules.engine.evaluate import evaluate

    _many_recipes(cli, tmp_path, 30)
    with store.session(store.resolve_url(None)) as s:
        bundle = store.load_bundle(s, store.find_investigation(s, 1234))
        model = build(bundle, evaluate(bundle))
    full = to_markdown(model)
    fitted = fit(model, len(full) - 500)
    assert fitted.shortened and len(fitted.body) <= len(full) - 500
    run = "gh workflow run nightly.yml -f configs="
    assert _commands(fitted.body) == _commands(full) == [
        run + ",".join(f"knob-{i}-off" for i in range(10)), run + ",".join(f"knob-{i}-off" for i in range(10, 30))]
