"""Keys: run keys kept as one text behave as the tuple of those keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from triage.rules.engine.keys import SEP, Invalid, InvalidRuns, Keys, meets
from triage.rules.engine.memo import CONFOUNDS  # imported here: its first import is slower than the examples' deadline
from triage.rules.engine.records import Confound

key = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), min_size=1, max_size=8)


@given(st.lists(key, max_size=8), key, st.integers(-10, 10), st.integers(0, 70))
def test_keys_read_as_their_tuple(keys: list, probe: str, i: int, stop: int) -> None:
    for made in (Keys.of(keys), Keys("\x00".join(keys))):  # made from a list, or read back as text
        t = tuple(keys)
        assert len(made) == len(t) and tuple(made) == t and made == t and made == list(keys)
        assert hash(made) == hash(t)
        assert (probe in made) == (probe in t) and all(k in Keys("\x00".join(keys)) for k in t)
        assert made[:stop] == t[:stop] and made[1:3] == t[1:3]
        if t:
            assert made[0] == t[0] and made[-1] == t[-1] and made[i % len(t)] == t[i % len(t)]
        assert made.joined(",") == ",".join(t)
        once = Keys("\x00".join(keys))
        assert tuple(once.passing()) == t and once._items is None  # one pass, nothing kept
        assert [*made] + ["x"] == [*t, "x"]
        assert tuple(made.passing()) == t  # split already, or not


def test_a_key_inside_another_is_not_contained() -> None:
    made = Keys("\x00".join(["ab/c", "b/cd"]))
    assert "b/c" not in made and "ab/c" in made and "b/cd" in made and "ab" not in made


part = st.text(alphabet="ab/", min_size=1, max_size=4)


@given(st.lists(st.tuples(part, part), max_size=6), st.sets(part, max_size=3))
def test_keys_that_may_name_a_config_include_every_one_that_does(runs: list, configs: set) -> None:
    """``may_name`` is False only when no key is a run of one of the configs, however
    a key splits into run id and config (either may hold a "/")."""
    keys = [f"{run_id}/{config}" for run_id, config in runs]
    names = any(k[at + 1:] in configs for k in keys for at in range(len(k)) if k[at] == "/")
    assert Keys("\x00".join(keys)).may_name(configs) == names
    if any(config in configs for _, config in runs):
        assert names
    assert Keys.of(keys).may_name(configs)  # split already: says it may


def _config_keys(ids: list, config: str) -> list:
    return [f"{i}/{config}" for i in ids]


@given(st.lists(key, max_size=8), key, key, st.integers(-10, 10), st.integers(0, 70), st.sets(part, max_size=3))
def test_a_configs_keys_kept_as_ids_read_as_their_tuple(ids: list, config: str, probe: str, i: int, stop: int,
                                                       configs: set) -> None:
    """A config's keys read back as ids and the config they all end with behave as the
    keys joined whole, before and after the text is made, and say no more than it."""
    keys = _config_keys(ids, config)
    t, whole = tuple(keys), Keys("\x00".join(keys))
    for touch in (False, True):
        made = Keys.suffixed("\x00".join(ids), f"/{config}")
        if touch:
            assert made.text == whole.text
        assert tuple(made.passing()) == t
        assert len(made) == len(t) and bool(made) == bool(t) and made[:stop] == t[:stop]
        assert made == whole and whole == made and made == t and hash(made) == hash(t)
        for probe_key in (probe, f"{probe}/{config}", *keys[:2]):
            assert (probe_key in made) == (probe_key in t)
        if t:
            assert made[0] == t[0] and made[-1] == t[-1] and made[i % len(t)] == t[i % len(t)]
        assert made.ids(f"/{config}") == "\x00".join(ids) and made.joined(",") == ",".join(t)
        assert made.may_name(configs) or not whole.may_name(configs)  # never says less than the text
    assert tuple(Keys.suffixed("\x00".join(ids), f"/{config}")) == t


@given(st.lists(key, max_size=8), key, key, st.integers(0, 70))
def test_a_configs_keys_read_by_a_function_read_as_their_tuple_and_only_when_looked_into(
        ids: list, config: str, probe: str, stop: int) -> None:
    """A config's keys kept apart, given as the function that reads their ids, with their
    count, digest and newest: how many there are, whether there are any, what they are (as a
    digest) and the newest are told without reading them; anything else reads them once, and then they
    behave as the keys joined whole."""
    from triage.rules.engine.keys import text_digest

    keys = _config_keys(ids, config)
    t, reads = tuple(keys), []
    digest = text_digest(t)

    def read() -> str:
        reads.append(1)
        return "\x00".join(ids)

    made = Keys.suffixed(read, f"/{config}", len(t), digest, t[-1] if t else None)
    assert len(made) == len(t) and bool(made) == bool(t) and made.digest() == digest
    assert not t or made[-1] == t[-1]
    assert made.stored_ids(f"/{config}") is read or not t  # stored again as it was: unread
    assert reads == []
    assert made == Keys("\x00".join(keys)) and made[:stop] == t[:stop] and (probe in made) == (probe in t)
    assert tuple(made) == t and made.ids(f"/{config}") == "\x00".join(ids) and len(reads) <= 1
    assert text_digest(Keys.suffixed("\x00".join(ids), f"/{config}")) == digest == text_digest(list(t))
    with pytest.raises(TypeError):  # without their count, whether there are any would read them
        Keys.suffixed(read, f"/{config}")


@given(st.lists(part, max_size=6), part, st.sets(part, max_size=3))
def test_a_configs_keys_kept_as_ids_may_name_every_config_they_do(ids: list, config: str, configs: set) -> None:
    keys = _config_keys(ids, config)
    names = any(k[at + 1:] in configs for k in keys for at in range(len(k)) if k[at] == "/")
    assert Keys.suffixed("\x00".join(ids), f"/{config}").may_name(configs) or not names


def test_a_config_ending_another_may_be_named_through_a_run_id() -> None:
    """Run "x/a" of config "b" is key "x/a/b": a run of config "a/b" for all the text says."""
    assert Keys.suffixed("x/a", "/b").may_name({"a/b"}) and Keys.suffixed("x/a", "/a/b").may_name({"b"})
    assert not Keys.suffixed("x/a", "/b").may_name({"c", "ab"})


@given(st.lists(key, max_size=5), st.lists(key, max_size=3), key, st.booleans())
def test_keys_appended_read_as_the_tuple_they_extend(ids: list, more: list, config: str, other: bool) -> None:
    """Keys appended to a config's keys, of that config (kept as ids) or of another
    (the whole text), read as the tuple with them at the end."""
    keys = _config_keys(ids, config)
    added = _config_keys(more, "x" + config if other else config)
    for base in (Keys.suffixed("\x00".join(ids), f"/{config}"), Keys("\x00".join(keys)), Keys.of(keys)):
        grown = base.appended(added)
        assert tuple(grown) == tuple(keys + added) and len(grown) == len(keys) + len(added)
        if not other:
            assert grown.ids(f"/{config}") == "\x00".join(ids + more)


@given(st.lists(key, max_size=6), key, key, st.booleans(), st.integers(0, 8))
def test_a_key_inserted_reads_as_the_tuple_it_goes_into(ids: list, new: str, config: str, other: bool,
                                                        pos: int) -> None:
    keys = _config_keys(ids, config)
    added = f"{new}/{'x' + config if other else config}"
    pos = min(pos, len(keys))
    want = tuple(keys[:pos] + [added] + keys[pos:])
    for base in (Keys.suffixed("\x00".join(ids), f"/{config}"), Keys("\x00".join(keys)), Keys.of(keys)):
        grown = base.inserted(pos, added)
        assert grown is not None and tuple(grown) == want and len(grown) == len(want) and grown == want
    assert Keys.of(["k"] * 300).inserted(257, "x") is None  # further in: the caller splits the keys


@given(st.lists(st.tuples(st.integers(0, 50), key, key), max_size=4),
       st.lists(st.tuples(st.integers(51, 99), key, key), max_size=3))
def test_invalid_runs_appended_read_as_the_list_they_extend(old: list, new: list) -> None:
    grown = Invalid.of(old).appended(new)
    assert list(grown) == old + new and len(grown) == len(old) + len(new)
    stored = Invalid(",".join(str(o) for o, _, _ in old), Keys.of(k for _, k, _ in old), Keys.of(w for _, _, w in old))
    assert list(stored.appended(new)) == old + new


@given(st.lists(st.lists(st.tuples(st.integers(0, 50), key, key), max_size=4), max_size=4))
def test_invalid_runs_merge_in_the_order_recorded(parts: list) -> None:
    stored = [Invalid(",".join(str(o) for o, _, _ in p), Keys.of(k for _, k, _ in p), Keys.of(w for _, _, w in p))
              for p in parts]
    assert [list(s) for s in stored] == parts
    merged = InvalidRuns(stored)
    want = {k: w for _, k, w in sorted((x for p in parts for x in p), key=lambda x: x[0])}
    assert list(merged.items()) == list(want.items()) and len(merged) == len(want)
    assert all(merged.get(k) == w and k in merged for k, w in want.items())


@given(st.lists(st.lists(st.tuples(st.integers(0, 50), st.sampled_from(["a/b/c", "b/c", "x/c", "a/b"]) | key, key),
                         max_size=4, unique_by=lambda x: x[1]), max_size=4),
       st.lists(key, max_size=3), st.booleans())
def test_invalid_runs_looked_up_before_they_are_merged_say_what_the_merge_says(parts: list, probes: list,
                                                                              stored: bool) -> None:
    """A few lookups search each config's texts instead of merging them (a config holds
    a key once; one key in two configs' runs is the one recorded last)."""
    def made(p: list) -> Any:
        return Invalid(",".join(str(o) for o, _, _ in p), Keys.of(k for _, k, _ in p), Keys.of(w for _, _, w in p)) \
            if stored else tuple(p)

    want = {k: w for _, k, w in sorted((x for p in parts for x in p), key=lambda x: x[0])}
    merged = InvalidRuns([made(p) for p in parts])
    for k in [*want, *probes]:
        assert merged.get(k) == want.get(k) and (k in merged) == (k in want)
    assert merged.get("\x00") is None and 3 not in merged and dict(merged.items()) == want


