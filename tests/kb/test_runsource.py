"""The engine's runs from the knowledge base (``triage.kb.runsource.DbSource``): the
runs of a set of (run id, config) pairs are exactly those runs, on SQLite and
PostgreSQL, however many pairs and however many configs share a run id."""

from __future__ import annotations

import json
import random

from tests.support.postgres import url  # noqa: F401  (the knowledge base on SQLite, then on PostgreSQL)
from tests.support.statements import recorded


def _records(n_ids: int, configs: list[str]) -> list[dict]:
    """Matrix runs: most run ids have a run of several configs (as a nightly's jobs share one)."""
    rnd = random.Random(7)
    out = []
    for i in range(n_ids):
        run_id = f"m{i}" if i % 50 else f"m{i}/x"  # a few ids that hold a "/" themselves
        for config in rnd.sample(configs, rnd.randint(1, len(configs))):
            out.append({"investigation": "kimik26-disagg", "run_id": run_id, "config": config,
                        "status": rnd.choice(["passed", "failed"]),
                        "metrics": {"gsm8k": {"value": round(rnd.random(), 3), "n": 1319}}})
    return out


def _imported(cli, url: str, tmp_path, records: list[dict]) -> None:
    """``records`` written as JSON Lines, imported into the knowledge base at ``url``."""
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli("--db", url, "import", str(path)).code == 0


def test_the_runs_of_a_set_of_pairs_are_those_runs(cli, rules_dir, tmp_path, url) -> None:
    from triage.kb import store
    from triage.kb.investigations import run_records
    from triage.kb.runsource import DbSource

    configs = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256", "x/y", "c3", "c4"]
    records = _records(1500, configs)
    _imported(cli, url, tmp_path, records)
    rnd = random.Random(3)
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        every = run_records(s, iid)
        assert len(every) == len(records)
        source = DbSource(s, iid)
        for size in (0, 1, 40, 2500):  # 2,500: more pairs than one query asks for
            chosen = rnd.sample(every, size)
            pairs = [(r.run_id, r.config) for r in chosen]
            pairs += [("m1", "no-such-config"), ("no-such-run", configs[0])] + pairs[:5]  # none, and twice
            got = source.by_keys(pairs)
            assert [r.key for r in got] == [r.key for r in sorted(chosen, key=lambda r: r.seq)]
            # each run as the config's own read gives it (the same fields, the same order)
            mine = {r.key: r for c in configs for r in source.config(c)}
            assert all(r == mine[r.key] and r.seq == mine[r.key].seq for r in got)
            # what names each of them, without the rest: the same runs, in the same order
            assert DbSource(s, iid).refs_by_keys(pairs) == [(r.run_id, r.config, r.url) for r in got]
        # some configs read whole already (an evaluation worked their pieces out): their runs
        # are taken from what was read, the others' asked for; the same runs in the same order
        partly = DbSource(s, iid)
        partly.config(configs[0]), partly.config("x/y")
        chosen = rnd.sample(every, 300)
        pairs = [(r.run_id, r.config) for r in chosen] + [("no-such-run", configs[0]), ("m1", "no-such-config")]
        assert [(r.key, r.seq) for r in partly.by_keys(pairs)] == [(r.key, r.seq) for r in DbSource(s, iid).by_keys(pairs)]
        assert sorted(r.key for r in partly.by_keys(pairs)) == sorted(r.key for r in chosen)
        assert partly.refs_by_keys(pairs) == [(r.run_id, r.config, r.url) for r in partly.by_keys(pairs)]


