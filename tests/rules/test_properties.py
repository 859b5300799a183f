"""Property tests: whatever the input, the rule loader, add-run's values and
the importer answer with a result or an input error, never a traceback."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import assume as hypothesis_assume
from hypothesis import strategies as st

from triage.errors import InputError

KEYS = ["schema_version", "investigation", "id", "repo", "pr", "title", "metric", "gate", "references", "value",
        "n", "hypotheses", "rules", "hypothesis", "when", "then", "because", "config", "below", "at_least",
        "between", "all", "any", "not", "signatures", "text", "class", "regex", "extractors", "pattern",
        "recipes", "predicts", "bisects", "points", "axis", "good_when", "evidence", "verdict", "parent"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["gate", "h", "c1", "supports", "ruled_out", "(?<=a)b", "{{ 'x'*99999999 }}", "\x00", "1"]),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=5)),
    max_leaves=30,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(doc=documents)
def test_the_rule_loader_reports_problems_for_any_document(doc, tmp_path_factory):
    from triage.rules.language.loader import load_file

    path = tmp_path_factory.mktemp("rules") / "x.yaml"
    body = {"schema_version": 1, **doc} if isinstance(doc, dict) else doc
    path.write_text(yaml.safe_dump(body, allow_unicode=True), encoding="utf-8")
    loaded, problems = load_file(path, display="x.yaml")
    assert loaded is not None or problems
    assert all(str(p).startswith("x.yaml:") for p in problems)


@SETTINGS
@given(text=st.text(max_size=300))
def test_the_rule_loader_reports_problems_for_any_text(text, tmp_path_factory):
    from triage.rules.language.loader import load_file

    path = tmp_path_factory.mktemp("rules") / "x.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    loaded, problems = load_file(path, display="x.yaml")
    assert loaded is not None or problems  # a file that does not load says why
    assert all(str(p).startswith("x.yaml:") for p in problems)


@SETTINGS
@given(metric=st.text(max_size=40), setting=st.text(max_size=40), when=st.text(max_size=40),
       since=st.text(max_size=20), ident=st.text(max_size=10))
def test_add_run_values_parse_or_are_refused(metric, setting, when, since, ident):
    from datetime import datetime, timezone

    from triage.ingest import runs

    for call in (lambda: runs.parse_metrics([metric]), lambda: runs.parse_assignments([setting]),
                 lambda: runs.parse_time(when), lambda: runs.parse_since(since, datetime.now(timezone.utc)),
                 lambda: runs.check_text("--run-id", ident, required=True)):
        try:
            call()
        except InputError:
            pass


numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(10**500), max_value=10**500))
records = st.fixed_dictionaries(
    {"run_id": st.one_of(st.text(max_size=8), st.integers()), "config": st.text(max_size=8),
     "status": st.sampled_from(["passed", "failed", "crashed", "nope", ""])},
    optional={
        "investigation": st.sampled_from(["kimik26-disagg", "", "other"]),
        "metrics": st.one_of(st.dictionaries(st.sampled_from(["acc", "gsm8k", "", "1x"]), st.one_of(
            numbers, st.fixed_dictionaries({"value": numbers}, optional={"n": numbers})), max_size=2),
            st.lists(numbers, max_size=2)),
        "provenance": st.dictionaries(st.text(max_size=5), st.one_of(st.text(max_size=5), numbers), max_size=2),
        "time": st.one_of(st.text(max_size=30), st.datetimes().map(lambda d: d.isoformat()),
                          st.sampled_from(["0001-01-01T00:00+14:00", "9999-12-31T23:59-14:00"])),
        "note": st.text(max_size=20),
        "excluded": st.one_of(st.booleans(), st.text(max_size=3)),
    },
)


@SETTINGS
@given(rec=records)
def test_the_importer_checks_any_record(rec):
    from triage.ingest.records import check_record, quick_line

    try:
        line = json.dumps(rec, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except ValueError:  # an integer too long for json
        return
    quick_line(line)
    try:
        check_record(rec, "x:1")
    except InputError as e:
        assert e.message.startswith("x:1: ")


@SETTINGS
@given(cells=st.lists(st.lists(st.text(max_size=12), min_size=4, max_size=6), max_size=4))
def test_the_csv_reader_reads_or_refuses_any_file(cells):
    import csv

    from triage.ingest.records import check_record, read_csv

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["investigation", "run_id", "config", "status", "metric.acc", "note"][: len(cells[0]) if cells else 4])
    for row in cells:
        w.writerow(row)
    text = buf.getvalue()
    for sample in (text, text[: len(text) // 2], text.replace(",", '"', 1)):
        try:
            for n, rec in read_csv(io.StringIO(sample, newline=""), "x.csv"):
                check_record(rec, f"x.csv:{n}")
        except InputError as e:
            assert e.message.startswith("x.csv:")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rec=records)
def test_import_of_any_record_exits_0_or_2(rec, cli, rules_dir: Path, tmp_path: Path):
    try:
        line = json.dumps(rec, ensure_ascii=False)
    except ValueError:
        line = None
    hypothesis_assume(line is not None)
    path = tmp_path / "one.jsonl"
    path.write_text(line + "\n", encoding="utf-8", errors="surrogatepass")
    r = cli("import", str(path), "--pr", "30433")
    assert r.code in (0, 2), r.err
    assert "Traceback" not in r.err


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run_id=st.text(max_size=6), config=st.text(max_size=6), metric=st.one_of(
           st.text(max_size=12), numbers.map(lambda v: f"acc={v}"),
           st.tuples(numbers, numbers).map(lambda t: f"acc={t[0]}/{t[1]}")),
       note=st.text(max_size=8), when=st.one_of(st.text(max_size=12), st.datetimes().map(lambda d: d.isoformat())))
def test_add_run_with_any_values_exits_0_or_2(run_id, config, metric, note, when, cli, rules_dir: Path):
    r = cli("add-run", "--pr", "30433", "--run-id", run_id, "--config", config, "--status", "passed",
            "--metric", metric, "--note", note, "--time", when)
    assert r.code in (0, 2), r.err
    assert "Traceback" not in r.err