@given(st.dictionaries(st.sampled_from(["c", "b/c", "x", "a/b"]) | key,
                       st.lists(st.tuples(st.integers(0, 50), st.sampled_from(["a", "a/b", "1"]) | key, key),
                                max_size=4, unique_by=lambda x: x[1]), max_size=4),
       st.lists(key, max_size=3))
def test_invalid_runs_by_config_say_what_the_merge_says(parts: dict, probes: list) -> None:
    """Given by config, a key is looked up among the runs of the configs it can be of
    (``run_id/config``, either holding a "/"): what the merge of every config says.  Two runs
    never stand at one place in the order recorded: which of two runs of one key (``a`` of
    ``b/c``, ``a/b`` of ``c``) was recorded last is always told."""
    orders = [o for p in parts.values() for o, _, _ in p]
    assume(len(set(orders)) == len(orders))
    by_config = {config: Invalid.of((o, f"{i}/{config}", w) for o, i, w in p) for config, p in parts.items()}
    want = {k: w for _, k, w in sorted((x for p in by_config.values() for x in p), key=lambda x: x[0])}
    merged = InvalidRuns(by_config)
    for k in [*want, *probes, *(f"{p}/{c}" for p in probes for c in parts)]:
        assert merged.get(k) == want.get(k) and (k in merged) == (k in want)
    assert dict(merged.items()) == want


