"""Results files into the runs ``add-run`` records.

What a person typed wins, as with a log: ``--metric``, ``--set`` and
``--status`` override the files' metric, provenance key and status of the
same name.  Repeats in the files (a benchmark's rounds or repetitions) make
one run per repeat, ``RUN-r1``, ``RUN-r2``…, as ``--metric NAME=V1,V2`` does;
the other metrics go with the first.  A run that neither the person nor the
files gave a status gets one from the primary metric against the gate.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Sequence

from triage.errors import InputError

__all__ = ["results_into"]


def results_into(s: Any, inv: Any, items: list, base_id: str, paths: Sequence[str], fmt: Optional[str],
                 json_paths: Sequence[str]) -> tuple[list, list[str]]:
    """The runs to record, with what the files gave, and the lines that say what was read."""
    from triage.ingest.logread import status_from_log
    from triage.ingest.results import as_repeats, json_extractors, read_results
    from triage.ingest.results.jsonpath import cli_extractors
    from triage.ingest.runs import metric_scales, proportion_problem
    from triage.kb import store

    extractors = cli_extractors(json_paths) + json_extractors(store.extractors_for(s, inv))
    found, said = read_results(paths, fmt, extractors)
    repeats = as_repeats(found)
    if len(repeats) > 1 and len(items) > 1:
        raise InputError("repeats come from --metric NAME=V1,V2 or from the results files, not both")
    scales = metric_scales(inv.spec)
    for metrics in repeats:
        for name, v in metrics.items():
            problem = proportion_problem(v["value"], v.get("n"), scales.get(name, 1.0))
            if problem:
                raise InputError(f"results: metric {name}: {problem}")
    first = items[0]
    if len(repeats) > 1:
        items = [dataclasses.replace(first, run_id=f"{base_id}-r{i}") for i in range(1, len(repeats) + 1)]
    out = []
    for data, metrics in zip(items, repeats if len(repeats) == len(items) else [repeats[0]] + [{}] * (len(items) - 1)):
        given = data.metrics or {}
        status = data.status or found.status
        merged = {**metrics, **given}
        if status is None and store.find_runs(s, inv.id, data.run_id, data.config) == []:
            status = status_from_log(inv, merged, None)
        out.append(dataclasses.replace(
            data, metrics=merged or None, status=status,
            provenance={**found.provenance, **(data.provenance or {})} or data.provenance))
    if len(repeats) > 1:
        said.append(f"results: {len(repeats)} repeats, recorded as runs {base_id}-r1 … {base_id}-r{len(repeats)}")
    return out, said
