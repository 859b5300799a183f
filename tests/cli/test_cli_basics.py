"""The CLI a new user gets right the first time: init, -V, options anywhere, no silent empty knowledge base."""

from __future__ import annotations

import re

from tests.conftest import EXAMPLE_RUNS


def test_version_short_flag(cli):
    from triage import __version__

    for flag in ("-V", "--version"):
        r = cli(flag)
        assert r.code == 0 and r.out.strip() == f"triage {__version__}"


def test_completion_can_be_installed(cli):
    r = cli("--help")
    assert "--install-completion" in r.out and "--show-completion" in r.out


def test_global_options_after_the_subcommand(cli, rules_dir, tmp_path):
    db = tmp_path / "elsewhere.sqlite"
    r = cli("import", str(EXAMPLE_RUNS), "--db", str(db))
    assert r.code == 0, r.err
    assert db.exists() and not (tmp_path / "kb.sqlite").exists()
    r = cli("hypotheses", "--pr", "30433", f"--db={db}", "--rules", str(rules_dir))
    assert r.code == 0, r.err
    assert "image-regression" in r.out


def test_hoisting_stops_at_double_dash():
    from triage.cli import hoist_global_options

    assert hoist_global_options(["report", "--pr", "1", "--db", "x"]) == ["--db", "x", "report", "--pr", "1"]
    assert hoist_global_options(["--db", "x", "report"]) == ["--db", "x", "report"]
    assert hoist_global_options(["scan", "--", "--db"]) == ["scan", "--", "--db"]


def test_only_the_named_command_is_built():
    from triage.cli import app
    from triage.cli.base import narrowed

    def names(a):
        return [c.name or c.callback.__name__ for c in a.registered_commands] + [g.name for g in a.registered_groups]

    assert names(narrowed(["--db", "x", "--rules=r", "add-run", "--pr", "1"])) == ["add-run"]
    assert names(narrowed(["runs", "list"])) == ["runs"]
    assert names(narrowed(["report"])) == ["report"]
    # no command, a root option, a name that is no command: the whole app (its listing, its suggestions)
    for argv in ([], ["--help"], ["--version"], ["--db", "x"], ["ad-run"], ["--db", "x", "-h", "report"]):
        assert narrowed(argv) is app, argv
    assert {"add-run", "report", "runs", "db"} <= set(names(app))  # the app itself is left whole


def test_a_misspelled_command_is_still_suggested(cli):
    r = cli("ad-run", "--pr", "1")
    assert r.code == 2
    assert "No such command 'ad-run'" in r.err and "add-run" in r.err


def test_no_knowledge_base_is_said_not_created(cli, rules_dir, tmp_path):
    for args in (("report", "--pr", "30433"), ("hypotheses", "--pr", "30433"), ("runs", "list", "--pr", "30433"),
                 ("history", "--pr", "30433"), ("bisect", "--pr", "30433")):
        r = cli(*args)
        assert r.code == 2, args
        assert r.err.startswith("Error: no knowledge base at ") and "triage import" in r.err, r.err
        assert not (tmp_path / "kb.sqlite").exists()
    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    assert cli("report", "--pr", "30433").code == 0


def _uncomment_examples(text: str) -> str:
    """Every commented example block after the recipes, uncommented."""
    head, _, tail = text.partition("\n# rules:")
    tail = "\n".join(re.sub(r"^# ?", "", line) for line in ("# rules:" + tail).splitlines())
    return head + "\n" + tail + "\n"


def test_init_scaffolds_files_that_check_and_test_pass(cli, tmp_path):
    r = cli("init", "--id", "p99-regression", "--repo", "acme/server", "--pr", "1234", "--metric", "p99_ms",
            "--direction", "lower", "--gate", "150", "--tolerance", "3%")
    assert r.code == 0, r.err
    rule_file = tmp_path / "rules" / "p99-regression.yaml"
    assert "wrote rules/p99-regression.yaml" in r.out and rule_file.exists()
    text = rule_file.read_text()
    for example in ("hypotheses:", "recipes:", "predicts:", "# rules:", "# bisects:", "# signatures:", "# extractors:"):
        assert example in text
    r = cli("check")
    assert r.code == 0 and "p99-regression.yaml: ok" in r.out, r.err
    r = cli("test")
    assert r.code == 0 and "2 passed, 0 failed" in r.out, r.out
    # the commented examples are valid once uncommented
    rule_file.write_text(_uncomment_examples(text))
    r = cli("check")
    assert r.code == 0, r.err
    assert re.search(r"1 rules, 1 bisects, 1 signatures, 1 extractors", r.out), r.out


