"""Definitions read back from the knowledge base are validated once for each stored
text (``triage.rules.language.kept``): the objects kept are the ones a validation
gives, a changed definition is validated again, a kept file that cannot be read is
validated again, and an evaluation reads the same either way."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from triage.rules.language import kept


@pytest.fixture
def keeping():
    """Kept definitions where the test's commands keep them (its ``TRIAGE_CACHE``)."""
    where = Path(os.environ["TRIAGE_CACHE"])
    for old in where.glob("definitions-*"):  # kept by the commands that made the knowledge base
        shutil.rmtree(old)
    kept.use(where)
    yield where
    kept.use(None)
    from triage.kb.db import dispose_engines

    dispose_engines()


def _url() -> str:
    return f"sqlite:///{Path('kb.sqlite').resolve()}"


def _kept(where: Path) -> list[Path]:
    return list(where.glob("definitions-*/*.pickle"))


def _bundle(url: str):
    from triage.kb import store

    with store.session(url) as s:
        inv = store.find_investigation(s, 30433, None)
        return store.load_bundle(s, inv, runs=False)


def _definitions(b) -> tuple:
    return (b.spec, b.hypotheses, b.recipes, b.rules, b.evidence, b.bisects)


def test_the_kept_definitions_are_the_validated_ones(seeded, keeping) -> None:
    from triage.rules.engine.records import plain

    url = _url()
    kept.use(None)
    validated = _bundle(url)
    kept.use(keeping)
    first = _bundle(url)  # validated, and kept
    files = list(_kept(keeping))
    assert len(files) == 1
    again = _bundle(url)  # read back
    assert _definitions(validated) == _definitions(first) == _definitions(again)
    assert again.plain == plain(again.spec, again.hypotheses, again.recipes, again.rules, again.bisects)
    # the plain data is of the very objects it came with
    assert again.plain.of[2] is again.recipes and again.plain.of[3] is again.rules


def test_a_changed_definition_is_validated_again(seeded, keeping, cli) -> None:
    url = _url()
    before = _bundle(url)
    bisect = before.bisects[0]
    point = bisect.point_labels()[0]
    assert cli("bisect", "mark", "--pr", "30433", bisect.id, point, "good", "--because", "read by hand").code == 0
    after = _bundle(url)
    assert len(list(_kept(keeping))) == 2
    marks = [m for m in after.bisects[0].marks if m.point == point and m.because == "read by hand"]
    assert len(marks) == 1 and not [m for m in before.bisects[0].marks if m.because == "read by hand"]


def test_a_kept_file_that_cannot_be_read_is_validated_again(seeded, keeping) -> None:
    url = _url()
    first = _bundle(url)
    (path,) = _kept(keeping)
    path.write_bytes(b"not a pickle")
    again = _bundle(url)
    assert _definitions(again) == _definitions(first)
    assert path.read_bytes() != b"not a pickle"  # written anew


def test_the_oldest_kept_go_past_the_limit(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(kept, "KEEP", 3)
    kept.use(tmp_path)
    try:
        for i in range(5):
            assert kept.validated(f"text {i}", lambda i=i: [i]) == [i]
        assert len(list(_kept(tmp_path))) == 3
        made = []
        assert kept.validated("text 4", lambda: made.append(1) or [4]) == [4] and made == []  # kept
    finally:
        kept.use(None)


def test_without_a_cache_every_read_validates(tmp_path) -> None:
    kept.use(None)
    made = []
    for _ in range(2):
        assert kept.validated("text", lambda: made.append(1) or "value") == "value"
    assert made == [1, 1]


def test_a_bundle_given_other_rules_does_not_keep_the_first_ones_plain_data(seeded, keeping) -> None:
    from triage.rules.engine.records import plain, plain_of

    b = _bundle(_url())
    assert plain_of(b) is b.plain
    fewer = replace(b, rules=list(b.rules[1:]))
    assert plain_of(fewer) == plain(fewer.spec, fewer.hypotheses, fewer.recipes, fewer.rules, fewer.bisects)
    assert plain_of(fewer).key != b.plain.key


def test_a_report_reads_the_same_with_kept_definitions(seeded, cli, monkeypatch, tmp_path) -> None:
    full = cli("report", "--pr", "30433", "--format", "json", "--full")
    assert full.code == 0
    again = cli("report", "--pr", "30433", "--format", "json", "--full")  # the definitions read back kept
    assert again.out == full.out
    monkeypatch.setenv("TRIAGE_CACHE", "off")
    assert cli("report", "--pr", "30433", "--format", "json", "--full").out == full.out


def test_an_evaluation_with_kept_definitions_builds_no_validator(seeded, cli) -> None:
    """The point of keeping them: a command that evaluates an investigation whose
    definitions it has seen builds none of the schema's validators (what costs a
    command most of its time there)."""
    assert cli("report", "--pr", "30433", "--format", "json").code == 0  # kept now
    assert cli("add-run", "--pr", "30433", "--run-id", "1", "--config", "kimik26-fp8-1k1k-1p1d",
               "--metric", "gsm8k=0.9/1319", "--status", "passed").code == 0
    code = """
import sys
from triage.cli import main
from triage.rules.language import schema
try:
    main(["add-run", "--pr", "30433", "--run-id", "2", "--config", "kimik26-fp8-1k1k-1p1d",
          "--metric", "gsm8k=0.9/1319", "--status", "passed"])
except SystemExit as e:
    assert not e.code, e.code
built = sorted(n for n, c in vars(schema).items() if isinstance(c, type) and issubclass(c, schema.Strict)
               and c is not schema.Strict and c.__pydantic_complete__)
print(built)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout


def test_what_the_engine_makes_unvalidated_equals_its_validation() -> None:
    """The prediction words' conditions and the metric defaults, made without a validator,
    are what validating them gives."""
    from triage.rules.engine.context import _NO_SETTINGS
    from triage.rules.engine.evidence import _prediction_condition
    from triage.rules.language.schema import Condition, MetricSpec, RecipeSpec, Selector

    assert _NO_SETTINGS == MetricSpec() and _NO_SETTINGS.model_fields_set == MetricSpec().model_fields_set
    for recipe, word, validated in [
        ({}, "recovers", Condition(recovers=True)),
        ({}, "same_as_bad", Condition(same_as="bad")),
        ({"base": "b"}, "unchanged", Condition(same_as=Selector(config="b"))),
        ({"base": "b", "base_run": "7"}, "unchanged", Condition(same_as=Selector(config="b", run="7"))),
        ({"base": "b", "base_run": "7/b"}, "unchanged", Condition(same_as=Selector(run="7/b"))),
        ({"base_run": "7"}, "unchanged", Condition(same_as=Selector(run="7"))),
    ]:
        spec = RecipeSpec.model_validate({"id": "r", "predicts": {"h": word}, **recipe})
        made = _prediction_condition(word, spec)[0]
        assert made == validated and made.model_fields_set == validated.model_fields_set
        if isinstance(made.same_as, Selector):
            assert made.same_as.model_fields_set == validated.same_as.model_fields_set
