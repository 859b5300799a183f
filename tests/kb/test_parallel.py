"""An evaluation in two processes (triage.kb.parallel): the same evaluation as one.

The engine's side is checked in-process: units worked out ahead of an
evaluation, in any split between two workers and even from runs that changed
since, taken in (through their stored encoding) give, to the byte, a whole
evaluation.  The process side runs the real command, in a process of its own
(a fork from inside the test runner would copy its threads' locks): the
import evaluated by a helper and by itself alone store the same pieces and
report the same, on SQLite and PostgreSQL, and a helper that fails or dies
changes nothing but the time.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_RUNS
from tests.support.bundled import INV as BUNDLED
from tests.support.bundled import RUNS, apply_edit, edit, outcome_of, through_storage
from triage.rules.engine.context import Context
from triage.rules.engine.evaluate import ahead_units, evaluate, work_ahead
from triage.rules.engine.memo import Memo
from triage.rules.language.schema import RuleSpec

ROOT = Path(__file__).resolve().parents[2]
# The bundled investigation, and a rule that reads a bisect (only where the bisects are can it be worked out).
INV = replace(BUNDLED, rules=BUNDLED.rules + [RuleSpec.model_validate(
    {"id": "image-bisected", "hypothesis": "runtime-args", "when": {"bisect": "image", "done": True}, "then": "supports"})])


def _units(inv) -> list[tuple[str, bool]]:
    return ahead_units(inv, Context(inv).source.configs())


def _ahead(inv, names: list[str]) -> tuple[str, dict]:
    """Work ``names`` out ahead; the key and the pieces worked out, as the knowledge base would give them back."""
    memo = Memo()
    work_ahead(inv, memo, names)
    worked = set(memo.worked)
    memo = through_storage(memo)
    return memo.key, {n: p for n, p in memo.stored.items() if n in worked}


def test_units_name_every_piece_of_an_evaluation() -> None:
    memo = Memo()
    evaluate(INV, memo)
    units = _units(INV)
    assert units[0] == ("b", False)
    named = {n for n, _ in units if n != "b"} | {n for n in memo.pieces if n.startswith("b:")}
    rest = set(memo.pieces) - named
    assert named <= set(memo.pieces)
    # the others: facts of configs without runs, which a recipe's confounds read (inside that unit),
    # and a config's runs pooled, which the rules and predictions that compare with it read
    assert rest and all((n.startswith("f:") and n[2:] not in Context(INV).source.configs()) or n.startswith("q:")
                        for n in rest)
    assert any(n.startswith("q:") for n in rest)
    assert [n for n, reads in units if reads] == ["r:image-bisected"]


def test_a_unit_worked_out_inside_another_is_counted_once() -> None:
    """A recipe's confounds read its config's facts: worked out alone, the facts are a
    piece of their own (the list of what is being read is kept by identity: two
    pieces reading the same runs once confused it)."""
    recipe = next(n for n, _ in _units(INV) if n.startswith("c:"))
    memo = Memo()
    work_ahead(INV, memo, [recipe])
    assert recipe in memo.worked and any(n.startswith("f:") for n in memo.worked)


@settings(max_examples=15, deadline=None)
@given(st.randoms(use_true_random=False), st.lists(edit, max_size=3))
def test_pieces_worked_ahead_in_two_parts_equal_a_whole_evaluation(rnd, edits: list) -> None:
    """Two workers split the units at random (a unit that reads a bisect goes where the
    bisects are), possibly from runs that changed after (a helper that read another
    snapshot); the evaluation that takes in their pieces equals a whole one, and
    counts the pieces it took in as worked out (they are new to the knowledge base)."""
    before = replace(INV, runs=list(RUNS))
    runs = list(RUNS)
    for step, e in enumerate(edits):
        runs = apply_edit(runs, e, step)
    after = replace(INV, runs=runs)
    units = _units(before)
    helper = [n for n, reads in units if reads or n == "b" or rnd.random() < 0.5]
    mine = [n for n, _ in units if n not in helper]
    memo = Memo()
    for part in (mine, helper):
        key, pieces = _ahead(before, part)
        memo.adopt(key, pieces)
    got = evaluate(after, memo)
    whole = Memo()
    assert outcome_of(got) == outcome_of(evaluate(after, whole))
    assert memo.pieces == whole.pieces
    # (in another order: a piece taken in does not ask again for the pieces inside it)
    assert sorted(memo.worked) == sorted(whole.worked)


def test_pieces_worked_ahead_here_are_taken_in_without_decoding_them_again(monkeypatch) -> None:
    """This process's own units, worked out ahead of its evaluation (before it takes in
    the helper's), keep the values they were decoded to: the evaluation decodes only
    the pieces it did not work out itself, and equals a whole one."""
    from triage.rules.engine import memo as memo_module
    from triage.rules.engine.facts import FACTS
    from triage.rules.next.discriminate import RIVALS

    decoded: list[object] = []
    for codec in (memo_module.EVIDENCE, memo_module.CONFOUNDS, memo_module.BISECT, FACTS, RIVALS):
        monkeypatch.setattr(codec, "decode", lambda data, decode=codec.decode: decoded.append(data) or decode(data))
    units = _units(INV)
    mine = [n for n, reads in units[len(units) // 2:] if not reads]
    memo = Memo()
    work_ahead(INV, memo, mine)
    own = {name: memo.pieces[name][1] for name in memo.worked}
    assert len(own) >= len(mine) > 10
    memo.adopt_own()
    decoded.clear()
    got = evaluate(INV, memo)
    assert not any(d is data for d in decoded for data in own.values())  # none of its own decoded again
    assert sorted(memo.worked) == sorted(memo.pieces)  # each counted as worked out (new to the knowledge base)
    whole = Memo()
    assert outcome_of(got) == outcome_of(evaluate(INV, whole))
    assert memo.pieces == whole.pieces


def test_pieces_of_another_key_are_not_taken_and_taken_pieces_serve_once() -> None:
    key, pieces = _ahead(INV, [n for n, _ in _units(INV)])
    memo = Memo()
    memo.adopt("another key", pieces)
    evaluate(INV, memo)
    assert len(memo.worked) == len(memo.pieces) == len(pieces)  # all worked out again
    memo = Memo()
    memo.adopt(key, pieces)
    evaluate(INV, memo)
    assert sorted(memo.worked) == sorted(pieces)  # each taken in, and counted as worked out (new to the knowledge base)
    assert memo.pieces == pieces
    evaluate(INV, memo)  # the next evaluation starts without them (nothing stored: all worked out)
    assert memo.ahead == {} and len(memo.worked) == len(pieces)


@pytest.mark.parametrize("backwards", [False, True])
def test_each_process_lets_a_configs_runs_go_once_its_units_are_worked_out(backwards: bool) -> None:
    """Each process works its units out in turn (forwards, or from the last back), a config's
    facts, predictions and confounds next to each other: its runs are let go when the units
    move on to another config, never while one of its units is still to be worked out."""
    from triage.rules.engine.evaluate import letting_go, unit_config

    units = [n for n, _ in ahead_units(BUNDLED, Context(BUNDLED).source.configs())]
    order = units[::-1] if backwards else units
    forgotten: list[str] = []
    seen = []
    for name in letting_go(iter(order), forgotten.append):
        assert unit_config(name) not in forgotten, name  # none of its config's runs let go before it
        seen.append(name)
    assert seen == order
    configs = [c for c in dict.fromkeys(unit_config(n) for n in order) if c is not None]
    assert len(forgotten) == len(set(forgotten)) and set(forgotten) >= set(configs[:-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a forked process, on Linux")
@pytest.mark.parametrize("sent", ["whole", "short", "nothing"])
def test_a_message_is_taken_whole_or_not_at_all(sent: str) -> None:
    """What a forked process sends is its length, then as many bytes: a message that ends
    short (the process died while sending) is no message, even when it exits well."""
    from msgspec.msgpack import encode

    from triage.kb import parallel

    payload = encode(["key", {"f:a": [[], "x" * 300_000]}])  # larger than a pipe holds at once
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked process
        os.close(r)
        head = len(payload).to_bytes(parallel._LENGTH, "little")
        body = {"whole": payload, "short": payload[:1000], "nothing": b""}[sent]
        data = memoryview((head if sent != "nothing" else b"") + body)
        while data:
            data = data[os.write(w, data):]
        os._exit(0)
    os.close(w)
    got = parallel.Process(pid, r).collect()
    assert got == (["key", {"f:a": [[], "x" * 300_000]}] if sent == "whole" else None)


# -- the command, in a process of its own ------------------------------------

_SCRIPT = r"""
import json, os, sys
from triage.kb import parallel
seen = {}
if os.environ.get("HELPER_FAILS") == "raise":
    def _work(*a, **k):
        raise RuntimeError("the helper fails")
    parallel._work = _work
