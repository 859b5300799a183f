"""A whole evaluation (``report --full``) of what was evaluated already leaves the stored
pieces and view as they are: nothing is deleted and written again.  What differs from
them, and only that, is written: a piece stored otherwise, one missing, one of no use
any more, a view of other runs."""

from __future__ import annotations

from typing import Any

from tests.conftest import EXAMPLE_RUNS
from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)
from tests.support.statements import recorded


def _stored(url: str) -> tuple[dict, Any]:
    """The investigation's stored pieces (name -> reads, data) and its stored view."""
    from sqlalchemy import select

    from triage.kb import store, tables

    t, v = tables.EvaluationPiece, tables.Snapshot
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        pieces = {name: (reads, bytes(data)) for name, reads, data
                  in s.execute(select(t.c.name, t.c.reads, t.c.data).where(t.c.investigation_id == iid))}
        view = s.execute(select(v.c.fingerprint, v.c.data, v.c.others, v.c.similar)
                         .where(v.c.investigation_id == iid)).first()
    return pieces, tuple(view) if view is not None else None


def _writes(cli: Any, *args: str) -> tuple[Any, list[str]]:
    """Run ``triage ARGS``; the statements it sent that write pieces or views."""
    with recorded() as sent:
        result = cli(*args)
    return result, [sql for sql, _ in sent if sql.lstrip().upper().startswith(("INSERT", "DELETE", "UPDATE"))
                    and ("EVALUATIONPIECE" in sql.upper() or "SNAPSHOT" in sql.upper())]


