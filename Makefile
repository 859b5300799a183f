# The two commands of the README. Both create .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-quick bench-check mutation stats-deep serve bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

$(VENV)/.installed-mutation: $(VENV)/.installed-test
	$(BIN)/python -m pip install -q -e '.[test,mutation]'
	touch $@

# Install, load the bundled investigations (sgl-project/sglang#30433, and a
# lower-is-better wall-time one, one with several models) into ./kb.sqlite, and
# print the first's report.
demo: $(VENV)/.installed-test
	$(BIN)/triage import examples/kimik26-disagg.runs.jsonl
	$(BIN)/triage import examples/e2e-walltime.runs.jsonl
	$(BIN)/triage import examples/compile-bump.runs.jsonl
	$(BIN)/triage report --pr 30433 --format text

# Install, load the bundled investigation into ./kb.sqlite, and serve the
# dashboard at http://127.0.0.1:8080/ (no webhook secret: loopback only).
serve: $(VENV)/.installed-test
	$(BIN)/triage import examples/kimik26-disagg.runs.jsonl
	$(BIN)/triage serve --insecure-no-signature

# Install with the test extras and run the whole suite on every core (PostgreSQL
# tests use the local server; .ci/run starts it when it is down; a file's tests on one
# core, so that its fixtures are made once), then name the
# ten slowest tests.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n auto --dist loadfile --durations=10

# The same without the tests marked slow (5 s or more each): feedback in about half the time.
test-quick: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n auto --dist loadfile --durations=10 -m 'not bench and not slow'

# Every benchmark at its quick size, checked for breakage, not speed (minutes; .ci/run's second step).
bench-check: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -m bench tests/project/test_bench.py

# Mutation testing of the statistics and the conditions ([tool.mutmut] in pyproject.toml;
# about 20 minutes on two cores, not in CI; ONLY=stats or ONLY=conditions: one module). Results and the
# mutants that survive: docs/mutation.md; `.venv/bin/mutmut show NAME` shows one.
mutation: $(VENV)/.installed-mutation
	TRIAGE_MUTATION=1 $(BIN)/mutmut run --max-children $(or $(JOBS),2) $(if $(ONLY),'triage.rules.decisions.$(ONLY).*')
	$(BIN)/mutmut results

# The property tests of the statistics at 20,000 examples each (EXAMPLES=N: N), not 300 as in CI:
# a few minutes on two cores, not in CI. A rare input CI's examples miss shows here.
stats-deep: $(VENV)/.installed-test
	TRIAGE_STATS_EXAMPLES=$(or $(EXAMPLES),20000) $(BIN)/python -m pytest -q -n auto -p no:cacheprovider tests/rules/test_stats_properties.py

# Every benchmark in bench/, one after the other (minutes; QUICK=1: a sanity check).
bench: $(VENV)/.installed-test
	$(BIN)/python bench/run_all.py $(if $(QUICK),--quick)

clean:
	rm -rf $(VENV) mutants kb.sqlite tests/mermaid/node_modules
