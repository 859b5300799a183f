"""JUnit XML: one outcome per test case, read with ``junitparser``.

Every test runner writes it (pytest, Go, Jest, Bazel, CTest, cargo-nextest).
The document is parsed as a stream by ``defusedxml`` (no DTD, so no entity
expansion and no external entity), each ``<testcase>`` handed to
``junitparser`` for its outcome and time, then let go.  A file gives:

* ``tests.passed``, ``tests.failed``, ``tests.errors``, ``tests.skipped``
  (counts) and ``tests.time_s`` (the test cases' time added up);
* ``fail_rate``: the failed and errored test cases of those that ran, with
  n the number that ran (a proportion, compared with its band);
* ``failed:CLASS.NAME`` for each test case that ran: 1 when it failed or
  errored, 0 when it passed, with n = 1, so that runs of one config pool
  into a per-test failure rate, and "which tests fail in A and not in B" is
  a condition on these metrics;
* the run's status, when it has none: ``failed`` when a test case failed or
  errored, else ``passed``.
"""

from __future__ import annotations

from typing import Any

from triage.ingest.results.common import Found, metric_name
from triage.ingest.results.safe import entries_limit, xml_events

__all__ = ["read_junit", "OUTCOMES"]

OUTCOMES = ("passed", "failed", "error", "skipped")
#: Failing test cases named on stderr.
SHOWN = 10


def _outcome(case: Any) -> str:
    from junitparser import Error, Failure, Skipped

    results = case.result
    if any(isinstance(r, Error) for r in results):
        return "error"
    if any(isinstance(r, Failure) for r in results):
        return "failed"
    if any(isinstance(r, Skipped) for r in results):
        return "skipped"
    return "passed"


def _case_time(case: Any) -> float:
    try:
        t = float(case.time)
    except (TypeError, ValueError):
        return 0.0
    return t if 0 <= t < 1e12 else 0.0


def test_cases(path: str) -> list[tuple[str, str, float]]:
    """``(test id, outcome, seconds)`` of each test case, in the file's order."""
    from junitparser import TestCase

    out: list[tuple[str, str, float]] = []
    stack: list[str] = []
    for event, elem, _depth in xml_events(path):
        if event == "start":
            stack.append(elem.tag)
            if len(stack) == 1 and elem.tag not in ("testsuites", "testsuite"):
                raise_not_junit(path, elem.tag)
            continue
        stack.pop()
        if elem.tag == "testcase":
            case = TestCase.fromelem(elem)
            name = case.name or "unnamed"
            out.append((f"{case.classname}.{name}" if case.classname else name, _outcome(case), _case_time(case)))
            entries_limit(path, len(out), "test cases")
            elem.clear()
        elif "testcase" not in stack:  # properties, output: not needed once read past
            elem.clear()
    return out


def raise_not_junit(path: str, tag: str) -> None:
    from triage.errors import InputError

    raise InputError(f"{path}: not JUnit XML (the root element is <{tag[:40]}>, not <testsuites> or <testsuite>)")


def read_junit(path: str) -> Found:
    cases = test_cases(path)
    found = Found()
    counts = {o: 0 for o in OUTCOMES}
    for _, outcome, _ in cases:
        counts[outcome] += 1
    ran = counts["passed"] + counts["failed"] + counts["error"]
    bad = counts["failed"] + counts["error"]
    for key, name in (("passed", "tests.passed"), ("failed", "tests.failed"), ("error", "tests.errors"),
                      ("skipped", "tests.skipped")):
        found.add(name, float(counts[key]))
    found.add("tests.time_s", round(sum(t for _, _, t in cases), 6))
    if ran:
        found.add("fail_rate", bad / ran, ran)
        found.status = "failed" if bad else "passed"
    for test, outcome, _ in cases:
        if outcome != "skipped":
            found.add(metric_name(f"failed:{test}"), 1.0 if outcome in ("failed", "error") else 0.0, 1)
    found.said.append(f"{len(cases)} test cases: {counts['passed']} passed, {counts['failed']} failed, "
                      f"{counts['error']} errored, {counts['skipped']} skipped"
                      + (f"; fail_rate={bad}/{ran}" if ran else ""))
    failing = [(test, outcome) for test, outcome, _ in cases if outcome in ("failed", "error")]
    found.said += [f"  {outcome}: {test}" for test, outcome in failing[:SHOWN]]
    if len(failing) > SHOWN:
        found.said.append(f"  … and {len(failing) - SHOWN} more")
    return found
