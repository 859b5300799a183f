"""Logs into runs: `add-run --log`, `scan`, `signatures suggest|list`, and
the one-pass reader under them (triage.ingest.logread)."""

from __future__ import annotations

import gzip
import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest
import yaml

from triage.ingest.extract import Extractor
from triage.ingest.logread import EXCERPT_BYTES, EXCERPT_LINES, extractor_from_spec, scan_log
from triage.ingest.matcher import Matcher, SignatureSpec

# The seed's real lines (sgl-project/sglang#30433).
ACCURACY_LOG = """\
[probe] ok:  Paris. Paris is located in the north-central part of the country...
Accuracy: 0.878
[gsm8k] accuracy=0.878 threshold=0.92
[gsm8k] accuracy below threshold -- failing before sweep
"""
# Another model, a rank and a timestamp: the same known failure.
UNREGISTERED_LOG = """\
Loading checkpoint shards: 100%|##########| 64/64
[2026-07-01 03:14:15 TP3] Scheduler hit an exception: Traceback (most recent call last):
[2026-07-01 03:14:15 TP3] ValueError: 'DeepseekV4ForCausalLM' is not a registered model
[2026-07-01 03:14:16] Received sigquit from a child process. It usually means the child failed.
"""
SIGABRT_LOG = """\
[2026-07-02 10:00:01 DP0 TP5] Init torch distributed begin.
Fatal Python error: Aborted
Process exited with signal SIGABRT (-6)
"""
BLOB_LOG = """\
Downloading the job log...
{"code":"BlobNotFound","message":"The specified blob does not exist."}
"""

AITER = "kimik26-fp8-1k1k-1p1d-aiterdecode"
BASE = "kimik26-fp8-1k1k-1p1d"


def _log(tmp_path: Path, name: str, text: str, packed: bool = False) -> str:
    path = tmp_path / name
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if packed else data)
    return str(path)


def _run(tmp_path: Path, run_id: str, config: str) -> dict:
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    con.row_factory = sqlite3.Row
    row = con.execute("select * from run where run_id=? and config=?", (run_id, config)).fetchone()
    assert row is not None, (run_id, config)
    out = dict(row)
    out["metrics"], out["provenance"] = json.loads(out["metrics"]), json.loads(out["provenance"])
    return out


def _report(cli) -> dict:
    r = cli("report", "--pr", "30433", "--format", "json")
    assert r.code == 0, r.err
    return json.loads(r.out)


# ---------------------------------------------------------------------------
# add-run --log


def test_accuracy_lines_give_the_metric_with_its_sample_count(cli, seeded, tmp_path):
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000001", "--config", BASE,
            "--log", _log(tmp_path, "job.log", ACCURACY_LOG))
    assert r.code == 0, r.err
    assert "log: gsm8k=0.878/1319 (line 3, gsm8k-accuracy)" in r.err
    assert "log: status failed (from gsm8k against the gate 0.92)" in r.err
    assert "recorded run 29500000001 (kimik26-fp8-1k1k-1p1d): failed, gsm8k=0.878/1319" in r.out
    run = _run(tmp_path, "29500000001", BASE)
    assert run["metrics"] == {"gsm8k": {"value": 0.878, "n": 1319}}
    assert run["signature_id"] is None
    assert run["log_excerpt"] == ACCURACY_LOG.rstrip("\n")  # four lines: all within the context


