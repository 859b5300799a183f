"""Bulk import and export: JSON Lines and CSV, lossless round trips, all or
nothing per file, idempotent, and the bulk writer's stored form."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_RUNS, without_written


def _export(cli, *args: str) -> str:
    """The runs as JSON Lines, without when each was written in this knowledge base."""
    r = cli(*args, "export", "--pr", "30433") if args else cli("export", "--pr", "30433")
    assert r.code == 0, r.err
    return without_written(r.out)


def _rows(tmp_path: Path, db: str = "kb.sqlite") -> list[tuple]:
    con = sqlite3.connect(tmp_path / db)
    return con.execute("select run_id, config, status, metrics, provenance, url, time, note, log_excerpt, "
                       "signature_id, signature_line, excluded, excluded_reason, created_at, updated_at "
                       "from run order by pk").fetchall()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_round_trip_on_the_bundled_investigation(cli, seeded, tmp_path, fmt):
    out = tmp_path / f"runs.{fmt}"
    assert cli("export", "--pr", "30433", "-o", str(out)).code == 0
    r = cli("--db", str(tmp_path / "other.sqlite"), "import", str(out))
    assert r.code == 0, r.err
    assert r.out.strip().endswith("33 new, 0 updated")
    # the same file again, and the same records as the source
    again = tmp_path / f"again.{fmt}"
    assert cli("--db", str(tmp_path / "other.sqlite"), "export", "--pr", "30433", "-o", str(again)).code == 0
    assert again.read_text() == out.read_text()
    source = [json.loads(x) for x in EXAMPLE_RUNS.read_text().splitlines()]
    exported = [json.loads(x) for x in _export(cli, "--db", str(tmp_path / "other.sqlite")).splitlines()]
    assert [{k: v for k, v in rec.items() if k != "excluded" or v} for rec in exported] == source
    # and the reports agree
    a = cli("report", "--pr", "30433", "--format", "json").out
    b = cli("--db", str(tmp_path / "other.sqlite"), "report", "--pr", "30433", "--format", "json").out
    assert a == b


def test_csv_layout_reads_well(cli, seeded, tmp_path):
    text = cli("export", "--pr", "30433", "--format", "csv").out
    header = text.splitlines()[0].split(",")
    assert header[:6] == ["investigation", "run_id", "config", "status", "metric.gsm8k", "metric.gsm8k/n"]
    assert "prov.image" in header and header[-9:] == ["url", "time", "note", "log_excerpt", "signature",
                                                      "signature_line", "excluded", "excluded_reason", "updated_at"]
    import csv

    rows = list(csv.DictReader(io.StringIO(text)))
    base = next(r for r in rows if r["run_id"] == "28873810961")
    assert (base["metric.gsm8k"], base["metric.gsm8k/n"], base["excluded"]) == ("0.878", "1319", "false")
    excerpt = next(r for r in rows if r["log_excerpt"].startswith("[probe]"))["log_excerpt"]
    assert excerpt.count("\n") == 3  # a multi-line cell survives


def test_reimport_is_idempotent_and_keeps_created_at(cli, seeded, tmp_path):
    before = _rows(tmp_path)
    r = cli("import", str(EXAMPLE_RUNS))
    assert r.code == 0, r.err
    assert "33 run(s)" in r.out and "0 new, 33 updated" in r.out
    after = _rows(tmp_path)
    assert [x[:-1] for x in after] == [x[:-1] for x in before]  # all but updated_at
    assert all(a[-1] >= b[-1] for a, b in zip(after, before))


def test_a_record_replaces_the_run_and_a_later_duplicate_wins(cli, seeded, tmp_path):
    path = tmp_path / "two.jsonl"
    base = {"investigation": "kimik26-disagg", "run_id": "28873810961", "config": "kimik26-fp8-1k1k-1p1d"}
    path.write_text(json.dumps(base | {"status": "failed", "metrics": {"gsm8k": 0.5}, "note": "first"}) + "\n"
                    + json.dumps(base | {"status": "failed", "metrics": {"gsm8k": {"value": 0.877, "n": 1319}}}) + "\n")
    r = cli("import", str(path))
    assert r.code == 0 and "0 new, 2 updated" in r.out
    rec = next(json.loads(x) for x in _export(cli).splitlines() if json.loads(x)["run_id"] == "28873810961")
    assert rec["metrics"] == {"gsm8k": {"value": 0.877, "n": 1319}}
    assert "note" not in rec and "provenance" not in rec and "url" not in rec  # replaced whole


def _ten_with_a_bad_sixth(tmp_path: Path, fmt: str, bad: str) -> Path:
    lines = EXAMPLE_RUNS.read_text().splitlines()[:10]
    lines = [json.dumps(json.loads(x) | {"note": "changed"}) for x in lines]  # would change every run
    if fmt == "jsonl":
        lines[5] = bad
        path = tmp_path / "ten.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return path
    from triage.ingest.records import write_csv

    records = [json.loads(x) for x in lines]
    buf = io.StringIO()
    write_csv(records, buf)
    rows = buf.getvalue().splitlines()
    cells = rows[6].split(",")  # the header is line 1: record 6 is on line 7
    cells[3] = bad
    rows[6] = ",".join(cells)
    path = tmp_path / "ten.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(
    "fmt, bad, message",
    [
        ("jsonl", '{"investigation": "kimik26-disagg", "run_id": "x", "config": "c", "status": "fine"}',
         "ten.jsonl:6: --status 'fine': expected one of passed, failed, timeout, oom, crashed, cancelled, infra"),
        ("jsonl", '{"run_id": "x", "config": "c", "status": "failed"', "ten.jsonl:6: not valid JSON"),
        ("jsonl", '{"investigation": "kimik26-disagg", "run_id": "x", "config": "c", "status": "failed", "metrics": {"gsm8k": "high"}}',
         "ten.jsonl:6: metric gsm8k must be a finite number, got 'high'"),
        ("jsonl", '{"investigation": "kimik26-disagg", "run_id": "x", "config": "c", "status": "failed", "colour": "red"}',
         "ten.jsonl:6: unknown field(s) colour"),
        ("jsonl", '{"investigation": "nope", "run_id": "x", "config": "c", "status": "failed"}',
         "ten.jsonl:6: no investigation 'nope'; load its rule file first"),
        ("csv", "fine", "ten.csv:7: --status 'fine'"),
    ],
)
def test_a_bad_record_leaves_the_knowledge_base_as_it_was(cli, seeded, tmp_path, fmt, bad, message):
    before = _export(cli)
    path = _ten_with_a_bad_sixth(tmp_path, fmt, bad)
    r = cli("import", str(path))
    assert r.code == 2
    assert r.err.startswith("Error: ") and message in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert _export(cli) == before


@pytest.mark.parametrize(
    "text, message",
    [
        ("investigation,run_id,config,status,colour\nkimik26-disagg,1,c,failed,red\n",
         "bad.csv:1: unknown column(s) colour"),
        ("investigation,run_id,config,status,metric.gsm8k\nkimik26-disagg,1,c,failed,high\n",
         "bad.csv:2: metric.gsm8k: 'high' is not a number"),
        ("investigation,run_id,config,status,metric.gsm8k,metric.gsm8k/n\nkimik26-disagg,1,c,failed,,1319\n",
         "bad.csv:2: metric.gsm8k/n is given but metric.gsm8k is empty"),
        ("investigation,run_id,config,status,excluded\nkimik26-disagg,1,c,failed,maybe\n",
         "bad.csv:2: excluded: 'maybe': expected true or false"),
        ('investigation,run_id,config,status,note\nkimik26-disagg,1,c,failed,"two\nlines"\nkimik26-disagg,2,c,nope,x\n',
         "bad.csv:4: --status 'nope'"),
        ("investigation,run_id,config,status\nkimik26-disagg,1,c\n", "bad.csv:2: 3 cells, the header has 4"),
    ],
)
def test_csv_problems_name_their_line(cli, seeded, tmp_path, text, message):
    before = _export(cli)
    (tmp_path / "bad.csv").write_text(text)
    r = cli("import", str(tmp_path / "bad.csv"))
    assert r.code == 2 and message in r.err, r.err
    assert _export(cli) == before


def test_import_from_stdin_and_format_flag(cli, rules_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(EXAMPLE_RUNS.read_bytes())))
    r = cli("import", "-")
    assert r.code == 0 and "33 new" in r.out, r.err
    csv_text = cli("export", "--pr", "30433", "--format", "csv").out
    (tmp_path / "runs.txt").write_text(csv_text)
    r = cli("--db", str(tmp_path / "b.sqlite"), "import", str(tmp_path / "runs.txt"), "--format", "csv")
    assert r.code == 0 and "33 new" in r.out, r.err
    r = cli("import", str(tmp_path / "runs.txt"), "--format", "xml")
    assert r.code == 2 and "--format 'xml': expected jsonl, csv, junit" in r.err


def test_empty_text_and_empty_provenance_values_are_absent(cli, rules_dir, tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"investigation": "kimik26-disagg", "run_id": "1", "config": "c", "status": "failed",
                                "provenance": {"image": "", "sha": "abc"}, "note": "", "url": ""}) + "\n")
    assert cli("import", str(path)).code == 0
    assert json.loads(_export(cli)) == {"investigation": "kimik26-disagg", "run_id": "1", "config": "c",
                                         "status": "failed", "provenance": {"sha": "abc"}, "excluded": False}


def test_bulk_writes_what_add_run_writes(cli, rules_dir, tmp_path):
    """Same columns, same stored text: the bulk path and the ORM agree."""
    rec = {"investigation": "kimik26-disagg", "run_id": "1", "config": "c", "status": "failed",
           "metrics": {"gsm8k": {"value": 0.879, "n": 1319}}, "provenance": {"image": "x", "sha": "y"},
           "url": "u", "time": "2026-06-26T12:00:00+02:00", "note": "n"}
    (tmp_path / "one.jsonl").write_text(json.dumps(rec) + "\n")
    assert cli("import", str(tmp_path / "one.jsonl")).code == 0
    r = cli("add-run", "--pr", "30433", "--run-id", "2", "--config", "c", "--status", "failed",
            "--metric", "gsm8k=0.879/1319", "--set", "image=x", "--set", "sha=y", "--url", "u",
            "--time", "2026-06-26T12:00:00+02:00", "--note", "n")
    assert r.code == 0, r.err
    bulk, orm = _rows(tmp_path)
    assert bulk[1:-2] == orm[1:-2]
    assert bulk[6] == "2026-06-26 10:00:00.000000"
    assert len(bulk[-1]) == len(orm[-1])  # timestamps in the same format


def test_each_time_is_stored_in_utc_however_many_runs_share_it(cli, rules_dir, tmp_path):
    """The runs of a nightly share their time, turned into its stored form once: the same
    instant written in two zones is stored alike, and every other instant as its own."""
    times = ["2026-06-26T12:00:00+02:00", "2026-06-26T10:00:00Z", "2026-06-26T12:00:00Z",
             "2026-06-26T12:00:00+02:00", "2026-06-26T05:30:00.250000-04:30", None]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"investigation": "kimik26-disagg", "run_id": str(i), "config": "c",
                                        "status": "failed", **({"time": t} if t else {})}) + "\n"
                            for i, t in enumerate(times)))
    assert cli("import", str(path)).code == 0
    with sqlite3.connect(tmp_path / "kb.sqlite") as db:
        stored = dict(db.execute("SELECT run_id, time FROM run"))
    assert [stored[str(i)] for i in range(len(times))] == [
        "2026-06-26 10:00:00.000000", "2026-06-26 10:00:00.000000", "2026-06-26 12:00:00.000000",
        "2026-06-26 10:00:00.000000", "2026-06-26 10:00:00.250000", None]


def test_import_in_several_batches(cli, rules_dir, tmp_path, monkeypatch):
    from triage.ingest import importer

    monkeypatch.setattr(importer, "BATCH", 7)
    r = cli("import", str(EXAMPLE_RUNS))
    assert r.code == 0 and "33 new, 0 updated" in r.out
    one = _export(cli)
    monkeypatch.setattr(importer, "BATCH", 5000)
    assert cli("--db", str(tmp_path / "b.sqlite"), "import", str(EXAMPLE_RUNS)).code == 0
    assert _export(cli, "--db", str(tmp_path / "b.sqlite")) == one


def test_progress_bar_only_on_a_terminal(cli, rules_dir, tmp_path, monkeypatch):
    """On a terminal, import and scan draw a progress bar on stderr (and
    remove it when done); the result on stdout is the same."""
    plain = cli("import", str(EXAMPLE_RUNS)).out
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    r = cli("--db", str(tmp_path / "tty.sqlite"), "import", str(EXAMPLE_RUNS))
    assert r.code == 0, r.err
    assert r.out == plain
    assert "importing" in r.err  # the bar's label (transient: erased at the end)
    log = tmp_path / "job.log"
    log.write_text("Process exited with signal SIGABRT (-6)\n")
    r = cli("scan", str(log))
    assert r.code == 0 and "init-abort" in r.out
    assert "scanning" in r.err


def test_a_line_that_is_not_utf8_is_named(cli, seeded, tmp_path):
    before = _export(cli)
    lines = EXAMPLE_RUNS.read_bytes().splitlines()[:4]
    (tmp_path / "latin1.jsonl").write_bytes(b"\n".join(lines[:2] + ['{"note": "caf\xe9"}'.encode("latin-1")] + lines[2:]) + b"\n")
    r = cli("import", str(tmp_path / "latin1.jsonl"))
    assert r.code == 2 and "latin1.jsonl:3: not UTF-8 text" in r.err
    assert _export(cli) == before


FORMULAS = ["=cmd|' /C calc'!A0", "=HYPERLINK(\"https://evil.example\",\"x\")", "+1+2", "-2+3", "@SUM(A1)",
            "\tlead tab", "\rlead cr", "'=already quoted", "''=twice", "'plain quote", "-0.5", "plain"]


def test_csv_escapes_formulas_and_reads_them_back_unchanged(cli, rules_dir, tmp_path):
    import csv

    records = [{"investigation": "kimik26-disagg", "run_id": str(i), "config": text, "status": "passed",
                "note": text, "provenance": {"sha": text}} for i, text in enumerate(FORMULAS)]
    src = tmp_path / "evil.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli("import", str(src)).code == 0
    out = tmp_path / "evil.csv"
    assert cli("export", "--pr", "30433", "-o", str(out)).code == 0
    rows = list(csv.DictReader(io.StringIO(out.read_bytes().decode("utf-8"), newline="")))
    for row in rows:
        for col in ("config", "note", "prov.sha"):
            cell = row[col]
            if cell.startswith(("=", "+", "-", "@", "\t", "\r")):
                assert cell == "-0.5"  # a plain number is no formula
    assert {r["note"] for r in rows} >= {"'=cmd|' /C calc'!A0", "'@SUM(A1)", "''=already quoted", "'''=twice",
                                          "'plain quote", "'\tlead tab"}
    r = cli("--db", str(tmp_path / "other.sqlite"), "import", str(out))
    assert r.code == 0, r.err
    back = [json.loads(x) for x in _export(cli, "--db", str(tmp_path / "other.sqlite")).splitlines()]
    assert sorted((b["config"], b["note"], b["provenance"]["sha"]) for b in back) == sorted(
        (t, t, t) for t in FORMULAS)


def test_csv_with_an_unterminated_quote_is_refused(cli, rules_dir, tmp_path):
    (tmp_path / "bad.csv").write_text('investigation,run_id,config,status,note\nkimik26-disagg,1,c,passed,"open\n')
    r = cli("import", str(tmp_path / "bad.csv"))
    assert r.code == 2
    assert r.err.strip() == "Error: bad.csv:2: not valid CSV (unexpected end of data)".replace("bad.csv", str(tmp_path / "bad.csv"))


def test_any_note_the_knowledge_base_takes_survives_a_csv_round_trip(cli, rules_dir, tmp_path):
    note = "x" * (200 << 10)  # over csv's default field limit of 128 KiB
    assert cli("add-run", "--pr", "30433", "--run-id", "1", "--config", "c", "--status", "passed",
               "--note", note).code == 0
    out = tmp_path / "runs.csv"
    assert cli("export", "--pr", "30433", "-o", str(out)).code == 0
    r = cli("--db", str(tmp_path / "other.sqlite"), "import", str(out))
    assert r.code == 0, r.err
    (back,) = [json.loads(x) for x in _export(cli, "--db", str(tmp_path / "other.sqlite")).splitlines()]
    assert back["note"] == note
    r = cli("add-run", "--pr", "30433", "--run-id", "1", "--config", "c", "--note", "x" * ((1 << 20) + 1))
    assert r.code == 2
    assert r.err.strip() == "Error: --note: 1,048,577 characters, more than 1,048,576; TRIAGE_MAX_TEXT raises the limit"


def _indexes(path: Path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("select name, sql from sqlite_master where type = 'index' and tbl_name = 'run' "
                           "order by name").fetchall()
    finally:
        con.close()


def _renamed(prefix: str) -> list[str]:
    """The bundled records, as new runs (each run id prefixed)."""
    recs = [json.loads(x) for x in EXAMPLE_RUNS.read_text().splitlines()]
    return [json.dumps(rec | {"run_id": prefix + rec["run_id"]}) for rec in recs]


def _rebuilt(monkeypatch) -> list[int]:
    """How many indexes each import's writer had dropped, to build again at its end."""
    from triage.kb.runs import RunWriter

    seen: list[int] = []
    done = RunWriter.done

    def spy(self):
        seen.append(len(self._rebuild))
        return done(self)

    monkeypatch.setattr(RunWriter, "done", spy)
    return seen