@given(st.lists(st.tuples(st.sampled_from(["1", "a/b", "x"]) | key, st.sampled_from(["c", "b/c", "d/e/f"]) | key),
                max_size=6))
def test_the_configs_keys_may_be_of_are_each_split_of_each_key_once(pairs: list) -> None:
    from triage.rules.engine.keys import configs_of, splits

    keys = [f"{run_id}/{config}" for run_id, config in pairs]
    want = list(dict.fromkeys(c for k in keys for _, c in splits(k)))
    got = configs_of(Keys.of(keys))
    assert sorted(got) == sorted(want) and len(got) == len(set(got))
    assert all(config in got for _, config in pairs)
    # read back from its text (split by one search) or kept as ids: the same, in the same order
    assert configs_of(Keys(SEP.join(keys))) == got
    if pairs and len({config for _, config in pairs}) == 1 and pairs[0][1]:
        config = pairs[0][1]
        assert configs_of(Keys.suffixed(SEP.join(f"{run_id}/" for run_id, _ in pairs), config)) == got


@given(st.lists(st.text(alphabet="ab/", min_size=1, max_size=5), max_size=8))
def test_the_texts_after_the_first_slash_are_each_keys_once_in_order(keys: list) -> None:
    """Keys without a "/" among them too: the text then says them key by key."""
    from triage.rules.engine.keys import tails

    want = list(dict.fromkeys(k.partition("/")[2] for k in keys))
    assert tails(keys) == want and tails(Keys(SEP.join(keys))) == want