def test_unregistered_model_with_another_name_and_rank_is_the_known_failure(cli, seeded, tmp_path):
    before = {h["id"]: h["status"] for h in _report(cli)["hypotheses"]}
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000002", "--config", AITER,
            "--log", _log(tmp_path, "job.log", UNREGISTERED_LOG))
    assert r.code == 0, r.err
    assert "log: known failure unregistered-model (setup-error) at line 3, score 93 (fuzzy)" in r.err
    assert "log: status infra (from known failure unregistered-model)" in r.err
    run = _run(tmp_path, "29500000002", AITER)
    assert run["status"] == "infra"
    assert run["signature_id"] == "unregistered-model"
    assert run["signature_line"] == "[2026-07-01 03:14:15 TP3] ValueError: 'DeepseekV4ForCausalLM' is not a registered model"
    assert "DeepseekV4ForCausalLM" in run["log_excerpt"]

    data = _report(cli)
    # the run decides nothing: its evidence is inconclusive, statuses unchanged
    assert {h["id"]: h["status"] for h in data["hypotheses"]} == before
    mine = [e for h in data["hypotheses"] for e in h["evidence"] if any(r["run_id"] == "29500000002" for r in e["runs"])]
    assert mine and {e["verdict"] for e in mine} == {"inconclusive"}
    assert all("known failure unregistered-model" in e["reason"] for e in mine)
    # said once with the other run of its config that failed the same way
    warning = next(w["message"] for w in data["warnings"] if "29500000002" in w["message"])
    assert warning.startswith("2 runs of 1p1d-aiterdecode (28903343346, 29500000002): infra, known failure")
    assert "the run used the baked image's sglang without the runtime checkout" in warning  # meaning
    assert "remedy: rebase the branch onto the runtime-checkout PR" in warning
    md = cli("report", "--pr", "30433").out
    assert "remedy: rebase the branch onto the runtime-checkout PR" in md


@pytest.mark.parametrize(
    "text, signature, status",
    [(SIGABRT_LOG, "init-abort", "crashed"), (BLOB_LOG, "blob-not-found", "infra")],
)
def test_crash_and_purged_log_signatures(cli, seeded, tmp_path, text, signature, status):
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000003", "--config", BASE,
            "--log", _log(tmp_path, "job.log", text))
    assert r.code == 0, r.err
    run = _run(tmp_path, "29500000003", BASE)
    assert (run["signature_id"], run["status"]) == (signature, status)


def test_gzip_log(cli, seeded, tmp_path):
    path = _log(tmp_path, "job.txt", ACCURACY_LOG, packed=True)  # gzip known by its bytes, not its name
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000004", "--config", BASE, "--log", path)
    assert r.code == 0, r.err
    assert _run(tmp_path, "29500000004", BASE)["metrics"] == {"gsm8k": {"value": 0.878, "n": 1319}}


def _packed(kind: str, data: bytes) -> bytes:
    import bz2
    import lzma

    import zstandard

    return {"xz": lzma.compress, "bzip2": bz2.compress, "zstd": zstandard.ZstdCompressor().compress}[kind](data)


@pytest.mark.parametrize("kind", ["xz", "bzip2", "zstd"])
def test_xz_bzip2_and_zstd_logs_are_read_decompressed(cli, seeded, tmp_path, kind):
    """Read as text they matched nothing, or a regex signature on their bytes (#30)."""
    (tmp_path / "job.log").write_bytes(_packed(kind, ACCURACY_LOG.encode()))
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000014", "--config", BASE, "--log", "job.log")
    assert r.code == 0, r.err
    assert _run(tmp_path, "29500000014", BASE)["metrics"] == {"gsm8k": {"value": 0.878, "n": 1319}}


def test_a_compressed_bomb_in_any_format_is_refused(cli, seeded, tmp_path, monkeypatch):
    monkeypatch.setenv("TRIAGE_MAX_GZIP_RATIO", "10")
    (tmp_path / "job.log").write_bytes(_packed("xz", b"a" * (80 << 20)))
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000015", "--config", BASE, "--log", "job.log")
    assert r.code == 2
    assert r.err.strip() == ("Error: job.log: the xz data expands more than 10 times (a decompression bomb?); "
                             "TRIAGE_MAX_GZIP_RATIO raises the limit")


@pytest.mark.parametrize("packed", [False, True])
def test_log_from_stdin(cli, seeded, tmp_path, monkeypatch, packed):
    data = SIGABRT_LOG.encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(data) if packed else data)))
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000005", "--config", BASE, "--log", "-")
    assert r.code == 0, r.err
    assert _run(tmp_path, "29500000005", BASE)["signature_id"] == "init-abort"


def test_what_the_user_typed_wins_over_the_log(cli, seeded, tmp_path):
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000006", "--config", BASE, "--status", "passed",
            "--metric", "gsm8k=0.941/1319", "--log", _log(tmp_path, "job.log", ACCURACY_LOG))
    assert r.code == 0, r.err
    assert "log: gsm8k=0.878/1319 (line 3, gsm8k-accuracy) (not used: --metric gsm8k given)" in r.err
    run = _run(tmp_path, "29500000006", BASE)
    assert run["metrics"] == {"gsm8k": {"value": 0.941, "n": 1319}}
    assert run["status"] == "passed"


