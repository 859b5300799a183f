"""`triage test`: rule-file unit tests, promtool style."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import ROOT


def test_bundled_rule_tests_pass(cli, rules_dir):
    r = cli("test")
    assert r.code == 0, r.out + r.err
    assert r.out.strip().endswith("31 passed, 0 failed")  # kimik26 5, e2e-walltime 4, exclusive 3, git-bisect 5,
    # flaky-test 4, outcomes 6, compile-bump 4
    assert not Path("kb.sqlite").exists()  # nothing touches the knowledge base


def test_a_wrong_expectation_fails_with_exit_1(cli, tmp_path: Path):
    test = tmp_path / "x.test.yaml"
    test.write_text(
        f"rule_files: [{ROOT / 'rules' / 'kimik26-disagg.yaml'}, {ROOT / 'rules' / 'signatures.yaml'}]\n"
        f"runs_file: {ROOT / 'examples' / 'kimik26-disagg.runs.jsonl'}\n"
        "tests:\n"
        "  - name: wrong on purpose\n"
        "    expect: {attention-backend: confirmed, no-such: open}\n"
        "    bisects: {image: {next: v0.5.13.post1-rocm720-mi35x-20260624}}\n"
    )
    r = cli("test", str(test))
    assert r.code == 1
    assert "FAIL" in r.out
    assert "attention-backend: expected confirmed, got ruled_out" in r.out
    assert "no-such: no such hypothesis" in r.out
    assert "bisect image.next: expected 'v0.5.13.post1-rocm720-mi35x-20260624', got None" in r.out
    assert r.out.strip().endswith("0 passed, 1 failed")


def test_a_malformed_test_file_is_bad_input(cli, tmp_path: Path):
    test = tmp_path / "bad.test.yaml"
    test.write_text("tests: []\n")
    r = cli("test", str(test))
    assert r.code == 2 and "needs rule_files" in r.err
