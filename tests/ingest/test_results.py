"""Results files in (#26): JUnit XML, lm-eval, pytest-benchmark, Google Benchmark, any JSON by JMESPath."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage.errors import InputError
from triage.ingest.results import as_repeats, detect, read_file, read_results

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "results"


def test_junit_gives_each_test_case_its_outcome_and_the_run_its_counts():
    fmt, found = read_file(str(EXAMPLES / "junit.xml"))
    m = found.metrics
    assert fmt == "junit" and found.status == "failed"
    assert {k: m[k]["value"] for k in ("tests.passed", "tests.failed", "tests.errors", "tests.skipped")} == {
        "tests.passed": 2, "tests.failed": 1, "tests.errors": 1, "tests.skipped": 1}
    assert m["tests.time_s"]["value"] == pytest.approx(3.112)
    assert m["fail_rate"] == {"value": 0.5, "n": 4}  # the skipped test did not run
    assert m["failed:tests.test_decode.test_aiter_decode"] == {"value": 1.0, "n": 1}
    assert m["failed:tests.test_decode.test_kv_fp8"] == {"value": 1.0, "n": 1}  # an error fails too
    assert m["failed:tests.test_sampling.test_top_p_0.9_"] == {"value": 0.0, "n": 1}
    assert not any("test_mla_absorb" in k for k in m)  # skipped: no outcome to count


def test_junit_all_passing_is_a_passed_run_and_a_lone_testsuite_is_read(tmp_path):
    f = tmp_path / "r.xml"
    f.write_text('<testsuite name="go" tests="2"><testcase name="TestA" time="0.1"/>'
                 '<testcase classname="pkg" name="TestB" time="x"/></testsuite>')
    fmt, found = read_file(str(f))
    assert found.status == "passed" and found.metrics["fail_rate"] == {"value": 0.0, "n": 2}
    assert found.metrics["tests.time_s"]["value"] == pytest.approx(0.1)  # an unreadable time counts 0
    assert set(found.metrics) >= {"failed:TestA", "failed:pkg.TestB"}


def test_lm_eval_metrics_carry_their_n_from_the_sample_counts():
    fmt, found = read_file(str(EXAMPLES / "lm-eval.json"))
    m = found.metrics
    assert fmt == "lm-eval" and found.status is None
    assert m["gsm8k.exact_match.strict-match"] == {"value": pytest.approx(0.94162244), "n": 1319}
    assert m["hellaswag.acc"] == {"value": 0.6031, "n": 10000}  # effective: after --limit
    assert m["hellaswag.acc_norm"]["n"] == 10000
    assert not any("stderr" in k or "alias" in k for k in m)


def test_lm_eval_group_gets_its_subtasks_n_and_a_perplexity_none(tmp_path):
    doc = {"results": {"mmlu": {"acc,none": 0.7}, "mmlu_a": {"acc,none": 0.6}, "mmlu_b": {"acc,none": 0.8},
                       "wikitext": {"word_perplexity,none": 9.5}},
           "group_subtasks": {"mmlu": ["mmlu_a", "mmlu_b"]},
           "n-samples": {"mmlu_a": {"original": 100, "effective": 100}, "mmlu_b": {"original": 50, "effective": 50},
                         "wikitext": {"original": 62, "effective": 62}}}
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc))
    _, found = read_file(str(f))
    assert found.metrics["mmlu.acc"] == {"value": 0.7, "n": 150}
    assert found.metrics["wikitext.word_perplexity"] == {"value": 9.5}  # not a proportion: no n


def test_pytest_benchmark_rounds_are_repeats_and_without_them_the_mean():
    fmt, found = read_file(str(EXAMPLES / "pytest-benchmark.json"))
    assert fmt == "pytest-benchmark"
    assert found.repeats["test_prefill_4k"] == [0.1402, 0.1412, 0.1409, 0.1431, 0.142]
    assert found.metrics["test_decode_step"] == {"value": 0.012403}
    assert any("--benchmark-save-data" in line for line in found.said)


def test_google_benchmark_repetitions_are_repeats_and_aggregates_alone_the_mean(tmp_path):
    fmt, found = read_file(str(EXAMPLES / "google-benchmark.json"))
    assert fmt == "google-benchmark"
    assert found.repeats == {"BM_Attention_4096": [3262118.0, 3270455.0, 3258801.0]}
    doc = json.loads((EXAMPLES / "google-benchmark.json").read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["run_type"] == "aggregate"]
    f = tmp_path / "agg.json"
    f.write_text(json.dumps(doc))
    _, found = read_file(str(f))
    assert found.metrics == {"BM_Attention_4096": {"value": 3263791.3}} and not found.repeats


def test_repeats_make_one_run_each_and_the_rest_goes_with_the_first():
    found, _ = read_results([str(EXAMPLES / "google-benchmark.json"), str(EXAMPLES / "lm-eval.json")])
    runs = as_repeats(found)
    assert [r["BM_Attention_4096"]["value"] for r in runs] == [3262118.0, 3270455.0, 3258801.0]
    assert "hellaswag.acc" in runs[0] and all(set(r) == {"BM_Attention_4096"} for r in runs[1:])


def test_any_json_is_read_by_its_extractors(tmp_path):
    ex = [{"id": "g", "json": "scores.gsm8k.accuracy", "metric": "gsm8k", "n": 1319},
          {"id": "m", "json": "model", "provenance": "model"},
          {"id": "w", "json": "[wall_s, `1490.5`]", "metric": "wall_s"},
          {"id": "s", "json": "suite", "status": {"nightly-eval": "passed"}}]
    fmt, found = read_file(str(EXAMPLES / "eval-summary.json"), extractors=ex)
    assert fmt == "json"
    assert found.metrics == {"gsm8k": {"value": 0.941, "n": 1319}}
    assert found.repeats == {"wall_s": [1486.0, 1490.5]}
    assert found.provenance == {"model": "moonshotai/Kimi-K2.6"} and found.status == "passed"


def test_unknown_json_without_extractors_says_how_to_read_it():
    with pytest.raises(InputError, match="json: extractor in the rule file or --json-path"):
        read_file(str(EXAMPLES / "eval-summary.json"))


def test_detection_and_a_wrong_format_are_one_line(tmp_path):
    assert detect(str(EXAMPLES / "junit.xml")) == "junit"
    f = tmp_path / "x.txt"
    f.write_text("Accuracy: 0.9\n")
    with pytest.raises(InputError, match="not a results file"):
        read_file(str(f))
    with pytest.raises(InputError, match="not lm-eval results JSON"):
        read_file(str(EXAMPLES / "google-benchmark.json"), "lm-eval")
    with pytest.raises(InputError, match="not JUnit XML"):
        (tmp_path / "a.xml").write_text("<html/>")
        read_file(str(tmp_path / "a.xml"))


def test_a_metric_in_two_files_is_refused():
    with pytest.raises(InputError, match="also in"):
        read_results([str(EXAMPLES / "lm-eval.json"), str(EXAMPLES / "lm-eval.json")])


# --------------------------------------------------------------------------
# The command line


def test_add_run_results_records_the_files_and_the_status(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "9", "--config", "kimik26-fp8-1k1k-1p1d",
            "--results", str(EXAMPLES / "junit.xml"), "--results", str(EXAMPLES / "lm-eval.json"),
            "--metric", "hellaswag.acc=0.61/10000", "--format", "json")
    assert r.code == 0, r.err
    run = json.loads(r.out)["runs"][0]
    assert run["status"] == "failed"  # a failed test case
    assert run["metrics"]["gsm8k.exact_match.strict-match"]["n"] == 1319
    assert run["metrics"]["hellaswag.acc"] == {"value": 0.61, "n": 10000}  # --metric wins
    assert "results: " in r.err and "fail_rate=2/4" in r.err


def test_add_run_results_repeats_are_runs(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "10", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "passed",
            "--results", str(EXAMPLES / "google-benchmark.json"), "--format", "json")
    assert r.code == 0, r.err
    assert [x["run_id"] for x in json.loads(r.out)["runs"]] == ["10-r1", "10-r2", "10-r3"]


def test_add_run_json_path_and_a_rule_file_json_extractor(cli, seeded):
    r = cli("add-run", "--pr", "30433", "--run-id", "11", "--config", "kimik26-fp8-1k1k-1p1d",
            "--results", str(EXAMPLES / "eval-summary.json"), "--json-path", "gsm8k=scores.gsm8k.accuracy",
            "--format", "json")
    assert r.code == 0, r.err
    run = json.loads(r.out)["runs"][0]
    assert run["metrics"] == {"gsm8k": {"value": 0.941}} and run["status"] == "passed"  # by the gate
    (seeded / "shared-json.yaml").write_text(
        "schema_version: 1\nextractors:\n"
        "  - {id: mmlu, json: scores.mmlu.accuracy, metric: mmlu, n: 14042}\n")
    r = cli("add-run", "--pr", "30433", "--run-id", "12", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "passed",
            "--results", str(EXAMPLES / "eval-summary.json"), "--format", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["runs"][0]["metrics"] == {"mmlu": {"value": 0.872, "n": 14042}}


def test_a_bad_json_extractor_is_refused_at_its_place(cli, seeded):
    (seeded / "shared-json.yaml").write_text(
        "schema_version: 1\nextractors:\n  - {id: bad, json: 'scores[', metric: mmlu}\n")
    r = cli("check")
    assert r.code != 0 and "bad JMESPath expression" in r.err + r.out


def test_add_run_results_bad_input_writes_nothing(cli, seeded, tmp_path):
    before = cli("export", "--pr", "30433").out
    r = cli("add-run", "--pr", "30433", "--run-id", "13", "--config", "kimik26-fp8-1k1k-1p1d",
            "--results", str(EXAMPLES / "eval-summary.json"), "--json-path", "gsm8k=model")
    assert r.code == 2 and r.err.strip().splitlines()[-1].startswith("Error: ") and "Traceback" not in r.err
    assert "not a number" in r.err
    r = cli("add-run", "--pr", "30433", "--run-id", "13", "--config", "c", "--results-format", "junit")
    assert r.code == 2 and "--results-format goes with --results" in r.err
    assert cli("export", "--pr", "30433").out == before


def test_import_reads_a_results_file_as_one_run(cli, seeded):
    r = cli("import", str(EXAMPLES / "junit.xml"), "--pr", "30433", "--run-id", "14", "--config", "ci-tests")
    assert r.code == 0, r.err
    assert "recorded run 14 (ci-tests): failed, fail_rate=0.5/4" in r.out
    r = cli("import", str(EXAMPLES / "lm-eval.json"), "--pr", "30433", "--run-id", "15", "--config", "ci-evals",
            "--status", "passed")
    assert r.code == 0 and "gsm8k.exact_match.strict-match=0.9416224412433661/1319" in r.out, r.err
    r = cli("import", str(EXAMPLES / "google-benchmark.json"), "--pr", "30433", "--run-id", "16")
    assert r.code == 2 and "a results file (google-benchmark) is one run: give --pr, --run-id and --config" in r.err


def test_import_of_records_is_unchanged_and_refuses_run_options(cli, seeded, tmp_path):
    r = cli("import", str(tmp_path / "examples" / "kimik26-disagg.runs.jsonl"), "--run-id", "1")
    assert r.code == 2 and "go with a results file" in r.err


def test_a_json_extractor_takes_its_n_from_the_same_file(cli, seeded):
    """lm-eval's metric under the investigation's own name, with its n read from the file."""
    (seeded / "shared-json.yaml").write_text(
        "schema_version: 1\nextractors:\n"
        "  - {id: gsm8k, json: 'results.gsm8k.\"exact_match,strict-match\"', metric: gsm8k,\n"
        "     n_json: '\"n-samples\".gsm8k.effective'}\n")
    r = cli("add-run", "--pr", "30433", "--run-id", "14", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "passed",
            "--results", str(EXAMPLES / "lm-eval.json"), "--format", "json")
    assert r.code == 0, r.err
    metrics = json.loads(r.out)["runs"][0]["metrics"]
    assert metrics["gsm8k"] == {"value": pytest.approx(0.9416224412433661), "n": 1319}


@pytest.mark.parametrize("extra, message", [
    ("n_json: config.model", "n_json: config.model is 'local-completions', not a sample count"),
    ("n: 5, n_json: versions.gsm8k", "either n or n_json"),
])
def test_a_json_extractors_n_that_is_not_a_count_is_refused(cli, seeded, extra, message):
    (seeded / "shared-json.yaml").write_text(
        "schema_version: 1\nextractors:\n"
        f"  - {{id: gsm8k, json: 'results.gsm8k.\"exact_match,strict-match\"', metric: gsm8k, {extra}}}\n")
    before = cli("export", "--pr", "30433").out
    r = cli("add-run", "--pr", "30433", "--run-id", "15", "--config", "kimik26-fp8-1k1k-1p1d", "--status", "passed",
            "--results", str(EXAMPLES / "lm-eval.json"))
    assert r.code == 2 and message in r.err and "Traceback" not in r.err, r.err
    assert cli("export", "--pr", "30433").out == before


def test_n_json_goes_with_a_json_metric_extractor(cli, seeded):
    (seeded / "shared-json.yaml").write_text(
        "schema_version: 1\nextractors:\n  - {id: acc, pattern: 'acc=(?P<value>[0-9.]+)', metric: acc, n_json: n}\n")
    r = cli("check")
    assert r.code == 2 and "n_json goes with a json: metric extractor" in r.err + r.out


def test_an_unknown_import_format_names_the_results_formats_too(cli, seeded):
    r = cli("import", str(EXAMPLES / "junit.xml"), "--format", "bogus")
    assert r.code == 2
    assert "expected jsonl, csv, junit, lm-eval, pytest-benchmark, google-benchmark or json" in r.err
    assert "expected jsonl or csv" in cli("export", "--pr", "30433", "--format", "bogus").err