def test_the_statement_written_by_hand_reads_what_sqlalchemy_would(cli, rules_dir, tmp_path, url,
                                                                   monkeypatch) -> None:
    """The statements that read runs (by pairs; an investigation's, a config's or a run id's)
    are written by hand for the drivers' parameter styles of SQLite and PostgreSQL; for any
    other, SQLAlchemy writes them: the same runs either way."""
    from triage.kb import investigations, runsource, store
    from triage.kb.investigations import run_records

    records = _records(300, ["kimik26-fp8-1k1k-1p1d", "x/y", "c3"])
    _imported(cli, url, tmp_path, records)
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        chosen = random.Random(5).sample(run_records(s, iid), 200)
        pairs = [(r.run_id, r.config) for r in chosen] + [("no-such-run", "c3")]
        by_hand = runsource.DbSource(s, iid).by_keys(pairs)
        refs_by_hand = sorted(runsource.DbSource(s, iid).refs_by_keys(pairs))
        reads = [{}, {"config": "x/y"}, {"config": "none"}, {"run_id": chosen[0].run_id},
                 {"config": chosen[1].config, "run_id": chosen[1].run_id}]
        read_by_hand = [run_records(s, iid, **read) for read in reads]
        monkeypatch.setattr(runsource, "MARKS", {})
        monkeypatch.setattr(investigations, "MARKS", {})
        written = runsource.DbSource(s, iid).by_keys(pairs)
        refs_written = sorted(runsource.DbSource(s, iid).refs_by_keys(pairs))
        read_written = [run_records(s, iid, **read) for read in reads]
    assert [(r, r.seq) for r in by_hand] == [(r, r.seq) for r in written]
    for by_hand_read, written_read in zip(read_by_hand, read_written):
        assert [(r, r.seq) for r in by_hand_read] == [(r, r.seq) for r in written_read]
    counts = [len(records), sum(r["config"] == "x/y" for r in records), 0,
              sum(r["run_id"] == chosen[0].run_id for r in records), 1]
    assert [len(x) for x in read_by_hand] == counts and counts[1] and counts[3]
    assert refs_by_hand == refs_written == sorted((r.run_id, r.config, r.url) for r in by_hand)
    assert sorted(r.key for r in by_hand) == sorted(r.key for r in chosen)


def test_configs_read_ahead_are_as_each_configs_own_read(cli, rules_dir, tmp_path, url) -> None:
    from triage.kb import store
    from triage.kb.runsource import DbSource

    configs = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256", "x/y", "c3", "c4"]
    _imported(cli, url, tmp_path, _records(300, configs))
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        ahead, alone = DbSource(s, iid), DbSource(s, iid)
        ahead.config("c4")  # read already: left as it is
        ahead.read_ahead(["x/y", "c3", "c4", "no-such-config", "kimik26-fp8-1k1k-1p1d"])
        for config in configs + ["no-such-config"]:
            got, want = ahead.config(config), alone.config(config)
            assert got == want and [r.seq for r in got] == [r.seq for r in want], config
        assert ahead.all() == alone.all()


def test_a_whole_evaluation_reads_each_configs_runs_once(cli, rules_dir, tmp_path, url) -> None:
    """``--full`` works every piece out again, each config's facts among them: the runs of
    every config are read once, by a statement of its own (written by hand: it costs no
    more than its runs); the evaluation is the one a config at a time gives."""
    from triage import views
    from triage.kb import store

    configs = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256", "x/y", "c3", "c4"]
    _imported(cli, url, tmp_path, _records(300, configs))
    with store.session(url) as s:
        inv = store.find_investigation(s, 30433, None)
        with recorded(s.get_bind()) as statements:
            _, whole, _ = views.evaluate(s, inv, full=True, keep=False)
        assert _configs_read(statements) == sorted(configs)
        # the stored pieces are not read either: every one is worked out again
        assert not [q for q, _ in statements if "FROM evaluationpiece" in q]
        _, stored, _ = views.evaluate(s, inv, keep=False)  # the stored pieces, each config's runs its own
        assert whole == stored


def test_the_configs_read_again_are_those_of_the_pieces_whose_runs_changed() -> None:
    from triage.rules.engine.memo import Memo, configs_again

    now = {"a": "2", "b": "1", "c": "1", "d": "5"}
    memo = Memo({
        "p:1": ([["c", "a", "1"], ["c", "b", "1"]], None),  # a changed: a and b are read again
        "p:2": ([["c", "c", "1"], ["c", "b", "1"]], None),  # neither changed
        "f:d": ([["c", "d", "4"]], None),  # one config alone: it may read only what was added
        "p:3": ([["v", "newest:c", "x"], ["c", "c", "1"]], None),  # nothing of its runs changed
    })
    assert configs_again(memo, lambda token: now[token[1]]) == ["a", "b"]


