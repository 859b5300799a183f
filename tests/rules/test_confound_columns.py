"""Confounds kept as columns (triage.rules.engine.records.Confounds) answer what the list of
confounds they stand for answers: the same confounds, in order; the runs and recipes; the
warnings' groups; each run's reading note; and through a stored piece, the same again."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.rules.engine.memo import CONFOUNDS
from triage.rules.engine.records import Confound, Confounds
from triage.rules.engine.summary import NAMED

NAMES = st.text(alphabet="ab/", min_size=1, max_size=3)
VALUES = st.text(alphabet="xyz", max_size=2)


@st.composite
def confounds(draw) -> list[Confound]:
    """A few recipes' confounds, a recipe's one after another (as each recipe's piece gives them)."""
    out: list[Confound] = []
    for recipe in draw(st.lists(NAMES, max_size=3, unique=True)):
        kinds = draw(st.lists(st.tuples(st.sampled_from(["image", "sha", "node"]), st.none() | VALUES,
                                        st.none() | NAMES, st.none() | VALUES), min_size=1, max_size=3))
        for run_id, kind, value in draw(st.lists(st.tuples(NAMES, st.sampled_from(kinds), VALUES), max_size=8)):
            key, base_value, base_run, declared = kind
            # a recipe's runs are runs of its config, but a key may hold another "/"
            run = draw(st.sampled_from([f"{run_id}/{recipe}", f"{run_id}/{recipe}/x", "x/" + recipe]))
            out.append(Confound(run, recipe, key, value, base_value, base_run, declared))
    return out


def _by_recipe(items: list[Confound]) -> list[list[Confound]]:
    parts: dict[str, list[Confound]] = {}
    for c in items:
        parts.setdefault(c.recipe, []).append(c)
    return list(parts.values())


def _columns(items: list[Confound]) -> Confounds:
    """As an evaluation holds them: each recipe's piece read back, joined."""
    return Confounds.joined([CONFOUNDS.decode(CONFOUNDS.encode(part)) for part in _by_recipe(items)])


def _groups(items: list[Confound]) -> list[tuple]:
    """The warnings' groups as a list of confounds makes them: by the run's config and kind."""
    groups: dict[tuple, tuple[list[str], dict[str, None], Confound]] = {}
    for c in items:
        run_id, _, config = c.run.partition("/")
        group = groups.setdefault((config, c.recipe, c.key, c.base_value, c.base_run, c.declared), ([], {}, c))
        group[0].append(run_id)
        group[1].setdefault(c.value, None)
    return [(key[0], first, len(ids), ids[:NAMED], list(values)) for key, (ids, values, first) in groups.items()]


def _notes(items: list[Confound]) -> dict[str, str]:
    keys: dict[str, list[str]] = {}
    for c in items:
        keys.setdefault(c.run, []).append(c.key)
    return {run: f"confounded ({', '.join(dict.fromkeys(ks))})" for run, ks in keys.items()}


@settings(max_examples=300, deadline=None)
@given(items=confounds(), asked=st.lists(NAMES, max_size=4))
def test_columns_say_what_the_list_says(items, asked) -> None:
    items = [c for part in _by_recipe(items) for c in part]  # a recipe's one after another
    got = _columns(items)
    assert list(got) == items and got == items and len(got) == len(items) and bool(got) == bool(items)
    assert got[:2] == tuple(items[:2]) and (not items or got[-1] == items[-1])
    assert got.runs() == {c.run for c in items}
    assert got.recipes() == {r: {c.key for c in items if c.recipe == r} for r in {c.recipe for c in items}}
    assert list(got.groups()) == _groups(items)
    notes, expected = got.notes(), _notes(items)
    assert {k: notes.get(k) for k in [*expected, *asked]} == {k: expected.get(k) for k in [*expected, *asked]}
    assert dict(notes) == expected and len(notes) == len(expected)


@settings(max_examples=200, deadline=None)
@given(items=confounds())
def test_a_piece_of_columns_is_stored_as_the_list_would_be(items) -> None:
    """The same stored piece from the list or from its columns, read back the same."""
    for part in _by_recipe(items):
        stored = CONFOUNDS.encode(part)
        assert CONFOUNDS.encode(Confounds.of(part)) == stored
        assert CONFOUNDS.encode(CONFOUNDS.decode(stored)) == stored
        assert list(CONFOUNDS.decode(stored)) == part
        # what a view's digest reads of them: the same, whether the values were split or not
        assert CONFOUNDS.decode(stored).plain() == Confounds.of(part).plain()
    assert Confounds() == [] and not Confounds() and list(Confounds.joined([])) == []
    # read back, the confounds of every recipe, as one: the same as the list's
    back = Confounds.joined([CONFOUNDS.decode(CONFOUNDS.encode(part)) for part in _by_recipe(items)])
    assert back.plain() == Confounds.joined([Confounds.of(part) for part in _by_recipe(items)]).plain()


def test_a_value_with_a_separator_is_kept_row_by_row() -> None:
    part = [Confound("1/r", "r", "note", "a\x00b", "c", "9/base", None)]
    stored = CONFOUNDS.encode(part)
    assert "rows" in stored and list(CONFOUNDS.decode(stored)) == part
    assert CONFOUNDS.decode(stored).plain() == Confounds.of(part).plain()