@given(st.lists(st.text(alphabet="ab/", min_size=1, max_size=5), min_size=1, max_size=8),
       st.text(alphabet="ab/", min_size=1, max_size=5))
def test_keys_kept_as_ids_and_a_suffix_have_the_tails_of_their_keys(ids: list, suffix: str) -> None:
    """Keys that all end with one text, kept as ids or joined: one tail when no id holds a "/", else each key's."""
    from triage.rules.engine.keys import tails

    keys = [i + suffix for i in ids]
    assert tails(Keys.suffixed(SEP.join(ids), suffix, len(ids))) == tails(keys)
    assert tails(Keys(SEP.join(keys))) == tails(keys)  # the same keys joined: one tail when each has one "/"


def test_a_key_is_found_at_its_place_among_keys_kept_whole_or_as_ids() -> None:
    whole = Keys("\x00".join(["1/c", "21/c", "2/c", "x/2/c"]))
    lazy = Keys.suffixed("\x00".join(["1", "21", "2", "x/2"]), "/c")
    for keys in (whole, lazy):
        assert [keys.index_of(k) for k in ("1/c", "21/c", "2/c", "x/2/c")] == [0, 1, 2, 3]
        assert keys.index_of("2") is None and keys.index_of("1/d") is None and keys.index_of(None) is None


def test_a_lazy_list_reads_as_its_tuple_and_keeps_its_text() -> None:
    from triage.rules.engine.lazy import Lazy

    made = Lazy('[{"sha": "1", "image": "a"}, {"image": "b"}]', lambda row: tuple(row.items()))
    assert made.text.startswith("[{")  # nothing decoded until looked into
    want = ((("sha", "1"), ("image", "a")), (("image", "b"),))
    assert tuple(made) == want and made == want and len(made) == 2 and want[1] in made
    assert made[0] == want[0] and list(made)[-1] == want[-1]


text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


@given(st.lists(st.tuples(key, st.sampled_from(["image", "sha"]), text, st.one_of(st.none(), text),
                          st.one_of(st.none(), key), st.one_of(st.none(), text)), max_size=8))
def test_confounds_read_back_as_they_were_stored(rows: list) -> None:
    """A recipe's confounds, stored as columns (or row by row when a value holds a NUL)."""
    items = [Confound(run, "recipe-a", k, value, base_value, base_run, declared)
             for run, k, value, base_value, base_run, declared in rows]
    assert CONFOUNDS.decode(json.loads(json.dumps(CONFOUNDS.encode(items)))) == items