def test_init_higher_is_better_rules_out_a_revert_that_stays_bad(cli, tmp_path):
    assert cli("init", "--id", "acc", "--repo", "a/b", "--pr", "3", "--metric", "gsm8k", "--gate", "0.92").code == 0
    text = (tmp_path / "rules" / "tests" / "acc.test.yaml").read_text()
    assert "value: 0.828" in text and "value: 1.012" in text  # 10% either side of the gate
    r = cli("test")
    assert r.code == 0 and "2 passed" in r.out


def test_init_refuses_to_overwrite_and_bad_input(cli, tmp_path):
    args = ("init", "--id", "x", "--repo", "a/b", "--pr", "1", "--metric", "m", "--gate", "1")
    assert cli(*args).code == 0
    before = (tmp_path / "rules" / "x.yaml").read_text()
    r = cli(*args)
    assert r.code == 2 and "already exist" in r.err and "--force" in r.err
    assert (tmp_path / "rules" / "x.yaml").read_text() == before
    assert cli(*args, "--force").code == 0
    good = {"--id": "y", "--repo": "a/b", "--pr": "1", "--metric": "m", "--gate": "1"}
    for key, value, message in (("--id", "-x", "--id '-x'"), ("--repo", "nope", "--repo 'nope'"),
                                ("--direction", "up", "--direction 'up'"), ("--gate", "nan", "--gate"),
                                ("--tolerance", "-1", "--tolerance")):
        argv = ["init"] + [x for k, v in (good | {key: value}).items() for x in (k, v)]
        r = cli(*argv)
        assert r.code == 2 and message in r.err and "Traceback" not in r.err, (key, r.err)
    assert not (tmp_path / "rules" / "y.yaml").exists() and not (tmp_path / "rules" / "-x.yaml").exists()


def test_output_to_a_pipe_or_device_writes_to_it_and_leaves_it_as_it_was(cli, seeded, tmp_path):
    """`-o` replaces a file whole (a temporary file renamed over it), but a device or a
    pipe is written to: renaming a file over /dev/null would replace the device."""
    import os
    import stat
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    r = cli("report", "--pr", "30433", "--format", "json", "-o", str(fifo))
    reader.join(timeout=30)
    assert r.code == 0, r.err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a pipe, not a file renamed over it
    assert got and got[0].startswith("{") and '"hypotheses"' in got[0]
    assert not (tmp_path / "pipe.tmp").exists()
    out = tmp_path / "report.json"  # a file is still written whole
    assert cli("report", "--pr", "30433", "--format", "json", "-o", str(out)).code == 0
    assert out.read_text(encoding="utf-8") == got[0]


def test_the_command_runs_without_the_cyclic_collector_and_serve_with_it(monkeypatch, cli, rules_dir):
    import gc

    import triage.__main__ as entry
    import triage.serve.app

    seen = []
    monkeypatch.setattr("triage.cli.main", lambda: seen.append(gc.isenabled()))
    monkeypatch.setattr(triage.serve.app, "run", lambda *a, **k: seen.append(gc.isenabled()))
    try:
        entry.run()  # what `triage` and `python -m triage` call
        assert seen == [False]
        assert gc.get_freeze_count() > 0  # on its way out: nothing left for a last collection to walk
        gc.unfreeze()
        assert cli("serve", "--insecure-no-signature").code == 0  # stays up: collects its cycles
        assert seen == [False, True]
    finally:
        gc.unfreeze()
        gc.enable()


def test_the_command_leaves_the_knowledge_base_whole_in_its_file(tmp_path, rules_dir):
    """Its connections are closed before the process ends: SQLite moves the
    write-ahead log into the database file, which can then be copied alone."""
    import sqlite3
    import subprocess
    import sys

    for args in (["import", str(EXAMPLE_RUNS)],
                 ["add-run", "--pr", "30433", "--run-id", "1", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "failed"]):
        done = subprocess.run([sys.executable, "-m", "triage", *args], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert sorted(p.name for p in tmp_path.glob("kb.sqlite*")) == ["kb.sqlite"]
    alone = tmp_path / "copy.sqlite"
    alone.write_bytes((tmp_path / "kb.sqlite").read_bytes())
    assert sqlite3.connect(alone).execute("SELECT count(*) FROM run WHERE run_id = '1'").fetchone() == (1,)
