"""What a new user trips on (#29): a failing command leaves nothing behind,
every command that writes creates the knowledge base, errors say what to do."""

from __future__ import annotations

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
