"""CI results files in: JUnit XML, lm-eval-harness results, pytest-benchmark
and Google Benchmark JSON, and any other JSON through JMESPath extractors.

``add-run --results FILE…`` and ``import`` of a results file call
:func:`read_results`; the format is detected from the file's content
(:func:`detect`) unless given.  Every reader is bounded (:mod:`.safe`): the
file's size, its entries, its nesting, and XML with no DTD at all.  What the
files give is merged into one :class:`Found`: a metric given by two files is
an error, and :func:`as_repeats` turns it into the metrics of each repeat.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from triage.errors import InputError
from triage.ingest.results.common import Found

__all__ = ["FORMATS", "Found", "detect", "read_file", "read_results", "as_repeats", "json_extractors",
           "import_format"]

FORMATS = ("junit", "lm-eval", "pytest-benchmark", "google-benchmark", "json")


def json_extractors(specs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The extractors that read JSON (``json:``), in their declared order."""
    return [d for d in specs if d.get("json")]


def _json_format(doc: Any) -> str:
    from triage.ingest.results import bench, lmeval

    if lmeval.looks_like(doc):
        return "lm-eval"
    if bench.is_google_benchmark(doc):
        return "google-benchmark"
    if bench.is_pytest_benchmark(doc):
        return "pytest-benchmark"
    return "json"


def detect(path: str) -> str:
    """``junit`` for XML, else the JSON format its content shows (see :func:`_json_format`)."""
    from triage.ingest.results.safe import check_size, read_head

    check_size(path)
    head = read_head(path).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        return "junit"
    if head.startswith((b"{", b"[")):
        return "json"  # refined once parsed
    raise InputError(f"{path}: not a results file (neither XML nor JSON); "
                     f"--results-format names one of {', '.join(FORMATS)}")


def read_file(path: str, fmt: Optional[str] = None, extractors: Sequence[Mapping[str, Any]] = ()) -> tuple[str, Found]:
    """The format read and what ``path`` gave."""
    from triage.ingest.results import bench, jsonpath, junit, lmeval
    from triage.ingest.results.safe import load_json

    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"--results-format {fmt!r}: expected one of {', '.join(FORMATS)}")
    given = fmt
    fmt = fmt or detect(path)
    if fmt == "junit":
        return fmt, junit.read_junit(path)
    doc = load_json(path)
    fmt = _json_format(doc) if fmt == "json" and given is None else fmt
    if fmt == "json" and not extractors:
        raise InputError(f"{path}: JSON of no results format triage knows; name its values with a json: "
                         "extractor in the rule file or --json-path NAME=EXPRESSION")
    readers = {"lm-eval": lmeval.read_lm_eval, "pytest-benchmark": bench.read_pytest_benchmark,
               "google-benchmark": bench.read_google_benchmark}
    if fmt in readers and not _shape_ok(fmt, doc):
        raise InputError(f"{path}: not {fmt} results JSON")
    found = readers[fmt](path, doc) if fmt in readers else Found()
    jsonpath.apply_extractors(path, doc, extractors, found)
    return fmt, found


def _shape_ok(fmt: str, doc: Any) -> bool:
    from triage.ingest.results import bench, lmeval

    return {"lm-eval": lmeval.looks_like, "pytest-benchmark": bench.is_pytest_benchmark,
            "google-benchmark": bench.is_google_benchmark}[fmt](doc)


def read_results(paths: Sequence[str], fmt: Optional[str] = None,
                 extractors: Sequence[Mapping[str, Any]] = ()) -> tuple[Found, list[str]]:
    """What the files give together, and the lines that say so (``results: FILE (FORMAT): …``)."""
    total, said, origin = Found(), [], {}
    for path in paths:
        kind, found = read_file(path, fmt, extractors)
        for name in [*found.metrics, *found.repeats]:
            if name in origin:
                raise InputError(f"{path}: metric {name} is also in {origin[name]}; give each metric once")
            origin[name] = path
        total.metrics.update(found.metrics)
        total.repeats.update(found.repeats)
        total.provenance.update(found.provenance)
        if found.status is not None and total.status != "failed":
            total.status = found.status
        said += [f"results: {path} ({kind}): {line}" for line in found.said[:1]] + [
            f"results: {line}" for line in found.said[1:]]
    return total, said


def as_repeats(found: Found) -> list[dict[str, dict]]:
    """The metrics of each repeat of the run: a metric with repeats gives its
    i-th value to the i-th; every other metric goes with the first."""
    k = max((len(v) for v in found.repeats.values()), default=1)
    out: list[dict[str, dict]] = [dict(found.metrics)] + [{} for _ in range(k - 1)]
    for name, values in found.repeats.items():
        for i, v in enumerate(values):
            out[i][name] = {"value": v}
    return out


def import_format(path: str, fmt: Optional[str]) -> Optional[str]:
    """The results format ``triage import`` reads ``path`` as, or None for run
    records: ``--format`` a results format, else a ``.xml`` file is JUnit and a
    ``.json`` file is what its content shows, when it is a results format."""
    import os

    from triage.ingest.results.safe import load_json
    from triage.limits import get

    if fmt is not None:
        return fmt if fmt in FORMATS else None
    name = path.lower()
    if path == "-" or not name.endswith((".xml", ".json")):
        return None
    if name.endswith(".xml"):
        return "junit"
    if not os.path.isfile(path) or os.path.getsize(path) > get("results_bytes"):
        return None  # records, read line by line
    try:
        kind = _json_format(load_json(path))
    except InputError:
        return None  # JSON Lines, say: the records reader says what is wrong
    return None if kind == "json" else kind
