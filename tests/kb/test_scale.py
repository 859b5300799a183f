"""A report that grows with what matters, not with runs or other investigations (#10)."""

from __future__ import annotations

import os
import json
import random
import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_RUNS, RULES

PR = "30433"


def _more_runs(path: Path, count: int, *, iid: str = "kimik26-disagg", seed: int = 0, every: int = 1) -> Path:
    """``count`` more runs of the bundled mix: repeats, crashes, known failures."""
    rng = random.Random(seed)
    templates = [json.loads(x) for x in EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines() if x.strip()]
    with path.open("w", encoding="utf-8") as fh:
        for k in range(count):
            t = templates[(k // every) % len(templates)]
            rec = {"investigation": iid, "run_id": f"{9_000_000 + seed * 100_000 + k}", "config": t["config"],
                   "status": t["status"], "metrics": t.get("metrics", {}), "provenance": t.get("provenance", {}),
                   "time": f"2026-08-{1 + k // 1440 % 28:02d}T{k // 60 % 24:02d}:{k % 60:02d}:00Z"}
            roll = rng.random()
            if roll < 0.2:
                rec["status"], rec["metrics"] = "crashed", {}
            elif roll < 0.3:
                rec["status"], rec["metrics"], rec["signature"] = "error", {}, "init-abort"
            fh.write(json.dumps(rec) + "\n")
    return path


def _other_investigations(rules_dir: Path, n: int) -> None:
    text = (RULES / "kimik26-disagg.yaml").read_text(encoding="utf-8")
    for i in range(n):
        other = text.replace("id: kimik26-disagg", f"id: other-{i}").replace(f"pr: {PR}", f"pr: {70_000 + i}")
        (rules_dir / f"other-{i}.yaml").write_text(other, encoding="utf-8")


# --------------------------------------------------------------------------
# Runs paging


def test_report_shows_the_newest_50_runs_by_default_and_all_on_request(cli, seeded: Path, tmp_path: Path) -> None:
    r = cli("import", str(_more_runs(tmp_path / "more.jsonl", 40)))
    assert r.code == 0, r.err
    doc = json.loads(cli("report", "--pr", PR, "--format", "json").out)
    assert len(doc["runs"]) == 50 and doc["runs_total"] == 73
    assert doc["runs"][-1]["run_id"] == "9000039"  # the newest
    everything = json.loads(cli("report", "--pr", PR, "--format", "json", "--runs", "all").out)
    assert len(everything["runs"]) == 73 and "runs_total" not in everything
    assert len(json.loads(cli("report", "--pr", PR, "--format", "json", "--runs", "5").out)["runs"]) == 5
    md = cli("report", "--pr", PR).out
    assert "*The newest 50 of 73 runs; `--runs all` shows them all.*" in md
    assert "the newest 50 of 73 runs" in cli("report", "--pr", PR, "--format", "text").out
    exported = cli("export", "--pr", PR).out.splitlines()
    assert len(exported) == 73  # export: always every run


def test_confounded_runs_are_listed_up_to_50_and_said_once(cli, seeded: Path, tmp_path: Path) -> None:
    """Each run of a recipe whose provenance differs from its base is a confound: the JSON
    lists the first 50 and says how many there are; the warning says the difference once."""
    template = next(json.loads(x) for x in EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines()
                    if '"29058233535"' in x)
    more = tmp_path / "confounded.jsonl"
    more.write_text("".join(json.dumps({**template, "run_id": f"77{k:04d}", "url": None}) + "\n" for k in range(79)),
                    encoding="utf-8")
    assert cli("import", str(more)).code == 0
    doc = json.loads(cli("report", "--pr", PR, "--format", "json").out)
    assert len(doc["confounds"]) == 50 and doc["confounds_total"] == 80
    assert doc["confounds"][0]["run_id"] == "29058233535" and {c["key"] for c in doc["confounds"]} == {"image"}
    said = [w["message"] for w in doc["warnings"] if w["kind"] == "confound"]
    assert len(said) == 1 and said[0].startswith("80 runs of 1p1d-srt67361ff (29058233535, 770000, 770001, …): image is")
    whole = json.loads(cli("report", "--pr", PR, "--format", "json", "--full").out)
    assert whole == doc
    single = json.loads(cli("report", "--pr", PR, "--format", "json", "--runs", "all").out)
    assert "confounds_total" in single  # paging the runs does not page the confounds


def test_runs_that_each_differ_from_their_base_in_their_own_value_are_one_warning(cli, seeded: Path,
                                                                                  tmp_path: Path) -> None:
    """A sha per commit: every run of the recipe differs from the base in a value of its
    own; the warning says the difference once, with how many values and the first."""
    template = next(json.loads(x) for x in EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines()
                    if '"29058233535"' in x)
    more = tmp_path / "shas.jsonl"
    more.write_text("".join(json.dumps({**template, "run_id": f"78{k:04d}", "url": None,
                                        "provenance": {**template["provenance"], "image": f"img-{k}"}}) + "\n"
                            for k in range(30)), encoding="utf-8")
    assert cli("import", str(more)).code == 0
    doc = json.loads(cli("report", "--pr", PR, "--format", "json").out)
    said = [w["message"] for w in doc["warnings"] if w["kind"] == "confound"]
    assert said == ["31 runs of 1p1d-srt67361ff (29058233535, 780000, 780001, …): image is one of 31 values "
                    "(latest, img-0, img-1, …), its base 1p1d-dev29855 (pr29855-dev) ran "
                    "v0.5.13.post1-rocm720-mi35x-20260623; the recipe does not declare image"]
    assert len(doc["confounds"]) == 31 and "confounds_total" not in doc


def test_runs_flag_refuses_what_is_not_a_count(cli, seeded: Path) -> None:
    r = cli("report", "--pr", PR, "--runs", "many")
    assert r.code == 2 and "--runs many" in r.err and "Traceback" not in r.err


# --------------------------------------------------------------------------
# Invalid runs of one config that say the same thing: said once


def test_invalid_runs_of_one_config_are_summarised(cli, seeded: Path, tmp_path: Path) -> None:
    r = cli("import", str(_more_runs(tmp_path / "more.jsonl", 1200, every=300)))
    assert r.code == 0, r.err
    doc = json.loads(cli("report", "--pr", PR, "--format", "json").out)
    warnings = [w["message"] for w in doc["warnings"] if w["kind"] == "inconclusive-run"]
    assert len(warnings) == len(set(warnings))
    import re

    crashed = [w for w in warnings if re.fullmatch(r"\d+ runs of 1p1d-dev29855 \(9\d+, 9\d+, 9\d+, …\): crashed", w)]
    assert len(crashed) == 1, "\n".join(warnings)
    items = [e for h in doc["hypotheses"] for e in h["evidence"] if "invalid-run" in e["flags"]]
    reasons = [(h["id"], e["rule"], e["reason"]) for h in doc["hypotheses"] for e in h["evidence"]
               if "invalid-run" in e["flags"]]
    assert len(reasons) == len(set(reasons))  # one item per (rule, config, reason)
    assert any(" runs of " in e["reason"] and e["reason"].endswith("never rules anything out") for e in items)
    assert max(len(e["runs"]) for e in items) <= 21  # 20 named, then "+N more"
    assert any(e["runs"][-1]["run_id"].endswith(" more") for e in items)


def test_a_stored_item_keeps_its_first_runs_and_one_of_each_config(cli, seeded: Path, tmp_path: Path) -> None:
    """An item that compares with a pooled config names its thousands of runs; the evidence
    table keeps its first runs and one of each further config it read, so that a run added
    to that config (each such item derived anew, the old one retired) writes a few runs, not
    the pool again."""
    from sqlalchemy import select

    from triage import views
    from triage.kb import store, tables
    from triage.kb.evaluations import STORED_RUNS
    from triage.rules.engine.keys import named

    assert cli("import", str(_more_runs(tmp_path / "more.jsonl", 1200))).code == 0
    assert cli("report", "--pr", PR).code == 0
    with store.session(store.resolve_url("kb.sqlite")) as s:
        inv = store.find_investigation(s, int(PR), None)
        _, ev, _ = views.evaluate(s, inv, keep=False)
        t = tables.Evidence
        stored = {key: runs for key, runs in s.execute(
            select(t.c.key, t.c.runs).where(t.c.investigation_id == inv.id, t.c.retired_at.is_(None)))}
    many = [e for e in ev.evidence if len(e.runs) > 3 * STORED_RUNS and "invalid-run" not in e.flags]
    assert many, "no item names many runs"
    for e in ev.evidence:
        runs = stored[e.key]
        assert runs == named(list(e.runs), STORED_RUNS) == named(e.runs, STORED_RUNS)
        assert runs[:STORED_RUNS] == list(e.runs[:STORED_RUNS])
        assert {k.partition("/")[2] for k in runs} == {k.partition("/")[2] for k in e.runs}
    assert all(len(stored[e.key]) < 2 * STORED_RUNS for e in many)


def test_summaries_keep_a_single_run_as_it_read(cli, seeded: Path) -> None:
    doc = json.loads(cli("report", "--pr", PR, "--format", "json").out)
    assert not any(" runs of " in w["message"] for w in doc["warnings"])


# --------------------------------------------------------------------------
# JSON at C speed, the same bytes


@pytest.mark.parametrize("value", [
    {"a": [1e-05, 1e16, 1e300, -0.0, 0.1 + 0.2, 10**30, "é\u2028\x01\"\\", [], {}, [[]], {"x": {}}, None, True]},
    [], {}, "text", 3, {"nan": float("nan")},
])
def test_json_text_is_what_json_dumps_writes(value) -> None:
    from triage.render.jsonout import dumps

    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False)


# --------------------------------------------------------------------------
# Incremental: a stored evaluation is used only while nothing it depends on changed


def _edit(cli, rng: random.Random, step: int, rules_dir: Path) -> None:
    what = rng.choice(["add-run", "add-run", "exclude", "include", "rule", "evidence", "none"])
    if what == "add-run":
        config = rng.choice(["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-aiterdecode",
                             "kimik26-fp8-1k1k-1p1d-knowngood"])
        status = rng.choice(["failed", "passed", "crashed"])
        args = ["add-run", "--pr", PR, "--run-id", str(rng.choice([50_000 + step, 28873810961])), "--config", config,
                "--status", status]
        if status != "crashed":
            args += ["--metric", f"gsm8k={rng.choice([0.88, 0.9, 0.944, 0.95])}/1319"]
        r = cli(*args)
    elif what in ("exclude", "include"):
        r = cli("runs", what, "28873810961", "--pr", PR, "--config", "kimik26-fp8-1k1k-1p1d",
                *(["--because", f"step {step}"] if what == "exclude" else []))
    elif what == "rule":
        path = rules_dir / "kimik26-disagg.yaml"
        text = path.read_text(encoding="utf-8")
        gate = rng.choice(["0.92", "0.9", "0.95"])
        path.write_text(text.replace(text[text.index("  gate: "):text.index("\n", text.index("  gate: "))],
                                     f"  gate: {gate}"), encoding="utf-8")
        return
    elif what == "evidence":
        r = cli("evidence", "add", "--pr", PR, "--hypothesis", "page-size", "--verdict",
                rng.choice(["rules_out", "supports"]), "--because", f"reading {step}")
    else:
        return
    assert r.code == 0, r.err


def _without_view(kb: Path, to: Path) -> Path:
    """A copy of ``kb`` without its stored view: a whole evaluation of it builds the view anew
    (one that finds every piece as stored takes the stored view as it is)."""
    import sqlite3

    with sqlite3.connect(kb) as source, sqlite3.connect(to) as db:
        source.backup(db)  # what the write-ahead log holds too
        db.execute("DELETE FROM snapshot")
    return to


@pytest.mark.parametrize("seed", range(4))
def test_a_stored_evaluation_equals_a_full_one_after_any_edits(cli, seeded: Path, seed: int) -> None:
    rng = random.Random(seed)
    for step in range(7):
        _edit(cli, rng, step, seeded)
        for fmt in ("json", "markdown"):
            kept = cli("report", "--pr", PR, "--format", fmt)
            whole = _without_view(Path("kb.sqlite"), Path(f"whole-{step}-{fmt}.sqlite"))  # a file no engine has open
            full = cli("--db", str(whole), "report", "--pr", PR, "--format", fmt, "--full")
            assert kept.code == full.code == 0, kept.err + full.err
            assert kept.out == full.out, f"step {step}"


def test_a_whole_evaluation_that_finds_every_piece_stored_takes_the_stored_view(cli, seeded: Path,
                                                                                 monkeypatch) -> None:
    import sqlite3

    import triage.render.report as report

    before = cli("report", "--pr", PR, "--format", "json").out
    built = []
    real = report.build
    monkeypatch.setattr(report, "build", lambda *a, **k: built.append(1) or real(*a, **k))
    assert cli("report", "--pr", PR, "--format", "json", "--full").out == before
    assert built == []
    # a piece stored otherwise than a whole evaluation finds it: the view is built again
    with sqlite3.connect("kb.sqlite") as db:
        db.execute("DELETE FROM evaluationpiece WHERE name = (SELECT max(name) FROM evaluationpiece)")
    assert cli("report", "--pr", PR, "--format", "json", "--full").out == before
    assert built == [1]
    # and so it is without a stored view of these runs
    assert cli("add-run", "--pr", PR, "--run-id", "77", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "failed",
               "--metric", "gsm8k=0.88/1319").code == 0
    built.clear()
    with sqlite3.connect("kb.sqlite") as db:
        db.execute("DELETE FROM snapshot")
    after = cli("report", "--pr", PR, "--format", "json", "--full")
    assert after.code == 0 and built == [1] and after.out != before


def test_an_unchanged_knowledge_base_is_not_evaluated_again(cli, seeded: Path, monkeypatch) -> None:
    import triage.rules.engine.evaluate as engine

    before = cli("report", "--pr", PR, "--format", "json").out
    calls = []
    real = engine.evaluate
    monkeypatch.setattr(engine, "evaluate", lambda inv, *memo: calls.append(1) or real(inv, *memo))
    assert cli("report", "--pr", PR, "--format", "json").out == before
    assert calls == []
    assert cli("report", "--pr", PR, "--format", "json", "--full").out == before
    assert calls == [1]


# --------------------------------------------------------------------------
# The statements of one report do not grow with runs or other investigations


def _statements(cli, *args: str) -> int:
    from tests.support.statements import recorded

    with recorded() as seen:
        r = cli(*args)
    assert r.code == 0, r.err
    return len(seen)


def _counts(cli) -> tuple[int, int]:
    cli("report", "--pr", PR, "--format", "json")  # evaluates, stores the evaluation
    kept = _statements(cli, "report", "--pr", PR, "--format", "json")
    # a whole evaluation stores what differs from the stored one (an incremental evaluation
    # keeps pieces a whole one has not: its pools); the next finds nothing to write
    cli("report", "--pr", PR, "--format", "json", "--full")
    full = _statements(cli, "report", "--pr", PR, "--format", "json", "--full")
    return kept, full


def _kb(cli, where: Path, rules_dir: Path, monkeypatch, *, runs: int, others: int) -> tuple[int, int]:
    where.mkdir()
    monkeypatch.chdir(where)
    shutil.copytree(rules_dir, where / "rules")
    _other_investigations(where / "rules", others)
    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    if runs:
        assert cli("import", str(_more_runs(where / "more.jsonl", runs))).code == 0
    for i in range(others):
        r = cli("import", str(_more_runs(where / f"o{i}.jsonl", 30, iid=f"other-{i}", seed=i + 1)))
        assert r.code == 0, r.err
    return _counts(cli)


def test_statements_of_a_report_do_not_grow_with_runs_or_investigations(cli, rules_dir: Path, tmp_path: Path,
                                                                         monkeypatch) -> None:
    small = _kb(cli, tmp_path / "small", rules_dir, monkeypatch, runs=0, others=1)
    assert _kb(cli, tmp_path / "runs", rules_dir, monkeypatch, runs=600, others=1) == small
    assert _kb(cli, tmp_path / "invs", rules_dir, monkeypatch, runs=0, others=6) == small


def test_add_run_sets_up_no_table_mapping(cli, rules_dir: Path, tmp_path: Path) -> None:
    """Recording a run and evaluating reads and writes columns: no mapped object is made,
    so SQLAlchemy never configures the tables' mappings (about 10 ms of every command)."""
    import subprocess
    import sys

    db = tmp_path / "kb.sqlite"
    assert cli("--db", str(db), "--rules", str(rules_dir), "import", str(EXAMPLE_RUNS)).code == 0
    script = (
        "import sys\n"
        "from triage.cli import main\n"
        "import triage.kb.models as m\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print('configured' if m.Run.__mapper__.configured else 'not configured')\n")
    done = subprocess.run([sys.executable, "-c", script, "--db", str(db), "--rules", str(rules_dir), "add-run",
                           "--pr", PR, "--run-id", "77", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "failed",
                           "--metric", "gsm8k=0.88/1319"], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "TRIAGE_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "not configured", done.stdout


def test_a_large_import_defines_no_table_class(rules_dir: Path, tmp_path: Path) -> None:
    """An import large enough to drop the run table's indexes and build them after its writes
    (``REBUILD_AT`` records, made 1 here) reads and writes columns: the knowledge base's
    table classes are never defined (SQLModel's and SQLAlchemy's mapping of 21 classes), but
    by the first command, which keeps their tables beside the rule cache."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "import triage.kb.runs\n"
        "triage.kb.runs.REBUILD_AT = 1\n"
        "from triage.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print('defined' if 'triage.kb.models' in sys.modules else 'not defined')\n")
    for db, said in (("first.sqlite", "defined"), ("kb.sqlite", "not defined")):  # the first keeps the tables
        done = subprocess.run([sys.executable, "-c", script, "--db", str(tmp_path / db), "--rules", str(rules_dir),
                               "import", str(EXAMPLE_RUNS)], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "TRIAGE_CACHE": str(tmp_path / "cache")})
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == said, done.stdout


def test_a_report_of_an_unchanged_knowledge_base_imports_no_rule_schema(cli, rules_dir: Path, tmp_path: Path) -> None:
    """The stored view read and written out: neither the rule files' schema nor the run
    parsers are imported (about a twentieth of the command, asked for a "new since"
    line that no report without --since has)."""
    import subprocess
    import sys

    db = tmp_path / "kb.sqlite"
    env = {**os.environ, "TRIAGE_CACHE": str(tmp_path / "cache")}
    base = ["--db", str(db), "--rules", str(rules_dir)]
    assert cli(*base, "import", str(EXAMPLE_RUNS)).code == 0
    script = (
        "import sys\n"
        "from triage.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(sorted(m for m in ('triage.ingest.runs', 'triage.rules.language.schema') if m in sys.modules))\n")
    for _ in range(2):  # the first stores the view (and caches the rule files' parses), the second reads it
        done = subprocess.run([sys.executable, "-c", script, *base, "report", "--pr", PR, "--format", "json"],
                              capture_output=True, text=True, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", done.stdout


# --------------------------------------------------------------------------
# Rule files: parsed only when they changed


def test_an_unchanged_rule_file_is_not_parsed_again(cli, rules_dir: Path, monkeypatch) -> None:
    from triage.rules.language import loader

    _other_investigations(rules_dir, 3)
    parsed: list[str] = []
    real = loader.load_file
    monkeypatch.setattr(loader, "load_file", lambda p, *a: parsed.append(Path(p).name) or real(p, *a))
    assert cli("import", os.devnull).code == 0  # a new knowledge base; every rule file parsed
    assert sorted(parsed) == ["compile-bump.yaml", "e2e-walltime.yaml", "kimik26-disagg.yaml", "other-0.yaml", "other-1.yaml",
                              "other-2.yaml", "signatures.yaml"]
    parsed.clear()
    assert cli("hypotheses", "--pr", PR).code == 0
    assert parsed == []
    other = rules_dir / "other-1.yaml"
    other.write_text(other.read_text(encoding="utf-8").replace("gate: 0.92", "gate: 0.93"), encoding="utf-8")
    assert cli("hypotheses", "--pr", PR).code == 0
    assert parsed == ["other-1.yaml"]
    parsed.clear()
    other.write_text(other.read_text(encoding="utf-8").replace("gate: 0.93", "gate: high"), encoding="utf-8")
    r = cli("hypotheses", "--pr", PR)
    assert r.code == 2 and "other-1.yaml:" in r.err and "Traceback" not in r.err
    assert parsed == ["other-1.yaml"]
    parsed.clear()
    r = cli("hypotheses", "--pr", PR)  # a bad file is never cached: refused again
    assert r.code == 2 and parsed == ["other-1.yaml"]


def test_cached_rule_files_read_as_parsed_ones(tmp_path: Path) -> None:
    from triage.rules.language import cache, loader

    shutil.copytree(RULES, tmp_path / "rules")
    parsed = loader.load_rules([tmp_path / "rules"])
    cache.load_rules([tmp_path / "rules"], tmp_path / "c")
    again = cache.load_rules([tmp_path / "rules"], tmp_path / "c")
    assert type(again.files[0]).__name__ == "CachedFile"
    assert [(f.path, f.sha256, f.spec, f.values, f.keys) for f in again.files] == \
        [(f.path, f.sha256, f.spec, f.values, f.keys) for f in parsed.files]


def test_a_changed_file_among_many_is_checked_without_reading_the_others_parses(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    """The cache's index says what the cross-file checks read of each file: a changed file
    is checked against the others without unpickling them, and a command on an unchanged
    set reads the index alone (a parse per file is read only when its definitions are)."""
    import pickle

    from triage.rules.language import cache

    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules)
    _other_investigations(rules, 20)
    cache.load_rules([rules], tmp_path / "c")
    unpickled: list[int] = []
    real = pickle.loads
    monkeypatch.setattr(pickle, "loads", lambda data, *a, **k: unpickled.append(len(data)) or real(data, *a, **k))
    again = cache.load_rules([rules], tmp_path / "c")
    assert type(again).__name__ == "CachedSet" and unpickled == []
    changed = rules / "other-3.yaml"
    changed.write_text(changed.read_text(encoding="utf-8").replace("gate: 0.92", "gate: 0.93"), encoding="utf-8")
    after = cache.load_rules([rules], tmp_path / "c")
    assert unpickled == [] and sum(type(f).__name__ == "CachedFile" for f in after.files) == len(after.files) - 1
    # a file that takes another's PR: refused, at its line, though the other is a cached parse
    clash = rules / "other-7.yaml"
    clash.write_text(clash.read_text(encoding="utf-8").replace("pr: 70007", "pr: 70002"), encoding="utf-8")
    with pytest.raises(Exception) as refused:
        cache.load_rules([rules], tmp_path / "c")
    text = str(refused.value)
    assert "other-7.yaml:" in text and "already has an investigation in" in text and "other-2.yaml" in text
    assert unpickled == []  # the clash is found from the summaries, and its position from the new parse
    clash.write_text(clash.read_text(encoding="utf-8").replace("pr: 70002", "pr: 70007"), encoding="utf-8")
    dup = rules / "other-9.yaml"
    dup.write_text(dup.read_text(encoding="utf-8").replace("id: other-9", "id: other-0"), encoding="utf-8")
    with pytest.raises(Exception) as refused:
        cache.load_rules([rules], tmp_path / "c")
    assert "investigation 'other-0' is also defined in" in str(refused.value)


def test_rule_files_are_keyed_by_their_resolved_paths(tmp_path: Path, monkeypatch) -> None:
    """A file's key is its resolved path, each directory resolved once: through a linked
    directory, a linked file, a relative path, a name that is not a file's."""
    from triage.rules.language.cache import path_keys

    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    for name in ("a.yaml", "b.yml", "sub/c.yaml"):
        (real / name).write_text("x: 1\n")
    (tmp_path / "elsewhere" / "target.yaml").write_text("x: 2\n")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    (real / "linked.yaml").symlink_to(tmp_path / "elsewhere" / "target.yaml")
    (real / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    monkeypatch.chdir(tmp_path)
    paths = [Path(p) for p in (
        "link/a.yaml", "link/b.yml", "link/sub/c.yaml", "link/sub/../a.yaml", "link/linked.yaml",
        "link/dangling.yaml", "link/missing.yaml", str(real / "a.yaml"), "real/./a.yaml", "link/sub/..", ".",
    )]
    assert path_keys(paths) == [str(p.resolve()) for p in paths]
    assert path_keys(paths)[0] == str(real / "a.yaml") and path_keys(paths)[4] == str(
        tmp_path / "elsewhere" / "target.yaml")


def test_seen_elsewhere_follows_what_other_investigations_decide(cli, rules_dir: Path) -> None:
    _other_investigations(rules_dir, 1)
    assert cli("import", str(EXAMPLE_RUNS)).code == 0
    first = json.loads(cli("report", "--pr", PR, "--format", "json").out)
    assert first["similar"], "the copy's untested hypotheses read the same"
    hyp = first["similar"][0]["other_id"]
    assert cli("report", "--pr", PR, "--format", "json").out == json.dumps(first, indent=2, ensure_ascii=False) + "\n"
    r = cli("evidence", "add", "--pr", "70000", "--hypothesis", hyp, "--verdict", "rules_out", "--because", "read it")
    assert r.code == 0, r.err
    kept = json.loads(cli("report", "--pr", PR, "--format", "json").out)
    full = json.loads(cli("report", "--pr", PR, "--format", "json", "--full").out)
    assert kept == full
    assert {x["status"] for x in kept["similar"] if x["other_id"] == hyp} == {"ruled_out"}
    assert "ruled_out" not in {x["status"] for x in first["similar"] if x["other_id"] == hyp}


def test_a_stored_summary_of_invalid_runs_stays_small(cli, seeded: Path, tmp_path: Path) -> None:
    from sqlalchemy import select

    from triage.kb import models as m
    from triage.kb import store

    r = cli("import", str(_more_runs(tmp_path / "more.jsonl", 1200, every=300)))
    assert r.code == 0, r.err
    with store.session(store.resolve_url(None)) as s:
        rows = s.execute(select(m.Evidence).where(m.Evidence.retired_at.is_(None))).scalars().all()
    summaries = [e for e in rows if "invalid-run" in e.flags and " runs of " in e.reason]
    assert summaries and max(len(e.runs) for e in summaries) == 20
    assert max(len(e.key) for e in rows) < 2000


def _two_runs_then_report(cli, config: str, first: str, second: str) -> str:
    """Two passed runs of ``config`` (the first older), then the report as it reads."""
    for run_id, value in ((first, "0.944"), (second, "0.945")):
        r = cli("add-run", "--pr", PR, "--run-id", run_id, "--config", config, "--status", "passed",
                "--metric", f"gsm8k={value}/1319")
        assert r.code == 0, r.err
    return cli("report", "--pr", PR, "--format", "json").out


def _same_as_full_and_not(cli, before: str) -> None:
    """The report reads as a whole evaluation does, and no longer as ``before``."""
    kept = cli("report", "--pr", PR, "--format", "json").out
    full = cli("report", "--pr", PR, "--format", "json", "--full").out
    assert kept == full
    assert kept != before


def test_an_import_that_replaces_an_older_run_re_derives_what_read_it(cli, seeded: Path, tmp_path: Path) -> None:
    """An import may write a run with an earlier ``updated_at`` than its config's newest
    (--overwrite, or a record from another knowledge base): the config's count, largest
    id and newest write stay as they were, so the evaluation after an import that
    updated runs re-derives every piece."""
    config = "kimik26-fp8-1k1k-1p1d-aiterdecode"
    before = _two_runs_then_report(cli, config, "70001", "70002")
    record = {"investigation": "kimik26-disagg", "run_id": "70001", "config": config, "status": "failed",
              "metrics": {"gsm8k": {"value": 0.871, "n": 1319}}, "updated_at": "2000-01-01T00:00:00+00:00"}
    path = tmp_path / "older.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    r = cli("import", str(path), "--overwrite")
    assert r.code == 0, r.err
    _same_as_full_and_not(cli, before)


def test_a_run_written_by_a_clock_behind_re_derives_what_read_it(cli, seeded: Path, monkeypatch) -> None:
    """A runner whose clock is behind updates a run: its config's count, largest id and
    newest write stay as they were; the sum of write times does not."""
    from datetime import timedelta

    from triage.kb import runs

    config = "kimik26-fp8-1k1k-1p1d-aiterdecode"
    before = _two_runs_then_report(cli, config, "70011", "70012")
    real = runs.now
    monkeypatch.setattr(runs, "now", lambda: real() - timedelta(hours=1))
    r = cli("add-run", "--pr", PR, "--run-id", "70011", "--config", config, "--status", "failed",
            "--metric", "gsm8k=0.871/1319")
    assert r.code == 0, r.err
    monkeypatch.setattr(runs, "now", real)
    _same_as_full_and_not(cli, before)


@pytest.mark.parametrize("seed", range(3))
def test_a_view_that_looks_runs_up_reads_as_one_over_every_run(cli, seeded: Path, seed: int) -> None:
    """The report's view reads only the runs it names from the knowledge base; built
    from every run instead, it is the same, after any edits."""
    from dataclasses import replace

    from triage.kb import store
    from triage.render.report import build
    from triage.views import evaluate

    rng = random.Random(seed)
    for step in range(5):
        _edit(cli, rng, step, seeded)
    assert cli("add-run", "--pr", PR, "--run-id", "run 5", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "crashed",
               "--note", "an id with a space").code == 0
    with store.session("sqlite:///kb.sqlite") as s:
        inv = store.find_investigation(s, int(PR))
        bundle, ev, _ = evaluate(s, inv)
        for limit in (50, 3, None):
            looked_up = build(bundle, ev, runs_limit=limit)
            every = build(replace(bundle, runs=bundle.source.all(), source=None), ev, runs_limit=limit)
            assert looked_up == every, limit


def test_an_installed_wheel_stamps_its_code_by_content_a_checkout_by_its_files(tmp_path: Path) -> None:
    """A CI job installs triage afresh each time: the same wheel must stamp alike (its
    RECORD's hashes), or every job would evaluate every investigation again; a checkout,
    edited in place, is stamped by its files' sizes and times."""
    from triage.stamp import stamp_of

    site = tmp_path / "site"
    (site / "triage").mkdir(parents=True)
    module = site / "triage" / "engine.py"
    module.write_text("x = 1\n")
    checkout = stamp_of(site / "triage", "1.0")
    os.utime(module, (1_000_000, 1_000_000))
    assert stamp_of(site / "triage", "1.0") != checkout  # a checkout: its files' times

    record = site / "triage-1.0.dist-info" / "RECORD"
    record.parent.mkdir()
    record.write_text("triage/engine.py,sha256=AAAA,6\ntriage-1.0.dist-info/direct_url.json,sha256=BBBB,60\n")
    installed = stamp_of(site / "triage", "1.0")
    os.utime(module, (2_000_000, 2_000_000))  # installed again: new times, the same files
    record.write_text("triage/engine.py,sha256=AAAA,6\ntriage-1.0.dist-info/direct_url.json,sha256=CCCC,61\n")
    assert stamp_of(site / "triage", "1.0") == installed
    record.write_text("triage/engine.py,sha256=DDDD,6\n")  # other code
    assert stamp_of(site / "triage", "1.0") != installed
    assert stamp_of(site / "triage", "1.1") != stamp_of(site / "triage", "1.0")