def test_a_first_evaluation_reads_each_configs_runs_once(cli, rules_dir, tmp_path, url) -> None:
    """An import into an investigation evaluated never before works every piece out, as
    ``--full`` does: each config's runs are read once."""
    configs = ["kimik26-fp8-1k1k-1p1d", "kimik26-fp8-1k1k-1p1d-page256", "x/y", "c3", "c4"]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records(300, configs)))
    with recorded() as statements:
        assert cli("--db", url, "import", str(path)).code == 0
    assert _configs_read(statements) == sorted(configs)


def _configs_read(statements: list[tuple[str, tuple]]) -> list[str]:
    """The configs whose runs these statements read whole (a config's own statement, or a
    list of configs'), each as often as it was read; no statement reads other runs but a
    run id's."""
    out = []
    for sql, params in statements:
        if not (sql.lstrip().startswith("SELECT") and "excluded_reason" in sql):
            continue  # not a read of runs
        where = sql.partition("WHERE")[2]
        if "run_id" in where:
            continue  # a run id's runs (a rule on a nightly's matrix), of any config
        assert "pk" not in where, sql  # not the newest runs, nor those since a key
        out += list(params[1:]) if "config" in where else ["<all>"]
    return sorted(out)


def test_the_runs_of_one_workflow_run_share_its_id_url_and_time(cli, rules_dir, tmp_path) -> None:
    """A nightly's matrix: runs of several configs under one run id, one URL, one time.
    Read back, they hold one text of each (a hundred thousand runs hold far fewer)."""
    from triage.kb import store
    from triage.kb.investigations import run_records

    url = f"sqlite:///{tmp_path / 'kb.sqlite'}"
    records = [{"investigation": "kimik26-disagg", "run_id": "777", "config": c, "status": "passed",
                "url": "https://github.com/o/r/actions/runs/777", "time": "2026-03-01T00:01:04Z",
                "metrics": {"gsm8k": {"value": 0.9, "n": 1319}}} for c in ("c1", "c2", "c3")]
    path = tmp_path / "matrix.jsonl"
    _imported(cli, url, tmp_path, records)
    with store.session(url) as s:
        runs = run_records(s, "kimik26-disagg")
    assert [r.config for r in runs] == ["c1", "c2", "c3"]
    assert runs[0].time == "2026-03-01T00:01:04+00:00"
    for r in runs[1:]:
        assert r.run_id is runs[0].run_id and r.url is runs[0].url and r.time is runs[0].time


def test_runs_let_go_are_read_again_and_the_evaluation_stored_is_the_same(seeded, cli, monkeypatch) -> None:
    """An import lets go of the runs its evaluation read (``release``): a whole evaluation
    is worked out a config at a time, each config's runs let go once read, and the rest
    before the evaluation is stored. What is stored, and what a later question of the
    source reads, are as without it."""
    from pathlib import Path

    from triage import views
    from triage.kb import store
    from triage.kb.runsource import DbSource

    forgotten: list[str] = []
    forget = DbSource.forget
    monkeypatch.setattr(DbSource, "forget", lambda self, config: (forgotten.append(config), forget(self, config))[1])
    url = f"sqlite:///{Path('kb.sqlite').resolve()}"
    reports = {}
    for release in (False, True):
        forgotten.clear()
        with store.session(url) as s:
            bundle, ev, _ = views.evaluate(s, store.find_investigation(s, 30433, None), full=True, release=release)
            source = bundle.source
            assert (source._by_config == {}) == release
            assert sorted(forgotten) == (sorted(source.configs()) if release else [])  # a base's too
            again = {c: [(r, r.seq) for r in source.config(c)] for c in source.configs()}
            fresh = DbSource(s, bundle.spec.id)
            assert again == {c: [(r, r.seq) for r in fresh.config(c)] for c in fresh.configs()}
        reports[release] = cli("--db", url, "report", "--pr", "30433", "--format", "json").out
    assert reports[True] == reports[False] and reports[True]


