"""Record runs: ``triage add-run`` (runs given by hand, read from a log or CI results files,
or the jobs of a GitHub Actions workflow run).

The runs are checked against the investigation (its metrics' scales, the
names it uses), recorded or updated (run id + config), then evaluated.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from triage.errors import InputError


def record(url: str, pr: int, repo: Optional[str], base_id: str, items: list, *, metric: Optional[list[str]] = None,
           strict: bool = False, results: Optional[list[str]] = None, results_format: Optional[str] = None,
           json_path: Optional[list[str]] = None, log: Optional[str] = None,
           note: Callable[[str], None] = lambda _: None) -> tuple[list, dict]:
    """Record ``items`` (store.RunInput; one per repeat of the run ``base_id``) in ``pr``'s
    investigation, then evaluate and store the view.

    ``metric``: the --metric values given, checked on the investigation's scales; ``strict``:
    an unknown metric or config is refused, not warned about; ``results`` (with their format
    and JMESPath metrics) and ``log`` add what they hold.  ``note(text)`` hears the warnings and
    what the results files and the log gave.  Returns (row, created, messages) per run and
    the status changes."""
    from triage import views
    from triage.ingest import runs as parse
    from triage.kb import store

    recorded = []
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        if metric:
            parse.parse_repeats(metric, parse.metric_scales(inv.spec))
        _check_names(s, inv, items[0], strict, note)
        if results:
            items = _with_results(s, inv, items, base_id, results, results_format, json_path, log, note)
        for data in items:
            if log is not None:
                from triage.ingest.logread import read_log_into

                for line in read_log_into(s, inv, data, log):
                    note(line)
            row, created = store.upsert_run(s, inv.id, data)
            recorded.append((row, created, []))
        # with the view, which the report a bot posts right after then reads as it is
        _, _, changed, _ = views.evaluate_kept(s, inv, read=False)
    return recorded, changed


def record_from_github(url: str, client: Any, pr: int, repo: Optional[str], run_id: int, *,
                       pattern: Any = None, provenance: Optional[dict] = None,
                       note: Optional[str] = None) -> tuple[list, dict]:
    """Record each job of the workflow run ``run_id`` of the investigation's repository as a run
    (``add-run --from-github``; its config: what ``pattern`` takes from the job's name), then
    evaluate.  ``provenance`` and ``note`` go with every job.  Returns (row, created, messages)
    per run (what its log said) and the status changes."""
    from triage import views
    from triage.ingest import fromgithub
    from triage.kb import store

    with store.session(url) as s:
        where = store.find_investigation(s, pr, repo).repo
    items = fromgithub.fetch(client, where, run_id, pattern=pattern, provenance=provenance, note=note)
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        recorded = fromgithub.record(s, inv, items)
        _, _, changed = views.evaluate(s, inv)
    return recorded, changed


def _with_results(s: Any, inv: Any, items: list, base_id: str, results: list[str], fmt: Optional[str],
                  json_path: Optional[list[str]], log: Optional[str], note: Callable[[str], None]) -> list:
    """The runs with what the results files gave (``add-run --results``), saying what was read."""
    from triage.ingest.results.apply import results_into

    items, said = results_into(s, inv, items, base_id, results, fmt, json_path or [])
    for line in said:
        note(line)
    if len(items) > 1 and log is not None:
        raise InputError("--log reads one run: the results files hold repeats")
    return items


def _check_names(s: Any, inv: Any, data: Any, strict: bool, note: Callable[[str], None]) -> None:
    """Warn (or with ``strict`` refuse) a metric or config the investigation never names: a typo, most likely."""
    from triage.kb import store
    from triage.rules.language.names import closest

    metrics, configs = store.known_names(s, inv)
    problems = []
    for name in sorted(data.metrics or {}):
        if name not in metrics:
            hint = closest(name, metrics)
            problems.append(f"--metric {name}: no rule, reference or extractor of {inv.id} uses it"
                            + (f"; did you mean {hint}?" if hint else ""))
    if data.config not in configs and not store.has_config(s, inv.id, data.config):
        hint, base = closest(data.config, configs), inv.spec.get("base")
        # nothing close (``--config base`` after ``triage init``, whose rule file says ``base:``): the base
        problems.append(f"--config {data.config}: not a recipe, the base or a bisect's config of {inv.id}"
                        + (f"; did you mean {hint}?" if hint else f" (its base is {base})" if base else ""))
    if problems and strict:
        raise InputError("; ".join(problems) + " (--strict)")
    for p in problems:
        note(f"warning: {p}")
