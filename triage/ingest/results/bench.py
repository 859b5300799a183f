"""Benchmark JSON: pytest-benchmark (``--benchmark-json``) and Google Benchmark
(``--benchmark_out_format=json``).

A benchmark's value is its time, and its repetitions carry the run's own
noise: they are kept as repeats of the run (one value each; ``add-run``
records them as ``RUN-r1``, ``RUN-r2``…, the way ``--metric NAME=V1,V2,V3``
does), so the noise model compares their mean with their own spread.

* pytest-benchmark: the metric is the benchmark's ``name``, in seconds; its
  repeats are the rounds in ``stats.data`` (written with
  ``--benchmark-save-data``) when there are 2 to :data:`MAX_ROUNDS`,
  else the value is ``stats.mean`` alone (the file's spread is then said, not kept).
* Google Benchmark: the metric is the ``run_name``, in its ``time_unit``
  (``real_time``); its repeats are the per-repetition entries
  (``run_type: iteration``, from ``--benchmark_repetitions``); without them
  (``--benchmark_report_aggregates_only``) the value is the ``mean`` aggregate.
"""

from __future__ import annotations

from typing import Any, Mapping

from triage.errors import InputError
from triage.ingest.results.common import Found, metric_name, number, unique
from triage.ingest.results.safe import entries_limit

__all__ = ["read_pytest_benchmark", "read_google_benchmark", "is_pytest_benchmark", "is_google_benchmark"]

#: At most this many rounds are kept as repeats (``--metric``'s limit).
MAX_ROUNDS = 1000


def _benchmarks(doc: Any) -> list:
    return doc.get("benchmarks") if isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list) else []


def is_pytest_benchmark(doc: Any) -> bool:
    b = _benchmarks(doc)
    return bool(b) and "machine_info" in doc or bool(b) and isinstance(b[0], dict) and isinstance(b[0].get("stats"), dict)


def is_google_benchmark(doc: Any) -> bool:
    b = _benchmarks(doc)
    return isinstance(doc, dict) and isinstance(doc.get("context"), dict) and (
        not b or isinstance(b[0], dict) and "real_time" in b[0])


def _entry(path: str, i: int, b: Any, *keys: str) -> Mapping[str, Any]:
    if not isinstance(b, dict) or any(k not in b for k in keys):
        raise InputError(f"{path}: benchmarks[{i}]: expected an object with {', '.join(keys)}")
    return b


def read_pytest_benchmark(path: str, doc: Mapping[str, Any]) -> Found:
    found = Found()
    benchmarks = _benchmarks(doc)
    entries_limit(path, len(benchmarks), "benchmarks")
    for i, raw in enumerate(benchmarks):
        b = _entry(path, i, raw, "name", "stats")
        stats = b["stats"] if isinstance(b["stats"], dict) else {}
        mean = number(stats.get("mean"))
        if mean is None:
            raise InputError(f"{path}: benchmarks[{i}] ({str(b['name'])[:80]}): stats.mean is not a number")
        name = metric_name(str(b["name"]))
        data = stats.get("data")
        values = [number(v) for v in data] if isinstance(data, list) else []
        if 2 <= len(values) <= MAX_ROUNDS and None not in values:
            name = unique(name, found)
            found.repeats[name] = values  # type: ignore[assignment]
            found.said.append(f"{name}: {len(values)} rounds, mean {mean:g} s, SD {_sd(values):g} s (kept as repeats)")
        else:
            found.add(name, mean)
            sd, rounds = number(stats.get("stddev")), stats.get("rounds")
            found.said.append(f"{name}={mean:g} s (mean of {rounds} rounds, SD {sd:g} s: the rounds are not in "
                              "the file, --benchmark-save-data keeps them)" if sd is not None else f"{name}={mean:g} s")
    return found


def read_google_benchmark(path: str, doc: Mapping[str, Any]) -> Found:
    found = Found()
    benchmarks = _benchmarks(doc)
    entries_limit(path, len(benchmarks), "benchmarks")
    reps: dict[str, list[float]] = {}
    means: dict[str, float] = {}
    units: dict[str, str] = {}
    for i, raw in enumerate(benchmarks):
        b = _entry(path, i, raw, "name", "real_time")
        value = number(b["real_time"])
        if value is None:
            raise InputError(f"{path}: benchmarks[{i}] ({str(b['name'])[:80]}): real_time is not a number")
        run = str(b.get("run_name") or b["name"])
        units[run] = str(b.get("time_unit", "ns"))
        if b.get("run_type", "iteration") == "iteration":
            reps.setdefault(run, []).append(value)
        elif b.get("aggregate_name") == "mean":
            means[run] = value
    for run in dict.fromkeys([*reps, *means]):
        values = reps.get(run, [])
        name = unique(metric_name(run), found)
        if len(values) >= 2:
            found.repeats[name] = values
            found.said.append(f"{name}: {len(values)} repetitions, mean {sum(values) / len(values):g} {units[run]}, "
                              f"SD {_sd(values):g} (kept as repeats)")
        else:
            value = means.get(run, values[0] if values else 0.0)
            found.add(name, value)
            found.said.append(f"{name}={value:g} {units[run]}")
    return found


def _sd(values: list[float]) -> float:
    import statistics

    return statistics.stdev(values) if len(values) > 1 else 0.0
