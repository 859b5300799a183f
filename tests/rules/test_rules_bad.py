"""Every bad rule file is refused with exactly the messages it declares."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.rules.language.loader import load_file, load_rules
from triage.errors import RuleFileError

BAD = Path(__file__).resolve().parents[1] / "rules_bad"
FILES = sorted(BAD.glob("*.yaml"))


def expected(path: Path) -> list[str]:
    return [line[len("# expect: "):] for line in path.read_text().splitlines() if line.startswith("# expect: ")]


def test_folder_is_not_empty():
    assert len(FILES) >= 15


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_bad_rule_file(path: Path):
    want = expected(path)
    assert want, f"{path.name} declares no '# expect:' line"
    assert path.read_text().startswith("# defect: "), "each bad file opens with the defect it has"
    loaded, problems = load_file(path, display=path.name)
    assert loaded is None or problems
    assert [str(p) for p in sorted(problems)] == want


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_check_command_exits_2_and_lists_every_problem(cli, path: Path, tmp_path: Path):
    r = cli("check", str(path))
    assert r.code == 2
    assert r.out == ""
    for line in expected(path):
        assert line.split(": ", 1)[1] in r.err
    assert "Traceback" not in r.err


def test_one_bad_file_refuses_the_whole_set(tmp_path: Path):
    good = Path(__file__).resolve().parents[2] / "rules" / "signatures.yaml"
    with pytest.raises(RuleFileError) as e:
        load_rules([good, BAD / "unknown-key.yaml", BAD / "wrong-type.yaml"])
    assert len(e.value.problems) == 2
    assert e.value.exit_code == 2


def test_a_bad_rule_file_writes_nothing(cli, rules_dir: Path, tmp_path: Path):
    (rules_dir / "broken.yaml").write_text((BAD / "unknown-key.yaml").read_text())
    r = cli("report", "--pr", "30433")
    assert r.code == 2
    assert "broken.yaml:10:7: unknown key 'confg'" in r.err
    assert not (tmp_path / "kb.sqlite").exists()


def test_cross_file_duplicates_are_refused(tmp_path: Path):
    a = tmp_path / "a.yaml"
    b = tmp_path / "b.yaml"
    text = "schema_version: 1\ninvestigation: {id: same, repo: o/r, pr: 1, title: T, metric: acc}\n"
    a.write_text(text)
    b.write_text(text)
    with pytest.raises(RuleFileError) as e:
        load_rules([a, b])
    messages = [p.message for p in e.value.problems]
    assert any("investigation 'same' is also defined in" in m for m in messages)
    assert any("o/r#1 already has an investigation" in m for m in messages)
