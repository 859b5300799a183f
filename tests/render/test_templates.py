"""Rule-file templates (because:) render within output and time limits."""

from __future__ import annotations

import time

import pytest

from triage.errors import InputError
from triage.sandbox import render_string

VALUES = {"value": "0.500", "gate": "0.900", "ref": {}, "runs": []}


def test_ordinary_templates_render():
    assert render_string("c1 scored {{ value }} vs {{ gate }}", VALUES) == "c1 scored 0.500 vs 0.900"
    assert render_string("{{ '%.1f'|format(0.25) }} {{ 'ab' * 3 }} {{ value|upper }}", VALUES) == "0.2 ababab 0.500"
    assert render_string("{{ nope }}", VALUES).endswith("[template error: 'nope' is undefined]")


@pytest.mark.parametrize("template, why", [
    ("{{ 'x'*3000000000 }}", "would make a value of 3,000,000,000 characters"),
    ("{{ [1]*100000000 }}", "would make a value of 100,000,000 characters"),
    ("{{ 'x'|center(1000000000) }}", "a call with the number 1,000,000,000 is refused"),
    ("{{ 'x'.ljust(1000000000) }}", "a call with the number 1,000,000,000 is refused"),
    ("{{ '%999999999d'|format(1) }}", "a format width over the output limit is refused"),
    ("{{ '{:>999999999}'.format(1) }}", "a format width over the output limit is refused"),
    ("{{ 2**100000000 }}", "** 100000000 is too large a power"),
    ("{% for a in range(99999) %}{{ 'xxxxxxxxxx' }}{% endfor %}", "renders more than 100,000 characters"),
    # the bypasses of #30: each would allocate hundreds of MB to GB in C
    ("{{ '%0999999999d' % 1 }}", "a format width over the output limit is refused"),
    ("{{ '%*d' % (999999999, 1) }}", "a format width over the output limit is refused"),
    ("{{ ('x'*99999).join(['a']*99999) }}", "would make a value of 9,999,"),
    ("{{ range(99999)|join('x'*99999) }}", "would make a value of 9,999,"),
    ("{{ '{0:{1}}'.format('x', '999999999') }}", "a format width over the output limit is refused"),
    ("{{ ('ab'*99).replace('', 'x'*99999) }}", "would make a value of 19,"),
    ("{{ ('\t'*9999).expandtabs(20000) }}", "would make a value of 199,"),
    ("{{ ('a\n'*9999)|indent('x'*99999) }}", "would make a value of 1,000,009,998 characters"),
    ("{% set ns = namespace(s='x') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
     "would make a value of 131,072 characters"),
    ("{% for i in range(99999) %}{% set x = 'x'*99999 %}{% endfor %}", "characters of values in all"),
    ("{{ ((2**64)**64)**64 }}", "would make a number of more than 12,288 bits"),
])
def test_a_template_past_a_limit_is_an_input_error(template, why):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(InputError) as e:
            render_string(template, VALUES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert why in e.value.message and "TRIAGE_MAX_TEMPLATE_OUTPUT" in e.value.message
    assert peak < 64 * 2**20, f"{peak:,} bytes: refused after it ran, not before"  # the value was never made


@pytest.mark.parametrize("template", [
    "{% set d = {} %}{% for i in range(99999) %}{{ d.update({i: 'x'*99999}) }}{% endfor %}",
    "{% set l = [] %}{% for i in range(99999) %}{{ l.append('x'*99999) }}{% endfor %}",
    "{{ lipsum(99999) }}",
])
def test_templates_cannot_grow_lists_and_dicts_or_call_lipsum(template):
    assert "[template error:" in render_string(template, VALUES)


def test_a_template_past_the_time_limit_is_stopped_in_any_thread(limits_from):
    """The server renders in worker threads, where no timer signal arrives."""
    from concurrent.futures import ThreadPoolExecutor

    limits_from(TRIAGE_MAX_TEMPLATE_SECONDS="0.3")
    slow = "{% for a in range(99999) %}{% for b in range(99999) %}{% for c in range(99999) %}{% endfor %}{% endfor %}{% endfor %}"
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(render_string, slow, VALUES) for _ in range(2)]
        for f in futures:
            with pytest.raises(InputError, match="took more than 0.3 s"):
                f.result(timeout=30)


def test_a_template_past_the_time_limit_is_stopped(limits_from):
    limits_from(TRIAGE_MAX_TEMPLATE_SECONDS="0.3")
    start = time.perf_counter()
    with pytest.raises(InputError) as e:
        render_string("{% for a in range(99999) %}{% for b in range(99999) %}{% endfor %}{% endfor %}", VALUES)
    assert "took more than 0.3 s" in e.value.message
    assert time.perf_counter() - start < 2.0