def test_the_newest_runs_are_read_by_their_keys(cli, rules_dir, tmp_path, url, monkeypatch) -> None:
    """The runs a view shows first: the newest by time (runs without one are the oldest, then
    as recorded), oldest first, on SQLite and PostgreSQL.  Each is read by its key: on
    SQLite, no statement walks the investigation's index to find them."""
    from triage.kb import runsource, store
    from triage.kb.investigations import run_records
    from triage.kb.runsource import DbSource

    rnd = random.Random(11)
    records = [{"investigation": "kimik26-disagg", "run_id": f"t{i}", "config": rnd.choice(["c1", "c2", "c3"]),
                "status": "passed", "metrics": {"gsm8k": {"value": 0.9, "n": 1319}},
                **({"time": f"2026-03-{1 + rnd.randrange(20):02d}T0{rnd.randrange(10)}:00:00Z"}
                   if rnd.random() < 0.7 else {})}
               for i in range(300)]
    _imported(cli, url, tmp_path, records)
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        every = sorted(run_records(s, iid), key=lambda r: (r.time is not None, r.time or "", r.seq))
        with recorded() as sent:
            for limit in (1, 50, 90, 300, 400):  # 90: more than the runs with a time
                assert [r.key for r in DbSource(s, iid).newest(limit)] == [r.key for r in every[-limit:]]
        with monkeypatch.context() as m:  # more keys than a statement takes (PostgreSQL takes 65,535 parameters)
            m.setattr(runsource, "KEYS_A_STATEMENT", 7)
            with recorded() as chunked:
                assert [r.key for r in DbSource(s, iid).newest(100)] == [r.key for r in every[-100:]]
            keys = [len(params) - 1 for sql, params in chunked if " pk IN (" in sql]  # less the investigation
            assert sum(keys) == 100 and max(keys) <= 7
        if s.get_bind().dialect.name == "sqlite":
            by_key = [(sql, params) for sql, params in sent if " pk IN (" in sql]
            assert by_key
            for sql, params in by_key:
                plan = " ".join(row[-1] for row in s.connection().exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}",
                                                                                  params))
                assert "PRIMARY KEY" in plan and "INDEX" not in plan, plan


def test_the_runs_of_several_configs_share_what_was_decoded(cli, rules_dir, tmp_path, url, monkeypatch) -> None:
    """A nightly's matrix: runs of several configs with one workflow run's id, URL, time and
    provenance.  Read a config at a time by one source, they share one provenance mapping and
    one time; with its tables bounded, a source shares less but reads the same runs."""
    from triage.kb import investigations, store
    from triage.kb.runsource import DbSource

    configs = ["kimik26-fp8-1k1k-1p1d", "c2", "c3"]
    records = [{"investigation": "kimik26-disagg", "run_id": f"n{i}", "config": config, "status": "failed",
                "url": f"https://github.com/o/r/actions/runs/{i}", "time": f"2026-03-0{1 + i}T01:15:09Z",
                "provenance": {"sha": f"abc{i}", "node": "n1"},
                "metrics": {"gsm8k": {"value": 0.9 - i / 100 - j / 1000, "n": 1319}}}
               for i in range(3) for j, config in enumerate(configs)]
    _imported(cli, url, tmp_path, records)
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        source = DbSource(s, iid)
        read = [source.config(c) for c in configs]
        for first, *others in zip(*read):  # the runs of one nightly, a config each
            assert all(r.provenance is first.provenance and r.time is first.time and r.url is first.url
                       and r.run_id is first.run_id for r in others)
            assert all(r.metrics is not first.metrics for r in others)  # values of their own
        assert [r.provenance for r in read[0]] == [{"sha": f"abc{i}", "node": "n1"} for i in range(3)]
        source.forget(configs[0])  # read again: with what the source holds decoded
        assert source.config(configs[1]) is read[1]
        assert source.config(configs[0])[0].provenance is read[1][0].provenance
        monkeypatch.setattr(investigations, "SHARED_MOST", 1)
        bounded = DbSource(s, iid)
        again = [bounded.config(c) for c in configs]
        assert again == read
        assert again[1][0].provenance is not again[2][0].provenance  # started again between the reads