def test_a_whole_evaluation_of_what_was_evaluated_writes_no_piece_and_no_view(cli, rules_dir, url) -> None:
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    first = cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    before = _stored(url)
    again, writes = _writes(cli, "--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    assert again.code == 0 and again.out == first.out
    assert writes == []
    assert _stored(url) == before


def test_what_differs_from_the_stored_evaluation_is_written_again(cli, rules_dir, url) -> None:
    """A piece stored otherwise (of another size, or of the same) is written again, a missing
    one written, one of no use deleted, and a view stored otherwise replaced: afterwards the
    knowledge base holds what a first whole evaluation stores."""
    from sqlalchemy import delete, insert, update

    from triage.kb import store, tables

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    report = cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    pieces, view = _stored(url)
    changed, alike, missing = sorted(n for n in pieces if n)[:3]
    t, v = tables.EvaluationPiece, tables.Snapshot
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        s.execute(update(t).where(t.c.investigation_id == iid, t.c.name == changed).values(data=b"\xc0"))
        # of the same size, but not the same
        same_size = pieces[alike][1][:-1] + bytes([pieces[alike][1][-1] ^ 1])
        s.execute(update(t).where(t.c.investigation_id == iid, t.c.name == alike).values(data=same_size))
        s.execute(delete(t).where(t.c.investigation_id == iid, t.c.name == missing))
        s.execute(insert(t).values(investigation_id=iid, name="r:no-such-rule", reads="[]", data=b"\xc0"))
        s.execute(update(v).where(v.c.investigation_id == iid).values(data='{"model": {}, "untested": []}'))
    again, writes = _writes(cli, "--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    assert again.code == 0 and again.out == report.out
    assert writes  # what differed, written
    assert _stored(url) == (pieces, view)
    # and the view written again is the one an unchanged knowledge base reports
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json").out == report.out


def test_a_configs_long_texts_are_kept_apart_and_read_when_asked_for(cli, rules_dir, url) -> None:
    """A config's facts keep their long texts in rows of their own: its distinct provenances
    and its groups of repeats in one, every run's key and every valid run's in another.  The
    stored pieces are read without them, and a piece gives a group when something looks into
    one of its texts.  Such a row stored otherwise, or missing, is written again by a whole
    evaluation."""
    from sqlalchemy import delete, update

    from triage.kb import apart
    from triage.kb import pieces as kept
    from triage.kb import store, tables
    from triage.rules.engine.facts import APART
    from triage.rules.engine.keys import SEP

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    report = cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    stored, view = _stored(url)
    facts = sorted(n for n in stored if n.startswith("f:"))
    assert facts and sorted(n for n in stored if n.startswith(kept.APART_ROW)) == sorted(
        apart.apart_name(n, g) for n in facts for g in range(2))
    t = tables.EvaluationPiece
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        memo = kept.load(s, iid, "")
        assert not [n for n in memo.stored if n.startswith(kept.APART_ROW)]
        for name in facts:
            row = memo.stored[name][1]
            provenances, keys = ([row[p]() for p in places] for places in APART["f:"])  # read when asked for
            assert all(isinstance(x, str) and x.startswith("[") for x in provenances)
            assert [len(x.split(SEP)) if x else 0 for x in keys] == row[-4:-2]  # ids, as many as it counts
        first, second = (kept.APART_ROW + n for n in facts[:2])
        data = stored[first][1]
        s.execute(update(t).where(t.c.investigation_id == iid, t.c.name == first)
                  .values(data=data[:-1] + bytes([data[-1] ^ 1])))
        s.execute(delete(t).where(t.c.investigation_id == iid, t.c.name == second))
    again, writes = _writes(cli, "--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    assert again.code == 0 and again.out == report.out
    assert writes and _stored(url) == (stored, view)


def test_an_evaluation_that_derived_the_evidence_stored_reads_none_of_it(cli, rules_dir, url) -> None:
    """The stored evidence is named by a digest with the evidence version: the same evidence
    derived again is found so without reading the thousands of items kept."""
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    first = cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    with recorded() as sent:
        again = cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    assert again.code == 0 and again.out == first.out
    read = [sql for sql, _ in sent if "FROM EVIDENCE " in sql.upper() + " " and "RETIRED_AT" in sql.upper()]
    assert read == []


def test_evidence_written_by_another_writer_is_stored_again(cli, rules_dir, url) -> None:
    """A writer that changes the stored evidence without naming it (an older triage) changes
    the evidence version: the next evaluation goes through the items kept and mends them."""
    from sqlalchemy import select, update

    from triage.kb import store, tables
    from triage.kb.evaluations import EVIDENCE_VERSION, _put_meta

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    report = cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full")
    t = tables.Evidence

    def active() -> set:
        with store.session(url) as s:
            return set(s.execute(select(t.c.key).where(t.c.retired_at.is_(None))).scalars())

    before = active()
    assert before
    with store.session(url) as s:
        s.execute(update(t).values(retired_at=t.c.created_at))
        _put_meta(s, EVIDENCE_VERSION, "another writer")
    assert active() == set()
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full").out == report.out
    assert active() == before


def _apart(url: str, config: str, group: int = 0) -> tuple:
    """The stored row of a group of a config's long texts (what it read, its data): its
    provenances and groups of repeats, or (``group=1``) its keys."""
    from sqlalchemy import select

    from triage.kb import apart, store, tables

    t = tables.EvaluationPiece
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        return s.execute(select(t.c.reads, t.c.data).where(t.c.investigation_id == iid,
                                                        t.c.name == apart.apart_name(f"f:{config}", group))).one()


def test_a_run_that_decides_nothing_leaves_its_configs_long_texts_unread_and_unwritten(cli, rules_dir, url) -> None:
    """An add-run of a run that decides nothing changes none of its config's distinct
    provenances and groups of repeats: their row (at a million runs, a wide base's 9 MB)
    is neither read nor written again.  A valid run with a provenance of its own writes it
    again, with that provenance; a repeat of it does not.  Each time the report is a whole
    evaluation's."""
    base = "kimik26-fp8-1k1k-1p1d"
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json").code == 0
    before = _apart(url, base)
    with recorded() as sent:
        added = cli("--db", url, "add-run", "--pr", "30433", "--run-id", "9001", "--config", base,
                    "--status", "timeout", "--set", "sha=feedbee")
    assert added.code == 0, added.out
    assert not [sql for sql, params in sent if f"~f:{base}" in repr(params)]  # not read, not written
    assert _apart(url, base) == before
    report = cli("--db", url, "report", "--pr", "30433", "--format", "json")
    assert report.out == cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full").out
    added = cli("--db", url, "add-run", "--pr", "30433", "--run-id", "9002", "--config", base,
                "--status", "passed", "--metric", "gsm8k=0.935/1319", "--set", "sha=feedbee")
    assert added.code == 0, added.out
    after = _apart(url, base)
    assert after != before and b"feedbee" in bytes(after[1])
    report = cli("--db", url, "report", "--pr", "30433", "--format", "json")
    assert report.out == cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full").out
    # a repeat of that run (its provenance, a value its group of repeats holds already): its
    # place is the newest valid run's, its group as it was: the row is not written again
    with recorded() as sent:
        added = cli("--db", url, "add-run", "--pr", "30433", "--run-id", "9003", "--config", base,
                    "--status", "passed", "--metric", "gsm8k=0.935/1319", "--set", "sha=feedbee")
    assert added.code == 0, added.out
    assert not [sql for sql, params in sent if f"~f:{base}" in repr(params)
                and sql.lstrip().upper().startswith(("INSERT", "DELETE", "UPDATE"))]
    assert _apart(url, base) == after
    report = cli("--db", url, "report", "--pr", "30433", "--format", "json")
    assert report.out == cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full").out


def test_a_run_of_no_point_of_a_bisect_leaves_its_stored_state_as_it_was(cli, rules_dir, monkeypatch) -> None:
    """A run that records a bisect's keys, added to the config the bisect reads: the stored
    bisect is kept as it was when the run is of none of its points (a nightly of a new build,
    past the range), and worked out again when it is of one.  Either way the evaluation is the
    whole one's."""
    from tests.conftest import EXAMPLE_RUNS
    from triage import views
    from triage.kb import store
    from triage.rules.engine import bisect

    e2e = EXAMPLE_RUNS.parent / "e2e-walltime.runs.jsonl"
    assert cli("import", str(e2e)).code == 0
    assert cli("report", "--pr", "128", "--format", "json").code == 0  # its evaluation stored
    worked: list[str] = []
    real = bisect.evaluate_bisect
    monkeypatch.setattr(bisect, "evaluate_bisect", lambda b, ctx: worked.append(b.id) or real(b, ctx))
    for i, (nightly, wall, again) in enumerate([("06-20", "1400", []), ("06-12", "1700", ["nightly"]),
                                                ("06-21", "1900", [])]):
        worked.clear()
        r = cli("add-run", "--pr", "128", "--run-id", f"n{i}", "--config", "e2e", "--status", "passed",
                "--metric", f"wall_s={wall}", "--set", f"nightly={nightly}", "--set", "torch=2.9")
        assert r.code == 0, r.err
        assert worked == again, nightly
        with store.session("sqlite:///kb.sqlite") as s:
            inv = store.find_investigation(s, 128, None)
            _, kept, _ = views.evaluate(s, inv, keep=False)
            _, whole, _ = views.evaluate(s, inv, full=True, keep=False)
            assert kept == whole  # in the session: what is kept apart is read in it


def test_what_a_run_appends_to_its_configs_long_texts_is_written_alone(cli, rules_dir, url, monkeypatch) -> None:
    """A run of a new build appends its provenance and its group of repeats to its config's
    long texts, and its key to its keys: what it appended to each group is written in a row of
    its own, the rows of the texts written whole stand (at a million runs, a wide base's 9 MB
    and 2 MB).  The next such run writes those rows again, with both; a whole evaluation writes
    the texts whole and drops them.  Each time the evaluation is a whole one's."""
    from triage.kb import apart

    monkeypatch.setattr(apart, "TAIL_FROM", 0)  # the bundled base's texts are short
    monkeypatch.setattr(apart, "TAIL_SHARE", 1.0)
    base = "kimik26-fp8-1k1k-1p1d"
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json").code == 0
    whole = [_apart(url, base, g) for g in range(2)]

    def add(run_id: str, sha: str, value: str = "0.935") -> list:
        with recorded() as sent:
            added = cli("--db", url, "add-run", "--pr", "30433", "--run-id", run_id, "--config", base,
                        "--status", "passed", "--metric", f"gsm8k={value}/1319", "--set", f"sha={sha}")
        assert added.code == 0, added.out
        assert _as_whole(url)
        return [repr(params) for sql, params in sent if sql.lstrip().upper().startswith("INSERT")]

    def tail(group: int) -> list:
        from msgspec.msgpack import decode

        stored, _ = _stored(url)
        row = stored.get(apart.tail_name(f"f:{base}", group))
        return decode(row[1]) if row is not None else []

    written = add("9101", "feedbee")
    assert not [p for p in written for g in range(2) if f"'{apart.apart_name(f'f:{base}', g)}'" in p]  # not written
    assert [_apart(url, base, g) for g in range(2)] == whole
    assert tail(0) and all("feedbee" in more for _, more, _ in tail(0))
    assert tail(1) and all(more.endswith("9101") for _, more, _ in tail(1))
    add("9102", "cafef00d")
    assert [_apart(url, base, g) for g in range(2)] == whole
    assert all("feedbee" in more and "cafef00d" in more for _, more, _ in tail(0))
    assert all("9101" in more and more.endswith("9102") for _, more, _ in tail(1))
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full").code == 0
    assert tail(0) == tail(1) == [] and b"cafef00d" in bytes(_apart(url, base)[1])  # written whole again
    assert b"9102" in bytes(_apart(url, base, 1)[1])


def test_a_run_without_a_time_among_timed_ones_writes_where_its_key_goes(cli, rules_dir, url, monkeypatch) -> None:
    """A run recorded without a time goes among the oldest of its config's keys, before the
    runs that have one: its key changes the keys' text near its start, not at its end.  What
    changed is written alone, as one stretch of each text replaced (at a million runs, 22
    bytes beside a wide base's 2 MB of keys), and read back into the keys a whole evaluation
    works out."""
    from triage.kb import apart

    monkeypatch.setattr(apart, "TAIL_FROM", 0)
    base = "kimik26-fp8-1k1k-1p1d"
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0

    def add(run_id: str, *when: str) -> list:
        with recorded() as sent:
            added = cli("--db", url, "add-run", "--pr", "30433", "--run-id", run_id, "--config", base,
                        "--status", "passed", "--metric", "gsm8k=0.935/1319", *when)
        assert added.code == 0, added.out
        return [repr(params) for sql, params in sent if sql.lstrip().upper().startswith("INSERT")]

    for run_id, when in (("9301", "2026-01-01T00:00:00Z"), ("9302", "2026-01-02T00:00:00Z")):
        add(run_id, "--time", when)
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json", "--full").code == 0  # keys written whole
    keys = bytes(_apart(url, base, 1)[1])
    assert keys.index(b"9301") < keys.index(b"9302")
    written = add("9303")
    assert f"'{apart.apart_name(f'f:{base}', 1)}'" not in "".join(written)  # the keys written whole stand
    stored, _ = _stored(url)
    from msgspec.msgpack import decode

    changes = decode(stored[apart.tail_name(f"f:{base}", 1)][1])
    assert changes and all(len(put) <= len("9303") + 1 for _, put, _ in changes)  # a key and its separator
    assert all(resume <= text.index("9301") + 4 < len(text) for (_, _, resume), text in zip(changes, decode(keys)))
    now = [apart.spliced(text, *change) for text, change in zip(decode(keys), changes)]
    assert all(text.index("9303") < text.index("9301") for text in now)
    assert _as_whole(url)


def test_long_texts_that_grew_past_their_share_are_written_whole(cli, rules_dir, url, monkeypatch) -> None:
    """What was appended is written alone while it is a small share of the texts: past it, the
    texts are written whole again, and the row of what was appended goes."""
    from triage.kb import apart

    monkeypatch.setattr(apart, "TAIL_FROM", 0)
    base = "kimik26-fp8-1k1k-1p1d"
    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json").code == 0
    whole = _apart(url, base)
    monkeypatch.setattr(apart, "TAIL_SHARE", 0.0)
    assert cli("--db", url, "add-run", "--pr", "30433", "--run-id", "9201", "--config", base, "--status", "passed",
               "--metric", "gsm8k=0.935/1319", "--set", "sha=feedbee").code == 0
    stored, _ = _stored(url)
    assert apart.tail_name(f"f:{base}", 0) not in stored and _apart(url, base) != whole
    assert _as_whole(url)


def _as_whole(url: str) -> bool:
    """Whether the evaluation from the stored pieces is a whole one's (neither stored), and each
    config's long texts as read back are those a whole evaluation works out."""
    from triage import views
    from triage.kb import pieces, snapshot, store
    from triage.kb.runsource import DbSource
    from triage.rules.engine.evaluate import evaluate
    from triage.rules.engine.facts import APART
    from triage.rules.engine.memo import Memo

    with store.session(url) as s:
        inv = store.find_investigation(s, 30433, None)
        _, kept, _ = views.evaluate(s, inv, keep=False)
        _, whole, _ = views.evaluate(s, inv, full=True, keep=False)
        places = [p for group in APART["f:"] for p in group]
        read = {n: [row[p]() for p in places]
                for n, (_, row) in pieces.load(s, inv.id, snapshot.code_stamp()).stored.items() if n.startswith("f:")}
        bundle, fresh = store.load_bundle(s, inv, runs=False), Memo()
        bundle.source = DbSource(s, inv.id)
        evaluate(bundle, fresh)
        same = kept == whole  # in the session: what is kept apart is read in it
    worked = {n: [row[p] for p in places] for n, (_, row) in fresh.pieces.items() if n.startswith("f:")}
    return same and read == worked


def test_an_add_run_reads_the_keys_of_the_configs_it_looks_into(cli, tmp_path) -> None:
    """A config's keys are kept apart with their count and digest: an add-run reads those of
    the config it adds to, and of the configs whose runs its evaluation goes through, not
    every config's (at a million wide runs, 24 MB of 33).  Its report is a whole evaluation's."""
    import sqlite3

    from bench import wide
    from triage.kb import apart

    rules, records = wide.write(tmp_path, 300, 1, 0.05)
    kb = str(tmp_path / "kb.sqlite")
    common = ("--db", kb, "--rules", str(rules))
    assert cli(*common, "import", str(records)).code == 0
    assert cli(*common, "report", "--pr", "40001", "--format", "json").code == 0
    with sqlite3.connect(kb) as db:
        keys = {n for (n,) in db.execute("SELECT name FROM evaluationpiece") if n.startswith(apart.apart_name("", 1))}
    with recorded() as sent:
        added = cli(*common, "add-run", "--pr", "40001", "--run-id", "9301", "--config", "w1-base",
                    "--status", "passed", "--metric", "acc=0.93/1000", "--set", "sha=feedbee")
    assert added.code == 0, added.err
    asked = [repr(params) for sql, params in sent if sql.lstrip().upper().startswith("SELECT")]
    read = {n for n in keys if any(f"'{n}'" in params for params in asked)}
    assert apart.apart_name("f:w1-base", 1) in read and len(read) < len(keys) / 2, (sorted(read), len(keys))
    kept = cli(*common, "report", "--pr", "40001", "--format", "json").out
    with sqlite3.connect(kb) as source, sqlite3.connect(tmp_path / "whole.sqlite") as db:
        source.backup(db)
    assert kept == cli("--db", str(tmp_path / "whole.sqlite"), "--rules", str(rules), "report", "--pr", "40001",
                       "--format", "json", "--full").out


def test_a_config_s_long_texts_are_read_in_the_session_that_read_its_pieces(cli, rules_dir, url) -> None:
    """A stored piece's long texts kept apart are read when first looked into, in the session
    that read the piece: after it ended, the rows may hold another evaluation's texts.  Looked
    into then, they say so (a fault of the caller), rather than read whatever stands there."""
    import pytest

    from triage.errors import RuntimeFailure
    from triage.kb import pieces, snapshot, store

    assert cli("--db", url, "import", str(EXAMPLE_RUNS)).code == 0
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json").code == 0
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        memo = pieces.load(s, iid, snapshot.code_stamp())
        facts = [row for name, (_, row) in memo.stored.items() if name.startswith("f:")]
        assert facts and all(callable(row[1]) for row in facts)
        inside = facts[0][1]()  # read in the session: the config's keys
        assert inside
    with pytest.raises(RuntimeFailure, match="after the session"):
        facts[1][1]()
    assert facts[0][1]() == inside  # read already: kept