def test_a_large_import_builds_the_run_indexes_after_writing(cli, rules_dir, tmp_path, monkeypatch):
    """An import at least as large as the run table (and of at least REBUILD_AT
    records) drops the run table's secondary indexes and builds them at the
    end: the same indexes, the same runs and the same report as one that
    inserts into them run by run."""
    from triage.ingest import importer
    from triage.kb import runs

    seen = _rebuilt(monkeypatch)
    monkeypatch.setattr(importer, "BATCH", 7)
    assert cli("--db", str(tmp_path / "plain.sqlite"), "import", str(EXAMPLE_RUNS)).code == 0
    monkeypatch.setattr(runs, "REBUILD_AT", 10)
    r = cli("--db", str(tmp_path / "bulk.sqlite"), "import", str(EXAMPLE_RUNS))
    assert r.code == 0 and "33 new" in r.out, r.err
    assert seen == [0, 2]
    assert _indexes(tmp_path / "bulk.sqlite") == _indexes(tmp_path / "plain.sqlite")
    assert len(_indexes(tmp_path / "bulk.sqlite")) >= 3  # the unique one, and the two dropped and built again
    assert _export(cli, "--db", str(tmp_path / "bulk.sqlite")) == _export(cli, "--db", str(tmp_path / "plain.sqlite"))
    report = [cli("--db", str(tmp_path / db), "report", "--pr", "30433", "--format", "json").out
              for db in ("bulk.sqlite", "plain.sqlite")]
    assert report[0] == report[1]


