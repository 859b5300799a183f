"""Command-line values taken without typer's pydantic validators (``triage.cli.coerce``):
every value taken here is what typer's own coercion makes of it, for every parameter of
every command; anything else is left to typer's, errors and all."""

from __future__ import annotations

import typer
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.cli import app, coerce


def _parameters() -> list[tuple]:
    """(command, parameter) for every parameter of every command and group of commands."""
    def walk(command):
        for sub in (getattr(command, "commands", None) or {}).values():
            yield from walk(sub)
        yield command

    root = typer.main.get_command(app)
    return [(c, p) for c in walk(root) for p in c.params if hasattr(p, "type_descriptor")]


PARAMETERS = _parameters()
# numbers written every way, texts of every kind, lists of either
NUMBERS = st.one_of(st.integers(-10**20, 10**20).map(str), st.integers().map(lambda n: f" {n}"),
                    st.integers().map(lambda n: f"+{n}"), st.integers().map(lambda n: f"0{abs(n)}"),
                    st.from_regex(r"-?[0-9_]{1,25}", fullmatch=True), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=True).map(str), st.booleans())
VALUES = st.one_of(st.text(), NUMBERS, st.lists(st.one_of(st.text(), NUMBERS), max_size=4).map(tuple))


def _typer(descriptor, param, value, ctx):
    """What typer's own coercion makes of ``value``: ("ok", it) or ("refused", its message)."""
    from typer._click.exceptions import BadParameter
    from typer._coercion import build_runtime_param

    try:
        return "ok", build_runtime_param(descriptor).coerce(value, param=param, ctx=ctx)
    except BadParameter as e:
        return "refused", e.message


def test_every_kind_of_parameter_triage_has_is_seen() -> None:
    kinds = {coerce.quick_for(p.type_descriptor).kind for _, p in PARAMETERS}
    assert kinds == {"text", "texts", "int", "other"}, kinds
    assert len(PARAMETERS) > 100


@settings(max_examples=400, deadline=None)
@given(index=st.integers(0, len(PARAMETERS) - 1), value=VALUES)
def test_a_value_taken_here_is_what_typer_makes_of_it(index, value) -> None:
    import typer._click as click

    command, param = PARAMETERS[index]
    descriptor = param.type_descriptor
    quick = coerce.quick_for(descriptor)
    multiple = param.multiple or param.nargs == -1
    got = quick.quick(value, multiple)
    if got is coerce._NOT_HERE:
        return  # left to typer's own
    ctx = click.Context(command)
    assert _typer(descriptor, param, value, ctx) == ("ok", got), (param.name, value)


def test_a_parameter_not_given_is_none_whatever_its_kind() -> None:
    import typer._click as click

    for command, param in PARAMETERS:
        ctx = click.Context(command)
        multiple = param.multiple or param.nargs == -1
        assert coerce.quick_for(param.type_descriptor).coerce(None, param, ctx) == (() if multiple else None)
        assert _typer(param.type_descriptor, param, None, ctx) == ("ok", () if multiple else None)


def test_a_value_refused_says_what_typer_says(cli) -> None:
    """Out of range, or not a number: typer's own coercion answers, in its words."""
    r = cli("report", "--pr", "0")
    assert r.code == 2 and "Invalid value for '--pr': Input should be greater than or equal to 1" in r.err, r.err
    r = cli("report", "--pr", "12x")
    assert r.code == 2 and "Input should be a valid integer, unable to parse string as an integer" in r.err, r.err
    r = cli("report", "--pr", "99999999999")
    assert r.code == 2 and "Input should be less than or equal to 2147483647" in r.err, r.err
