"""The use case behind `triage check`, called directly."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.errors import RuleFileError
from triage.kb import store
from triage.usecases.rulefiles import check


def test_check_says_what_each_file_declares(rules_dir: Path):
    warnings: list = []
    files = check([str(rules_dir)], store.resolve_url(None), warnings)
    bundled = next(f for f in files if f["investigation"] == "kimik26-disagg")
    assert (bundled["repo"], bundled["pr"]) == ("sgl-project/sglang", 30433)
    assert bundled["counts"]["hypotheses"] > 5 and bundled["counts"]["bisects"] >= 1 and bundled["decides"]


def test_a_bad_file_raises_every_problem_and_keeps_the_warnings(tmp_path: Path):
    (tmp_path / "bad.yaml").write_text("investigation: {id: x}\nhypotheses: 3\n", encoding="utf-8")
    warnings: list = []
    with pytest.raises(RuleFileError) as e:
        check([str(tmp_path / "bad.yaml")], store.resolve_url(None), warnings)
    assert e.value.problems and all(p.path.endswith("bad.yaml") for p in e.value.problems)
    assert warnings == sorted(warnings)
