"""A workflow run's artifacts (#26): results files in zip archives, read safely."""

from __future__ import annotations

import functools
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest

import triage.github
from triage.errors import InputError
from triage.ingest.artifacts import owner, results_in_zip

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "results"
REPO, PR, RUN = "sgl-project/sglang", 30433, 29700000000
LEG = "kimik26-fp8-1k1k-1p1d"


def zipped(files: dict[str, bytes], *, links: tuple[str, ...] = ()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in links:
                info.external_attr = (0o120777 << 16)
            z.writestr(info, data)
    return buf.getvalue()


def test_only_results_files_are_kept():
    data = zipped({"out/junit.xml": b"<testsuite/>", "out/lm.json": b"{}", "out/trace.bin": b"\0" * 10})
    assert [name for name, _ in results_in_zip("a", data)] == ["out/junit.xml", "out/lm.json"]


@pytest.mark.parametrize("entry", ["../evil.xml", "a/../../evil.xml", "/etc/evil.xml", "C:/evil.xml", "a\\..\\evil.xml"])
def test_a_path_that_leaves_its_directory_is_refused(entry):
    with pytest.raises(InputError, match="would leave its directory"):
        results_in_zip("a", zipped({entry: b"<testsuite/>"}))


def test_a_link_is_refused():
    with pytest.raises(InputError, match="is a link"):
        results_in_zip("a", zipped({"r.xml": b"/etc/passwd"}, links=("r.xml",)))


def test_a_zip_bomb_is_refused_as_it_expands():
    data = zipped({"r.json": b" " * (64 << 20)})  # 64 MiB of spaces in about 64 KB
    assert len(data) < 200_000
    with pytest.raises(InputError, match="expands more than 200 times"):
        results_in_zip("a", data)


def test_too_many_entries_and_not_a_zip(limits_from):
    limits_from(TRIAGE_MAX_ARTIFACT_ENTRIES="3")
    with pytest.raises(InputError, match="more than 3 entries; TRIAGE_MAX_ARTIFACT_ENTRIES"):
        results_in_zip("a", zipped({f"{i}.xml": b"" for i in range(4)}))
    with pytest.raises(InputError, match="not a zip archive"):
        results_in_zip("a", b"PK\x03\x04 not really")


def test_an_artifact_belongs_to_the_job_it_names():
    configs = ["c1", "c1-aiter", "setup"]
    assert owner("c1-aiter", configs) == "c1-aiter"
    assert owner("results-c1-aiter", configs) == "c1-aiter"  # the longest within
    assert owner("results", configs) is None
    assert owner("results", ["only"]) == "only"


# --------------------------------------------------------------------------
# add-run --from-github


@pytest.fixture
def gh(fake_github, seeded, monkeypatch):
    monkeypatch.setattr(triage.github, "GitHubClient", functools.partial(triage.github.GitHubClient, sleep=lambda s: None))
    return fake_github


def nightly(gh, artifacts) -> None:
    gh.add_workflow_run(REPO, RUN, head_sha="0aac976" + "0" * 33, name="Nightly", artifacts=artifacts, jobs=[
        {"name": f"nightly ({LEG})", "conclusion": "failure", "log": "step 1\n"},
        {"name": f"nightly ({LEG}-aiterdecode)", "conclusion": "success", "log": "step 1\n"}])


def test_from_github_reads_the_artifacts_results(cli, gh, tmp_path):
    nightly(gh, {f"results-{LEG}-aiterdecode": {"junit.xml": (EXAMPLES / "junit.xml").read_bytes(),
                                                 "lm/results.json": (EXAMPLES / "lm-eval.json").read_bytes()},
                 "coverage": {"index.html": "<html/>"}})
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN), "--config-from", r"\((.+)\)")
    assert r.code == 0, r.err
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    got = {c: (s, json.loads(m)) for c, s, m in con.execute(
        "select config, status, metrics from run where run_id = ?", (str(RUN),))}
    status, metrics = got[f"{LEG}-aiterdecode"]
    assert status == "passed"  # the job's conclusion stays its outcome
    assert metrics["fail_rate"] == {"value": 0.5, "n": 4}
    assert metrics["gsm8k.exact_match.strict-match"]["n"] == 1319
    assert got[LEG][1] == {}  # the other leg's artifacts: none
    assert f"results: artifact results-{LEG}-aiterdecode/junit.xml (junit): 5 test cases" in r.err
    assert "artifact coverage: no job's config is in its name; not read" in r.err
    assert "triage-artifacts-" not in r.err


def test_from_github_refuses_a_hostile_artifact_and_records_nothing(cli, gh, tmp_path):
    before = cli("export", "--pr", str(PR)).out
    nightly(gh, {f"{LEG}": zipped({"../../junit.xml": b"<testsuite/>"})})
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN), "--config-from", r"\((.+)\)")
    assert r.code == 2 and r.err.splitlines() == [
        f"Error: artifact '{LEG}': the entry '../../junit.xml' would leave its directory"]
    assert cli("export", "--pr", str(PR)).out == before


def test_from_github_refuses_an_artifact_past_its_size(cli, gh, monkeypatch):
    monkeypatch.setenv("TRIAGE_MAX_ARTIFACT_BYTES", "100")
    nightly(gh, {LEG: {"junit.xml": (EXAMPLES / "junit.xml").read_bytes()}})
    r = cli("add-run", "--pr", str(PR), "--from-github", str(RUN), "--config-from", r"\((.+)\)")
    assert r.code == 2 and r.err.splitlines() == [
        f"Error: artifact '{LEG}': more than 100 bytes; TRIAGE_MAX_ARTIFACT_BYTES raises the limit"]


def test_the_results_files_together_are_bounded(limits_from):
    limits_from(TRIAGE_MAX_ARTIFACT_BYTES="1000")
    with pytest.raises(InputError, match="its results files unpack to more than 1,000 bytes"):
        results_in_zip("a", zipped({"a.json": b" " * 600, "b.json": b" " * 600}))