@given(st.lists(key, max_size=30), st.sampled_from(["rules_out", "inconclusive"]), st.booleans())
def test_evidence_read_back_keeps_the_key_it_was_stored_with(runs: list, verdict: str, flag: bool) -> None:
    """A stored item carries its key (a digest of its runs past 20): read back, and
    flagged after, it is the key the item works out afresh."""
    from triage.rules.engine.evidence import _flagged
    from triage.rules.engine.memo import EVIDENCE
    from triage.rules.engine.records import EvidenceItem

    item = EvidenceItem("h1", "r1", verdict, "because", tuple(runs), ("invalid-run",) if flag else ())
    back = EVIDENCE.decode(json.loads(json.dumps(EVIDENCE.encode([item]))))[0]
    fresh = EvidenceItem("h1", "r1", verdict, "because", tuple(runs), back.flags)
    assert back == item and "key" in back.__dict__ and back.key == fresh.key
    assert _flagged(back, "confounded").key == fresh.key
    # a piece stored before items carried their key reads back all the same
    assert EVIDENCE.decode([EVIDENCE.encode([item])[0][:8]])[0].key == fresh.key


@given(st.lists(key, max_size=150), st.sets(key, max_size=6), key, st.integers(0, 150), st.integers(0, 3))
def test_keys_meet_a_set_when_one_of_them_is_in_it(keys: list, wanted: set, config: str, at: int, form: int) -> None:
    """Whether any key is wanted, whichever form the keys are kept in, wherever the wanted one is
    (among the first few or far after them)."""
    if keys and wanted and at < len(keys) and form % 2:
        wanted = wanted | {keys[at]}
    ids = [k.replace("/", "") for k in keys]
    made = [Keys.of(keys), Keys("\x00".join(keys)), Keys.suffixed("\x00".join(ids), f"/{config}"),
            list(keys)][form]
    expected = not wanted.isdisjoint(made)  # through the tuple they read as
    assert meets(made, wanted) == expected
    assert meets(made, wanted | {k for k in made}) == bool(made)


def test_keys_meet_a_set_through_a_key_far_after_the_first_few() -> None:
    ids = [str(i) for i in range(300)]
    for made in (Keys.suffixed("\x00".join(ids), "/c"), Keys("\x00".join(f"{i}/c" for i in ids))):
        assert meets(made, {"299/c"}) and meets(made, {"64/c"}) and meets(made, {"0/c"})
        assert not meets(made, {"300/c", "29/", "299"}) and made._items is None  # nothing kept


@given(st.lists(key, max_size=12), st.integers(0, 5))
def test_named_keys_are_the_first_then_one_of_each_further_config(keys: list, head: int) -> None:
    """The first ``head`` keys, then the first key of each further text after a key's first
    "/", in order: the same off the joined text as off the list."""
    from triage.rules.engine.keys import named

    expected = list(keys[:head])
    tails = {k.partition("/")[2] for k in expected}
    for k in keys[head:]:
        if k.partition("/")[2] not in tails:
            tails.add(k.partition("/")[2])
            expected.append(k)
    assert named(keys, head) == expected
    if "" not in keys:  # an empty key joins to no key at all
        assert named(Keys(SEP.join(keys)), head) == expected
        assert named(Keys.suffixed(SEP.join(k + "x" for k in keys), "/c"), head) == named(
            [k + "x/c" for k in keys], head)


@given(st.lists(st.sampled_from(["1", "21", "x/2"]), max_size=6), st.sampled_from(["/c", "/b/c"]),
       st.lists(st.sampled_from(["1/c", "21/b/c", "x/2/c", "2/c", "1/d", "1"]), max_size=4))
def test_whether_any_of_some_keys_is_here_is_asked_of_each_that_can_be(ids: list, suffix: str, asked: list) -> None:
    keys = [i + suffix for i in ids]
    for made in (Keys(SEP.join(keys)), Keys.suffixed(SEP.join(ids), suffix, len(ids))):
        assert made.any_of(asked) == any(k in keys for k in asked)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\u00e9 ", max_size=3), max_size=6))
def test_texts_kept_joined_read_as_the_list(texts: list) -> None:
    """Texts kept joined (a recipe's confounds' values) are the list they were joined from,
    the empty text included, split only when looked into."""
    from triage.rules.engine.keys import Joined, joined_text

    text = joined_text(texts)
    assert text == SEP.join(texts)
    kept = Joined(text, len(texts))
    assert len(kept) == len(texts) and kept._items is None and joined_text(kept) is text
    assert list(kept) == texts and [kept[i] for i in range(len(texts))] == texts
    assert joined_text(texts + ["a\x00b"]) is None