def test_an_existing_run_keeps_its_status_and_a_clean_log_clears_the_mark(cli, seeded, tmp_path):
    args = ["add-run", "--pr", "30433", "--run-id", "29500000007", "--config", BASE]
    assert cli(*args, "--status", "failed", "--metric", "gsm8k=0.88/1319").code == 0
    r = cli(*args, "--log", _log(tmp_path, "a.log", SIGABRT_LOG))
    assert r.code == 0, r.err
    run = _run(tmp_path, "29500000007", BASE)
    assert (run["status"], run["signature_id"]) == ("failed", "init-abort")  # not re-inferred
    r = cli(*args, "--log", _log(tmp_path, "b.log", ACCURACY_LOG))
    assert r.code == 0, r.err
    run = _run(tmp_path, "29500000007", BASE)
    assert run["signature_id"] is None and run["signature_line"] is None
    assert run["metrics"] == {"gsm8k": {"value": 0.878, "n": 1319}}


def test_a_new_run_with_nothing_in_its_log_still_needs_a_status(cli, seeded, tmp_path):
    before = sqlite3.connect(tmp_path / "kb.sqlite").execute("select count(*) from run").fetchone()[0]
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000008", "--config", BASE,
            "--log", _log(tmp_path, "job.log", "starting\nall good\n"))
    assert r.code == 2
    assert "log: no metric, status or known failure found" in r.err
    assert "is new: give its --status" in r.err
    after = sqlite3.connect(tmp_path / "kb.sqlite").execute("select count(*) from run").fetchone()[0]
    assert after == before


def test_missing_log_is_one_line_exit_2(cli, seeded, tmp_path):
    r = cli("add-run", "--pr", "30433", "--run-id", "1", "--config", BASE, "--status", "failed",
            "--log", str(tmp_path / "nope.log"))
    assert r.code == 2
    assert r.err.strip() == f"Error: {tmp_path / 'nope.log'}: no such log file"


def test_status_and_provenance_extractors_from_a_shared_rule_file(cli, seeded, tmp_path):
    (seeded / "ci-lines.yaml").write_text(
        "schema_version: 1\n"
        "extractors:\n"
        "  - id: gate-line\n"
        "    pattern: 'GSM8K gate (?P<value>PASS|FAIL)'\n"
        "    status: {PASS: passed, FAIL: failed}\n"
        "  - id: image-line\n"
        "    pattern: 'Using image (?P<value>\\S+)'\n"
        "    provenance: image\n"
    )
    log = "Using image lmsysorg/sglang-rocm:v0.5.14-rocm720-mi35x-20260626\nAccuracy: 0.888\nGSM8K gate FAIL\n"
    r = cli("add-run", "--pr", "30433", "--run-id", "29500000009", "--config", BASE, "--set", "sha=0aac976",
            "--log", _log(tmp_path, "job.log", log))
    assert r.code == 0, r.err
    assert "log: status failed (line 3, gate-line)" in r.err
    run = _run(tmp_path, "29500000009", BASE)
    assert run["status"] == "failed"
    assert run["provenance"] == {"image": "lmsysorg/sglang-rocm:v0.5.14-rocm720-mi35x-20260626", "sha": "0aac976"}
    assert run["metrics"] == {"gsm8k": {"value": 0.888, "n": 1319}}


def test_the_builtin_accuracy_reader_only_without_declared_extractors(cli, rules_dir, tmp_path):
    (rules_dir / "kimik26-disagg.yaml").unlink()
    (rules_dir / "plain.yaml").write_text(
        "schema_version: 1\n"
        "investigation: {id: plain, repo: o/r, pr: 7, title: T, metric: accuracy, gate: 0.9}\n"
    )
    r = cli("add-run", "--pr", "7", "--run-id", "1", "--config", "c", "--log", _log(tmp_path, "job.log", ACCURACY_LOG))
    assert r.code == 0, r.err
    assert "log: accuracy=0.878 (line 3, accuracy)" in r.err  # the last match counts
    assert _run(tmp_path, "1", "c")["status"] == "failed"