elif os.environ.get("HELPER_FAILS") == "die":
    def _work(*a, **k):
        os.kill(os.getpid(), 9)
    parallel._work = _work
if os.environ.get("HELPER_SLOW"):  # the helper sends what it worked out a moment late
    import time
    work = parallel._work
    def _work(*a, work=work, **k):
        out = work(*a, **k)
        time.sleep(float(os.environ["HELPER_SLOW"]))
        return out
    parallel._work = _work
from triage.kb import snapshot
def read(*a, read_=snapshot.read, **k):  # the stored view read
    seen["reads"] = seen.get("reads", 0) + 1
    return read_(*a, **k)
snapshot.read = read
def help(self, s, inv, memo, meanwhile=None, help_=parallel.Helper.help):
    def counted():
        seen["meanwhile"] = seen.get("meanwhile", 0) + 1
        meanwhile()
    help_(self, s, inv, memo, meanwhile=counted if meanwhile is not None else None)
    seen["adopted"] = self.adopted
    seen["ahead"] = len(memo.ahead)
    seen["helped"] = seen.get("helped", 0) + 1
parallel.Helper.help = help
if os.environ.get("WAIT_FOR_HELPER"):  # this process starts once the helper has taken a unit: no race
    import time
    take = parallel._Units.take
    def _take(self, order, who, *, bisects, take=take):
        deadline = time.monotonic() + 30
        while (who == parallel._MINE and time.monotonic() < deadline
               and all(self._flags[i] == parallel._FREE for i in range(len(self.units)))):
            time.sleep(0.005)
        return take(self, order, who, bisects=bisects)
    parallel._Units.take = _take
