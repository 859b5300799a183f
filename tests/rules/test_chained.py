"""An item's runs kept as parts, pools whole (triage.rules.engine.chained): merged as
``dict.fromkeys`` over the parts one after the other would merge them, read as the
tuple they stand for, and stored naming the pools' pieces."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.rules.engine.chained import Chained, merged
from triage.rules.engine.keys import SEP, Keys, configs_of, meets, named, splits, tails
from triage.rules.engine.memo import EVIDENCE
from triage.rules.engine.records import EvidenceItem

part = st.text(alphabet="ab/", min_size=1, max_size=3)
key = st.builds(lambda i, c: f"{i}/{c}", part, part)


@st.composite
def pools(draw) -> list[tuple[str, Keys]]:
    """A few configs' pools, each its run ids ending with the config (as a pool piece keeps them)."""
    out = []
    for config in draw(st.lists(part, max_size=3, unique=True)):
        ids = draw(st.lists(part, min_size=1, max_size=5, unique=True))
        out.append((f"{config}\x1facc", Keys.suffixed(SEP.join(ids), f"/{config}", len(ids))))
    return out


@st.composite
def comparisons(draw) -> list[tuple]:
    """Own keys and pools, in any order, a pool named more than once (one object each time)."""
    named_pools = draw(pools())
    parts: list[tuple] = []
    for _ in range(draw(st.integers(1, 5))):
        if named_pools and draw(st.booleans()):
            parts.append(draw(st.sampled_from(named_pools)))
        else:
            parts.append((None, draw(st.lists(key, max_size=4))))
    return parts


def _flat(parts: list[tuple]) -> list[str]:
    return list(dict.fromkeys(k for _, keys in parts for k in keys))


@settings(max_examples=400, deadline=None)
@given(comparisons(), comparisons())
def test_merged_runs_are_each_key_once_in_order(first, second) -> None:
    """Two comparisons merged, and their merge merged with a third: what ``dict.fromkeys``
    over the keys says, the pools kept whole where no key can be named twice."""
    one = merged(first)
    assert list(one) == _flat(first)
    both = merged([(None, one), (None, merged(second))])
    assert list(both) == _flat(first + second)
    if isinstance(both, Chained):
        assert all(p in [k for _, k in first + second] for p, n in zip(both.parts, both.names) if n)


@settings(max_examples=400, deadline=None)
@given(comparisons(), st.integers(-3, 3), st.integers(0, 70), key, st.sets(part, max_size=3),
       st.sets(key, max_size=3))
def test_chained_keys_read_as_their_tuple(parts, i, stop, probe, configs, wanted) -> None:
    keys = merged(parts)
    if not isinstance(keys, Chained):
        return
    flat = tuple(_flat(parts))
    assert len(keys) == len(flat) and bool(keys) == bool(flat)
    assert keys[:stop] == flat[:stop] and list(keys.passing()) == list(flat)
    if -len(flat) <= i < len(flat):
        assert keys[i] == flat[i]
    for k in (probe, *flat[:3]):
        assert (k in keys) == (k in flat)
        assert keys.index_of(k) == (flat.index(k) if k in flat else None)
    assert tails(keys) == tails(list(flat)) and configs_of(keys) == configs_of(list(flat))
    assert meets(keys, wanted | set(flat[-1:])) == bool((wanted | set(flat[-1:])) & set(flat))
    if any(c in [of for _, of in splits(k)] for k in flat for c in configs):
        assert keys.may_name(configs)  # False only when no key can be of them
    assert keys.joined(",") == ",".join(flat) and keys.text == SEP.join(flat)
    assert keys == flat and keys == Keys(SEP.join(flat)) and named(keys, 2) == named(list(flat), 2)
    assert list(keys.appended(["x/y"])) == [*flat, "x/y"]
    assert list(keys.inserted(1, "x/y")) == [*flat[:1], "x/y", *flat[1:]]


@settings(max_examples=200, deadline=None)
@given(comparisons())
def test_an_item_stores_a_pool_by_its_piece(parts) -> None:
    runs = merged(parts)
    item = EvidenceItem("h", "predicts:r", "supports", "because", runs if isinstance(runs, Keys) else tuple(runs))
    rows = EVIDENCE.encode([item])
    pieces = {name: keys for name, keys in parts if name}
    back = EVIDENCE.decode(rows)
    EVIDENCE.resolve(back, lambda what: pieces[what])
    assert back == [item] and back[0].key == item.key and list(back[0].runs) == list(runs)
    if isinstance(runs, Chained):  # the pool's keys are not written again: its piece is named
        assert all(isinstance(p, list) for p, n in zip(rows[0][4], runs.names) if n)
        assert all(p is pieces[n] for p, n in zip(back[0].runs.parts, back[0].runs.names) if n)


def _reference_key(item: EvidenceItem, flat: tuple) -> str:
    """An item's key as its definition says: its runs joined by ",", or past 20 their count
    and the digest of that text."""
    import hashlib

    runs = ",".join(flat)
    if len(flat) > 20:
        runs = f"{len(flat)} runs {hashlib.sha256(runs.encode()).hexdigest()[:32]}"
    return "|".join((item.hypothesis, item.rule, item.verdict, runs, item.reason))


@st.composite
def long_comparisons(draw) -> list[tuple]:
    """As :func:`comparisons`, the pools long enough that an item names more than 20 runs."""
    out = []
    for config in draw(st.lists(part, min_size=1, max_size=3, unique=True)):
        ids = [f"{i}" for i in range(draw(st.integers(1, 30)))]
        out.append((f"{config}\x1facc", Keys.suffixed(SEP.join(ids), f"/{config}", len(ids))))
    parts: list[tuple] = []
    for _ in range(draw(st.integers(1, 4))):
        parts.append(draw(st.sampled_from(out)) if draw(st.booleans())
                     else (None, draw(st.lists(key, max_size=4))))
    return parts


@settings(max_examples=200, deadline=None)
@given(st.one_of(comparisons(), long_comparisons()))
def test_an_items_key_is_its_runs_digest_however_they_are_kept(parts) -> None:
    """Worked out part by part (a pool's text encoded once for the items that name it), the key
    is what joining every run and hashing the text gives: the same for the runs as a tuple, as
    one text, as parts, and read back."""
    runs = merged(parts)
    flat = tuple(runs)
    ways = [runs, flat, Keys(SEP.join(flat), len(flat))]
    pieces = {name: keys for name, keys in parts if name}
    for runs_kept in ways:
        item = EvidenceItem("h", "predicts:r", "supports", "because", runs_kept)
        assert item.key == _reference_key(item, flat)
        back = EVIDENCE.decode(EVIDENCE.encode([item]))
        EVIDENCE.resolve(back, lambda what: pieces[what])
        back[0].__dict__.pop("key", None)  # worked out again from the runs read back
        assert back[0].key == item.key
