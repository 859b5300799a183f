"""The use cases behind `scan`, `signatures suggest` and `signatures list`, called directly."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import pytest

from triage.errors import InputError
from triage.kb import store
from triage.usecases import scan

LOG = """\
[TP3] ValueError: 'DeepseekV4ForCausalLM' is not a registered model
RuntimeError: expected scalar type BFloat16 but found Float in step 12
RuntimeError: expected scalar type BFloat16 but found Half in step 13
Process exited with signal SIGABRT (-6)
ERROR: Could not build wheels for aiter
"""


@pytest.fixture
def url(cli, rules_dir) -> str:
    assert cli("import", os.devnull).code == 0  # the rule files' signatures loaded
    return store.resolve_url(None)


def test_scan_finds_the_known_failures_and_hears_its_progress(url, tmp_path: Path):
    (tmp_path / "job.log").write_text(LOG, encoding="utf-8")
    sizes, seen, notes = [], [], []

    @contextmanager
    def progress(size):
        sizes.append(size)
        yield seen.append

    matcher, found = scan.scan(url, "job.log", note=notes.append, progress=progress)
    assert [(m.line_no, m.signature_id) for m in found.matches] == [(1, "unregistered-model"), (4, "init-abort")]
    assert [no for no, _ in found.candidates] == [2, 3, 5] and notes == []
    assert sizes == [len(LOG)] and seen and max(seen) <= len(LOG)
    assert {s.id for s in scan.signatures(url)} == {s.id for s in matcher.signatures}
    drafted = scan.drafts(found)
    assert [no for no, _ in drafted] == [2, 3, 5]
    ids = [d["id"] for _, d in drafted]
    assert len(set(ids)) == 3 and ids[1] == ids[0] + "-2"  # the same line, once masked: its id made unique


def test_a_bad_threshold_or_no_signatures_is_refused(cli, tmp_path: Path):
    (tmp_path / "job.log").write_text(LOG, encoding="utf-8")
    with pytest.raises(InputError, match="--threshold 0: expected a score above 0"):
        scan.check_threshold(0)
    assert cli("import", os.devnull).code == 0  # no rule files: no signatures
    with pytest.raises(InputError, match="no signatures in the knowledge base"):
        scan.scan(store.resolve_url(None), "job.log")