def test_the_runs_recorded_since_are_found_by_key_or_by_the_configs_index_alike(cli, rules_dir, tmp_path,
                                                                                  url) -> None:
    """The runs a config gained since its runs had a fingerprint: on SQLite, found by their keys
    when fewer runs of all came after the fingerprint's largest key than the config holds (the
    config's index cannot range over keys), else through the index; the same runs and the same
    answers either way, and what a fingerprint still holds after runs of other configs."""
    from sqlalchemy import text

    from triage.kb import store
    from triage.kb.runsource import DbSource

    configs = ["kimik26-fp8-1k1k-1p1d", "x/y", "c3"]
    records = _records(400, configs)
    for r in records:
        r["provenance"] = {"image": "v1"}
    _imported(cli, url, tmp_path, records)
    with store.session(url) as s:
        iid = store.find_investigation(s, 30433, None).id
        was = DbSource(s, iid)
        fps = {c: was._fps[c] for c in configs}
        size = {c: was.size(c) for c in configs}
    later = [{"investigation": "kimik26-disagg", "run_id": f"n{i}", "config": configs[i % 2], "status": "passed",
              "metrics": {"gsm8k": {"value": 0.9, "n": 1319}}, "provenance": {"image": "v1", "node": f"n{i}"}}
             for i in range(5)]
    _imported(cli, url, tmp_path, later)
    answers = []
    with store.session(url) as s:
        sqlite = s.get_bind().dialect.name == "sqlite"
        for last in (None, 10**9):  # the largest key as it is (few runs after), then as if very many came after
            source = DbSource(s, iid)
            source._last = last
            got = {}
            for c in configs:
                top = int(fps[c].split(":")[1])
                where = " AND ".join(str(w.compile(compile_kwargs={"literal_binds": True}))
                                     for w in source._above(c, top))
                by_key = "||" in where
                assert by_key == (sqlite and last is None), where
                got[c] = ([r.key for r in source.appended(c, fps[c]) or []],
                          source.holds(("p", json.dumps([c, "node"])), f"{fps[c]}|x"),
                          source.holds(("p", json.dumps([c, "sha"])), f"{fps[c]}|x"))
            answers.append(got)
            if sqlite and last is None:
                plan = s.execute(text("EXPLAIN QUERY PLAN SELECT count(*) FROM run WHERE " + where)).all()
                assert "PRIMARY KEY" in plan[0][-1], plan
    assert answers[0] == answers[1]
    assert answers[0][configs[0]][0] == [f"n{i}/{configs[0]}" for i in (0, 2, 4)]
    # new runs that recorded a node: what read the runs with one is read again; none recorded a sha
    assert answers[0][configs[0]][1:] == (False, True)
    assert answers[0][configs[2]] == ([], True, True) and size[configs[2]]


def test_the_runs_with_some_provenance_keys_are_told_by_their_configs_runs(cli, rules_dir, tmp_path, url) -> None:
    """What a bisect reads, a config's runs that recorded some provenance keys, has the config's
    fingerprint, worked out without a statement of its own.  Runs added since without those keys
    leave it holding; one added with them, or a run of the config excluded, does not: what read
    them is worked out again."""
    from triage.kb import store
    from triage.kb.runsource import DbSource
    from triage.rules.engine.source import with_keys

    config = "kimik26-fp8-1k1k-1p1d"
    records = _records(60, [config, "c3"])
    for i, r in enumerate(records):
        r["provenance"] = {"image": "v1", "sha": f"s{i}"} if i % 3 else {"image": "v1"}
    _imported(cli, url, tmp_path, records)
    token = with_keys(config, ["sha"])

    def fingerprint() -> str:
        with store.session(url) as s:
            source = DbSource(s, store.find_investigation(s, 30433, None).id)
            with recorded() as sent:
                fp = source.fingerprint(token)
            assert sent == []  # no statement
            assert fp == source.fingerprint(("c", config)) + "|"
            return fp

    def holds(fp: str) -> bool:
        with store.session(url) as s:
            return DbSource(s, store.find_investigation(s, 30433, None).id).holds(token, fp)

    was = fingerprint()
    assert holds(was)
    add = ["add-run", "--pr", "30433", "--config", config, "--status", "passed", "--metric", "gsm8k=0.9/1319"]
    assert cli("--db", url, *add, "--run-id", "n1", "--set", "image=v2").code == 0
    assert holds(was)  # a run without a sha
    assert cli("--db", url, *add, "--run-id", "n2", "--set", "sha=abc").code == 0
    assert not holds(was)
    was = fingerprint()
    assert cli("--db", url, "runs", "exclude", "n1", "--pr", "30433", "--because", "a drained node").code == 0
    assert not holds(was)  # not added to: worked out again