# ---------------------------------------------------------------------------
# the one-pass reader


SIGS = [
    SignatureSpec("unregistered-model", "ValueError: 'KimiK25ForConditionalGeneration' is not a registered model",
                  "setup-error"),
    SignatureSpec("init-abort", r"SIGABRT", "crash", regex=True),
]


def test_excerpt_keeps_context_and_is_bounded():
    lines = [f"step {i}: fine" for i in range(1, 2001)]
    lines[999] = "Process exited with signal SIGABRT (-6)"
    for i in range(0, 2000, 41):
        lines[i] = f"neg_slots={i} " + "x" * 600
    ex = [Extractor("neg", r"neg_slots=(?P<value>\d+)", "metric", "neg_slots", pick="first"),
          Extractor("neg-last", r"neg_slots=(?P<value>\d+)", "metric", "neg_slots_last")]
    found = scan_log(lines, Matcher(SIGS), ex, first_match=True, excerpt=True)
    assert [m.line_no for m in found.matches] == [1000]
    assert found.extracted.metrics == {"neg_slots": (0.0, None), "neg_slots_last": (1968.0, None)}
    text = found.excerpt
    assert text is not None
    assert len(text.encode()) <= EXCERPT_BYTES and len(text.splitlines()) <= EXCERPT_LINES
    got = text.splitlines()
    # in log order: the first extracted line, the known failure, the last extracted line, each with context
    i = got.index(lines[999])
    assert got[i - 3:i + 4] == ["…", "step 998: fine", "step 999: fine", lines[999], "step 1001: fine",
                                "step 1002: fine", "…"]
    assert got[0].startswith("neg_slots=0 xxx") and got[-3].startswith("neg_slots=1968 xxx")
    assert all(len(x) <= 400 for x in got)
    # when not everything fits, the known failure is kept first
    many = [Extractor(f"e{k}", rf"^neg_slots=(?P<value>{k * 41})\b", "metric", f"m{k}") for k in range(50)]
    text = scan_log(lines, Matcher(SIGS), many, excerpt=True).excerpt
    assert lines[999] in text.splitlines()
    assert len(text.encode()) <= EXCERPT_BYTES and len(text.splitlines()) <= EXCERPT_LINES


def test_excerpt_is_the_tail_when_nothing_was_found():
    lines = [f"line {i}" for i in range(1, 100)]
    found = scan_log(lines, Matcher(SIGS), [], excerpt=True)
    assert found.excerpt == "\n".join(lines[-10:])


def test_extractor_specs_as_rule_files_declare_them():
    assert extractor_from_spec({"id": "a", "pattern": "x(?P<value>1)", "metric": "m", "n": 5}) == \
        Extractor("a", "x(?P<value>1)", "metric", "m", n=5)
    assert extractor_from_spec({"id": "b", "pattern": "(?P<value>OK)", "status": {"OK": "passed"}, "pick": "first"}) == \
        Extractor("b", "(?P<value>OK)", "status", None, pick="first", status_map={"OK": "passed"})
    assert extractor_from_spec({"id": "c", "pattern": "boom", "status": "crashed"}).name == "crashed"


# ---------------------------------------------------------------------------
# scan and signatures

SCAN_LOG = """\
2026-07-01T03:14:00.0000000Z Loading checkpoint shards: 100%
2026-07-01T03:14:15.1234567Z [2026-07-01 03:14:15 TP3] ValueError: 'DeepseekV4ForCausalLM' is not a registered model
2026-07-01T03:14:15.2234567Z [2026-07-01 03:14:15 TP5] ValueError: 'DeepseekV4ForCausalLM' is not a registered model
2026-07-01T03:14:16.0000000Z RuntimeError: expected scalar type BFloat16 but found Float in step 12
2026-07-01T03:14:17.0000000Z RuntimeError: expected scalar type BFloat16 but found Float in step 13
2026-07-01T03:14:18.0000000Z Process exited with signal SIGABRT (-6)
2026-07-01T03:14:19.0000000Z Accuracy: 0.878
2026-07-01T03:14:20.0000000Z ERROR: Could not build wheels for aiter, which is required to install pyproject.toml-based projects
"""


