"""A knowledge base this process cannot write to (#30): the commands that read
work on it as on any other, the commands that write exit 2 with one line, and
the file is left as it was."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

READING = [
    ("report", "--pr", "30433", "--format", "text"),
    ("report", "--pr", "30433", "--format", "json"),
    ("hypotheses", "--pr", "30433"),
    ("bisect", "--pr", "30433"),
    ("export", "--pr", "30433"),
    ("runs", "list", "--pr", "30433"),
    ("history", "--pr", "30433"),
    ("db", "status"),
    ("scan", "examples/logs/nightly-base.log.gz"),
    ("signatures", "list"),
    ("post", "--pr", "30433", "--offline"),
]

WRITING = [
    ("add-run", "--pr", "30433", "--run-id", "77", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "failed"),
    ("import", "examples/kimik26-disagg.runs.jsonl"),
    ("runs", "exclude", "pr29855-dev", "--because", "x"),
    ("evidence", "add", "--pr", "30433", "--hypothesis", "image-aiter", "--verdict", "rules_out",
     "--because", "read", "--author", "a"),
    ("db", "upgrade"),
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_only_url(path: Path) -> str:
    """The knowledge base opened as SQLite's read-only mode opens it: every write fails."""
    return f"sqlite:///file:{path}?mode=ro&uri=true"


@pytest.fixture
def frozen(cli, seeded, tmp_path):
    """The seeded knowledge base, copied (its log folded in) and then opened read-only."""
    path = tmp_path / "frozen.sqlite"
    import sqlite3

    src, dst = sqlite3.connect(tmp_path / "kb.sqlite"), sqlite3.connect(path)
    src.backup(dst)
    src.close()
    dst.close()
    return path


@pytest.mark.parametrize("args", READING, ids=" ".join)
def test_reading_commands_read_a_read_only_knowledge_base(cli, frozen, args):
    writable = frozen.with_name("writable.sqlite")
    shutil.copy(frozen, writable)
    before = _digest(frozen)
    expected = cli("--db", str(writable), *args)
    assert expected.code == 0, expected.err
    r = cli("--db", _read_only_url(frozen), *args)
    assert (r.code, r.err) == (0, ""), r.err
    if args[0] != "db":
        assert r.out == expected.out
    assert _digest(frozen) == before


@pytest.mark.parametrize("args", WRITING, ids=" ".join)
def test_writing_commands_refuse_a_read_only_knowledge_base(cli, frozen, args):
    before = _digest(frozen)
    url = _read_only_url(frozen)
    r = cli("--db", url, *args)
    assert r.code == 2, r.err
    assert r.err == (f"Error: the knowledge base {url} is read-only (this process cannot write to it): "
                     f"`{' '.join(args[:2] if args[0] in ('runs', 'evidence', 'db') else args[:1])}` writes; "
                     "the commands that read (report, hypotheses, bisect, export, …) work on it\n")
    assert "Traceback" not in r.err
    assert _digest(frozen) == before


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root, to run as another user")
def test_a_file_another_user_owns_on_a_read_only_directory(frozen, rules_dir):
    """The real case: a user who may read the file and its directory, not write them
    (root writes anywhere, so the command runs as nobody, from a directory all may read)."""
    base = Path(tempfile.mkdtemp(prefix="triage-ro-"))
    try:
        _as_nobody(base, frozen, rules_dir)
    finally:
        for p in (base, *base.iterdir()):
            p.chmod(0o755)
        shutil.rmtree(base)


def _as_nobody(base: Path, frozen: Path, rules_dir: Path) -> None:
    base.chmod(0o755)
    shelf, cache = base / "shelf", base / "cache"
    shutil.copytree(rules_dir, base / "rules")
    shelf.mkdir()
    cache.mkdir()
    cache.chmod(0o777)
    kb = shelf / "kb.sqlite"
    shutil.copy(frozen, kb)
    kb.chmod(0o444)
    shelf.chmod(0o555)
    for p in ROOT.parents:
        if p.stat().st_mode & 0o005 != 0o005:
            pytest.skip(f"{p} is closed to other users")
    before = _digest(kb)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(cache), "TRIAGE_CACHE": str(cache)}
    env.pop("TRIAGE_DB", None)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                               "-m", "triage", "--db", str(kb), "--rules", str(base / "rules"), *args],
                              capture_output=True, text=True, env=env, cwd=shelf, timeout=120)

    r = run("report", "--pr", "30433", "--format", "text")
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert "kimik26" in r.stdout
    r = run("add-run", "--pr", "30433", "--run-id", "77", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "failed")
    assert r.returncode == 2
    assert r.stderr == (f"Error: the knowledge base sqlite:///{kb} is read-only (this process cannot write to it): "
                        "`add-run` writes; the commands that read (report, hypotheses, bisect, export, …) work on it\n")
    assert _digest(kb) == before
    assert sorted(p.name for p in shelf.iterdir()) == ["kb.sqlite"]


@pytest.mark.parametrize("args", [READING[0], WRITING[0]], ids=" ".join)
def test_a_knowledge_base_that_is_no_file_is_bad_input(cli, rules_dir, tmp_path, args):
    """A directory, or a read-only file that is no SQLite database: exit 2, one line."""
    (tmp_path / "shelf").mkdir()
    r = cli("--db", str(tmp_path / "shelf"), *args)
    assert (r.code, r.err) == (2, f"Error: the knowledge base sqlite:///{tmp_path / 'shelf'} is a directory: "
                                  "point --db at a knowledge base, or at a new file to start one\n")
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    url = _read_only_url(tmp_path / "notes.txt")
    r = cli("--db", url, *args)
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert r.err in (f"Error: the knowledge base {url} is not a SQLite database: point --db at a knowledge base, "
                     "or at a new file to start one\n", str(readonly_refusal(url, args[0])))


def readonly_refusal(url: str, command: str) -> str:
    return (f"Error: the knowledge base {url} is read-only (this process cannot write to it): `{command}` writes; "
            "the commands that read (report, hypotheses, bisect, export, …) work on it\n")


def test_an_older_read_only_knowledge_base_is_read_without_upgrading_it(cli, rules_dir, tmp_path):
    """Its private copy is upgraded, silently and with no backup: the file itself is not."""
    from tests.support.schema1 import first_schema_sqlite

    path = tmp_path / "old.sqlite"
    first_schema_sqlite(path)
    before = _digest(path)
    tmp = Path(tempfile.gettempdir())
    baks = set(tmp.glob("triage-read-*"))
    r = cli("--db", _read_only_url(path), "runs", "list", "--pr", "30433")
    assert (r.code, r.err) == (0, ""), r.err
    assert "1001" in r.out
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("old.sqlite")) == ["old.sqlite"]
    assert not [p for p in set(tmp.glob("triage-read-*")) - baks if p.name.endswith(".bak")]