def test_a_small_import_into_a_larger_table_keeps_the_indexes(cli, seeded, tmp_path, monkeypatch):
    from triage.kb import runs

    seen = _rebuilt(monkeypatch)
    monkeypatch.setattr(runs, "REBUILD_AT", 10)
    (tmp_path / "twelve.jsonl").write_text("\n".join(_renamed("new-")[:12]) + "\n")
    r = cli("import", str(tmp_path / "twelve.jsonl"))
    assert r.code == 0 and "12 new" in r.out, r.err
    assert seen == [0]  # 12 records into 33 runs: inserted into the indexes as they are


def test_a_failed_large_import_leaves_the_indexes_as_they_were(cli, seeded, tmp_path, monkeypatch):
    from triage.ingest import importer
    from triage.kb import runs

    seen = _rebuilt(monkeypatch)
    before, rows = _indexes(tmp_path / "kb.sqlite"), _export(cli)
    monkeypatch.setattr(runs, "REBUILD_AT", 5)
    monkeypatch.setattr(importer, "BATCH", 5)
    lines = _renamed("a-") + _renamed("b-")  # 66 records, more than the 33 runs held: the first batch drops the indexes
    lines[40] = lines[40].replace('"status": "', '"status": "fine-', 1)
    (tmp_path / "many.jsonl").write_text("\n".join(lines) + "\n")
    r = cli("import", str(tmp_path / "many.jsonl"))
    assert r.code == 2 and "many.jsonl:41: --status" in r.err, r.err
    assert seen == []  # it failed before building them again: the rollback restores them
    assert _indexes(tmp_path / "kb.sqlite") == before
    assert _export(cli) == rows


def test_a_writer_after_its_last_batch_holds_no_identities_and_still_knows_them(cli, seeded):
    """A writer lets go of the identities it wrote once it is done (an import held 100,000
    of them through its evaluation); written to again, it reads them back: a record of a
    stored run is not new, and an older one is skipped."""
    from datetime import timedelta
    from pathlib import Path

    from triage.ingest.records import quick_line
    from triage.kb import store
    from triage.kb.runs import RunWriter

    lines = EXAMPLE_RUNS.read_text(encoding="utf-8").splitlines()[:3]
    records = [quick_line(line) for line in lines]  # as an import's batch is
    with store.session(f"sqlite:///{Path('kb.sqlite').resolve()}") as s:
        writer = RunWriter(s)
        old = [(*r[:14], writer._stamp - timedelta(days=1)) for r in records]
        assert writer.write(old) == (0, 3)  # stored by the import, and newer: skipped
        writer.done()
        assert writer._known == {} and writer._loaded == set()
        assert writer.write(old) == (0, 3)  # read back: still older than what is stored
        assert writer._loaded