def test_scan_text(cli, rules_dir, tmp_path, golden):
    r = cli("scan", _log(tmp_path, "job.log", SCAN_LOG))
    assert r.code == 0, r.err
    golden("scan.txt", r.out.replace(str(tmp_path), "TMP"))


def test_scan_json_with_the_investigation_extractors(cli, rules_dir, tmp_path, golden):
    r = cli("scan", _log(tmp_path, "job.log.gz", SCAN_LOG, packed=True), "--pr", "30433", "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [(m["line"], m["signature"], m["how"]) for m in data["matches"]] == [
        (2, "unregistered-model", "fuzzy"), (3, "unregistered-model", "fuzzy"), (6, "init-abort", "regex")]
    assert [c["line"] for c in data["candidates"]] == [4, 8]  # line 5 is line 4 again, once normalised
    assert data["extracted"]["metrics"] == {"gsm8k": {"value": 0.878, "n": 1319}}
    golden("scan.json", r.out.replace(str(tmp_path), "TMP"))


def test_scan_threshold_and_stdin(cli, rules_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SCAN_LOG.encode())))
    r = cli("scan", "-", "--threshold", "99", "-f", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [m["signature"] for m in data["matches"]] == ["init-abort"]  # 93 is below 99
    assert 2 in [c["line"] for c in data["candidates"]]
    r = cli("scan", "-", "--threshold", "0")
    assert r.code == 2 and "--threshold 0" in r.err


def test_scan_without_signatures_or_log(cli, tmp_path):
    r = cli("scan", _log(tmp_path, "job.log", SCAN_LOG))
    assert r.code == 2 and "no signatures in the knowledge base" in r.err
    r = cli("scan", str(tmp_path / "nope.log"))
    assert r.code == 2


def test_suggested_signatures_match_their_lines_once_pasted(cli, rules_dir, tmp_path):
    log = _log(tmp_path, "job.log", SCAN_LOG)
    r = cli("signatures", "suggest", log)
    assert r.code == 0, r.err
    drafts = yaml.safe_load(r.out)
    assert [d["id"] for d in drafts] == ["runtimeerror-expected-scalar-type", "error-not-build-wheels"]
    assert drafts[0]["text"] == "RuntimeError: expected scalar type BFloat16 but found Float in step <num>"
    assert drafts[1]["class"] == "unknown" and drafts[0]["meaning"] == ""
    # paste them into a rule file: the lines are now known failures
    (rules_dir / "drafts.yaml").write_text("schema_version: 1\nsignatures:\n" +
                                            "".join("  " + x + "\n" for x in r.out.splitlines()))
    assert cli("check").code == 0
    data = json.loads(cli("scan", log, "-f", "json").out)
    assert [(m["line"], m["signature"], m["how"]) for m in data["matches"]] == [
        (2, "unregistered-model", "fuzzy"), (3, "unregistered-model", "fuzzy"),
        (4, "runtimeerror-expected-scalar-type", "exact"), (5, "runtimeerror-expected-scalar-type", "exact"),
        (6, "init-abort", "regex"), (8, "error-not-build-wheels", "exact")]
    assert data["candidates"] == []
    r = cli("signatures", "suggest", log)
    assert r.code == 0 and r.out == "" and "no unmatched error lines" in r.err


def test_signatures_list(cli, rules_dir):
    r = cli("signatures", "list")
    assert r.code == 0, r.err
    for ident in ("unregistered-model", "init-abort", "blob-not-found", "abi-mismatch"):
        assert ident in r.out


@pytest.mark.parametrize("excerpt", [False, True])
def test_scan_log_on_a_reader_reports_progress_per_block(tmp_path, excerpt):
    from triage.ingest.logs import open_log

    path = _log(tmp_path, "big.log", "fine\n" * 5000 + SIGABRT_LOG + "fine\n" * 5000)
    ticks = []
    with open_log(path, size=4096) as log:
        found = scan_log(log, Matcher(SIGS), candidates=5, excerpt=excerpt, progress=lambda: ticks.append(1))
    assert [(m.line_no, m.signature_id) for m in found.matches] == [(5003, "init-abort")]
    assert [n for n, _ in found.candidates] == [5002]  # "Fatal Python error: Aborted" is no known failure here
    assert len(ticks) > 5