if os.environ.get("HELPER_ALONE"):  # this process takes no unit: the helper works out every one
    take_ = parallel._Units.take
    def _take(self, order, who, *, bisects, take=take_):
        return iter(()) if who == parallel._MINE else take(self, order, who, bisects=bisects)
    parallel._Units.take = _take
from triage.cli import main
try:
    main(sys.argv[1:])
finally:
    print("HELPER " + json.dumps(seen), file=sys.stderr)
"""


def _triage(db: str, rules: Path, env: dict[str, str], *args: str) -> tuple[str, dict]:
    """A triage command in a process of its own: what it printed, and what its helper did."""
    done = subprocess.run([sys.executable, "-c", _SCRIPT, "--db", db, "--rules", str(rules), *args],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stderr.rsplit("HELPER ", 1)[1])


def _import(db: str, rules: Path, env: dict[str, str], records: Path = EXAMPLE_RUNS, new: int = 33) -> dict:
    out, seen = _triage(db, rules, env, "import", str(records))
    assert f"{new} new" in out, out
    return seen


def _report(db: str, rules: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "triage", "--db", db, "--rules", str(rules), "report", "--pr", "30433",
                           "--format", "json"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _pieces(path: Path) -> dict:
    con = sqlite3.connect(path)
    try:
        return {name: (reads, data) for name, reads, data in con.execute("select name, reads, data from evaluationpiece")}
    finally:
        con.close()


needs_fork = pytest.mark.skipif(not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
                                reason="the helper runs on Linux with two CPUs or more")


def _same_evaluation(a_db: Path, b_db: Path, rules: Path) -> None:
    a, b = _pieces(a_db), _pieces(b_db)
    assert set(a) == set(b)
    # what each piece says is the same; what it read, the same runs (their write times differ)
    assert {n: x[1] for n, x in a.items() if n} == {n: x[1] for n, x in b.items() if n}
    reads = lambda p: {n: sorted((k, w) for k, w, _ in json.loads(x[0])) for n, x in p.items()}  # noqa: E731
    assert reads(a) == reads(b)
    assert _report(str(a_db), rules) == _report(str(b_db), rules)


@needs_fork
def test_an_import_evaluated_by_two_processes_stores_and_reports_the_same(rules_dir, tmp_path) -> None:
    """Into an investigation without runs too, the runs are written first, then evaluated
    by two processes that share the work out: a second process reading the file again
    beside the writes cost 10-25 % more CPU time for about the same wall time."""
    alone = _import(str(tmp_path / "alone.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"})
    assert alone == {}  # no helper
    helped = _import(str(tmp_path / "helped.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "1", "WAIT_FOR_HELPER": "1"})
    # the helper's pieces were taken in (on a small investigation it may take every unit
    # before this process asks for one: how many each works out is timing)
    assert helped["helped"] == 1 and helped["adopted"] > 0 and helped["ahead"] >= helped["adopted"]
    _same_evaluation(tmp_path / "alone.sqlite", tmp_path / "helped.sqlite", rules_dir)


@needs_fork
def test_a_helper_sends_the_long_texts_its_pieces_left_unread(rules_dir, tmp_path) -> None:
    """A run that decides nothing, imported into an evaluated investigation: the helper updates
    its config's facts from the stored ones, whose long texts it leaves unread (kept apart in
    the knowledge base).  It sends them read: what it worked out is taken in, and the
    evaluation is the one process's."""
    base = next(r for r in map(json.loads, EXAMPLE_RUNS.read_text().splitlines())
                if r["config"] == "kimik26-fp8-1k1k-1p1d")
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({**base, "run_id": "9001", "status": "timeout", "metrics": {},
                                "time": "2026-12-01T00:00:00Z"}) + "\n")
    for name in ("alone", "helped"):
        _import(str(tmp_path / f"{name}.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"})
    _import(str(tmp_path / "alone.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"}, more, new=1)
    seen = _import(str(tmp_path / "helped.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "1", "HELPER_ALONE": "1"},
                   more, new=1)
    assert seen["helped"] == 1 and seen["adopted"] > 0
    _same_evaluation(tmp_path / "alone.sqlite", tmp_path / "helped.sqlite", rules_dir)


@needs_fork
def test_a_full_report_evaluated_by_two_processes_stores_and_reports_the_same(rules_dir, tmp_path) -> None:
    """`report --full` of a large investigation forks a helper too (the threshold set low here)."""
    full = ("report", "--pr", "30433", "--format", "json", "--full")
    for name in ("alone", "helped"):
        _import(str(tmp_path / f"{name}.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"})
    alone, seen = _triage(str(tmp_path / "alone.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"}, *full)
    assert "helped" not in seen
    wait = {"TRIAGE_PARALLEL_RUNS": "33", "WAIT_FOR_HELPER": "1"}
    helped, seen = _triage(str(tmp_path / "helped.sqlite"), rules_dir, wait, *full)
    assert seen["adopted"] > 0 and seen["ahead"] >= seen["adopted"]  # (how many each works out is timing)
    assert helped == alone
    _same_evaluation(tmp_path / "alone.sqlite", tmp_path / "helped.sqlite", rules_dir)
    # again, each piece worked out by either process: every one found as stored (what it read
    # kept in one order), nothing written; the stored view, read while the helper finishes
    before = _pieces(tmp_path / "helped.sqlite")
    again, seen = _triage(str(tmp_path / "helped.sqlite"), rules_dir, {**wait, "HELPER_SLOW": "0.5"}, *full)
    assert again == alone and seen["meanwhile"] == 1 and seen["reads"] == 1
    assert _pieces(tmp_path / "helped.sqlite") == before
    # evidence the evaluation stores again (a row gone) changes the evidence version, which
    # the view read meanwhile was read with: read again
    con = sqlite3.connect(tmp_path / "helped.sqlite")
    with con:
        con.execute("DELETE FROM meta WHERE key LIKE 'evidence:%'")
        con.execute("DELETE FROM evidence WHERE pk = (SELECT max(pk) FROM evidence WHERE retired_at IS NULL)")
    con.close()
    again, seen = _triage(str(tmp_path / "helped.sqlite"), rules_dir, {**wait, "HELPER_SLOW": "0.5"}, *full)
    assert again == alone and seen["meanwhile"] == 1 and seen["reads"] == 2
    _, seen = _triage(str(tmp_path / "helped.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "34"}, *full)
    assert "helped" not in seen  # 33 runs: under the threshold, one process


@needs_fork
@pytest.mark.parametrize("case", ["twice", "another"])
def test_a_run_twice_or_runs_of_two_investigations_evaluated_by_two_processes(rules_dir, tmp_path, case) -> None:
    """A run twice in the file (the second updates the first: every piece worked out
    again) or runs of two investigations (each evaluated with a helper of its own):
    the evaluation of one process."""
    lines = EXAMPLE_RUNS.read_text().splitlines()
    if case == "twice":
        lines.append(lines[3])
    else:  # first, a run of the other bundled investigation
        lines.insert(0, (ROOT / "examples" / "e2e-walltime.runs.jsonl").read_text().splitlines()[0])
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    new = 33 if case == "twice" else 34
    _import(str(tmp_path / "alone.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"}, path, new)
    helped = _import(str(tmp_path / "helped.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "1", "WAIT_FOR_HELPER": "1"},
                     path, new)
    assert helped["helped"] == (1 if case == "twice" else 2) and helped["adopted"] > 0
    _same_evaluation(tmp_path / "alone.sqlite", tmp_path / "helped.sqlite", rules_dir)


@needs_fork
@pytest.mark.parametrize("fails", ["raise", "die"])
def test_a_helper_that_fails_costs_time_not_the_evaluation(rules_dir, tmp_path, fails) -> None:
    _import(str(tmp_path / "alone.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"})
    seen = _import(str(tmp_path / "helped.sqlite"), rules_dir, {"TRIAGE_PARALLEL_RUNS": "1", "HELPER_FAILS": fails})
    assert seen["adopted"] == 0 and seen["ahead"] > 0  # only this process's own pieces
    assert _report(str(tmp_path / "alone.sqlite"), rules_dir) == _report(str(tmp_path / "helped.sqlite"), rules_dir)


@needs_fork
@pytest.mark.postgres
def test_two_processes_on_postgresql(rules_dir, tmp_path) -> None:
    from tests.support.postgres import database

    with database() as alone_url, database() as helped_url:
        _import(alone_url, rules_dir, {"TRIAGE_PARALLEL_RUNS": "off"})
        helped = _import(helped_url, rules_dir, {"TRIAGE_PARALLEL_RUNS": "1", "WAIT_FOR_HELPER": "1"})
        assert helped["adopted"] > 0
        assert _report(alone_url, rules_dir) == _report(helped_url, rules_dir)


def test_the_threshold_and_its_switch() -> None:
    from triage.kb import parallel
    from triage.settings import Settings

    def at(value: str):
        return Settings.from_env({"TRIAGE_PARALLEL_RUNS": value}).parallel_runs

    if not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2:
        assert not parallel.worth_it(10**9, 1)
        return
    default = Settings.from_env({}).parallel_runs
    assert default == parallel.PARALLEL_RUNS
    assert parallel.worth_it(default, default) and not parallel.worth_it(default - 1, default)
    assert not parallel.worth_it(10**9, at("off")) and not parallel.worth_it(10**9, at(" OFF "))
    assert parallel.worth_it(5, at("5")) and not parallel.worth_it(4, at("5"))
    assert at("many") == at("0") == at("-3") == default  # not a positive number: the default