def test_a_source_that_lets_runs_go_shares_what_it_decoded_as_one_that_keeps_them(cli, rules_dir,
                                                                                    tmp_path) -> None:
    """An import's evaluation reads a config's runs at a time and lets them go: a nightly's
    matrix shares its run id, URL, time and provenance across configs, each decoded once, as
    a source that keeps its runs does (what it holds decoded is bounded: see above)."""
    from triage.kb import store
    from triage.kb.runsource import DbSource

    records = [{"investigation": "kimik26-disagg", "run_id": "77", "config": config, "status": "passed",
                "url": "https://ci/77", "time": "2026-06-26T10:00:00Z", "provenance": {"sha": "abc"},
                "metrics": {"gsm8k": {"value": 0.9, "n": 1319}}} for config in ("c1", "c2")]
    _imported(cli, f"sqlite:///{tmp_path / 'kb.sqlite'}", tmp_path, records)
    with store.session(f"sqlite:///{tmp_path / 'kb.sqlite'}") as s:
        source = DbSource(s, store.find_investigation(s, 30433, None).id)
        (one,) = source.config("c1")
        source.forget("c1")  # let go, as an import's evaluation does before the next config
        (two,) = source.config("c2")
        assert one.run_id is two.run_id and one.url is two.url and one.time is two.time
        assert one.provenance is two.provenance

def test_runs_added_to_many_configs_are_read_once_for_every_config(cli, rules_dir, tmp_path, url) -> None:
    """After a nightly's import over many configs, what was added to each config is told by the
    runs recorded since the stored pieces, read in one statement for all: not by a statement
    of each config's that goes through every run recorded since.  The evaluation is a whole
    one's."""
    from triage import views
    from triage.ingest import importer
    from triage.kb import runsource, store

    configs = [f"c{i}" for i in range(20)]
    _imported(cli, url, tmp_path, _records(100, configs))
    assert cli("--db", url, "report", "--pr", "30433", "--format", "json").code == 0  # the pieces stored
    later = [dict(r, run_id=f"n{i}", time=f"2027-01-01T00:00:{i % 60:02d}Z")
             for i, r in enumerate(_records(3, configs))]
    # and a run written again: its config's runs are not only added to (told by its own statement)
    later.append(dict(_records(100, configs)[5], status="failed", metrics={"gsm8k": {"value": 0.01, "n": 1319}}))
    path = tmp_path / "nightly.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in later))
    with store.session(url) as s:
        importer.import_file(s, str(path))  # written, not evaluated yet
        inv = store.find_investigation(s, 30433, None)
        with recorded(s.get_bind()) as statements:
            _, ev, _ = views.evaluate(s, inv, keep=False)
        _, whole, _ = views.evaluate(s, inv, full=True, keep=False)
    assert ev == whole
    changed = {r["config"] for r in later[:-1]}
    assert len(changed) > runsource.RECENT_AFTER
    since = [sql for sql, _ in statements if "pk >" in sql]
    assert len(since) <= 2 * (runsource.RECENT_AFTER - 1) + 2 < 2 * len(changed), since
