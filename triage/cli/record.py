"""Commands that record runs: add-run, import, export, runs list|exclude|include|delete, evidence add."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from triage.cli.base import (
    FORMAT_OPT,
    MAX_PR,
    PR_OPT,
    RECORDS_FORMAT_OPT,
    REPO_OPT,
    WIDE_OPT,
    _cell,
    _check_format,
    _console,
    _err,
    _github,
    _json_out,
    _open,
    _out,
    _print_changes,
    _progress,
    _ready_to_evaluate,
    _runs_limit,
    _write,
    _writing,
    app,
    evidence_app,
    runs_app,
    state,
)
from triage.cli.reports import _by_hand
from triage.errors import InputError


# add-run's longer options
_FROM_GITHUB_OPT = Annotated[Optional[int], typer.Option(
    "--from-github", min=1, max=2**63 - 1, metavar="RUN_ID",
    help="Record a GitHub Actions workflow run of the investigation's repository: one run per job, "
         "with its status, URL, sha, branch and log.")]
_CONFIG_FROM_OPT = Annotated[Optional[str], typer.Option(
    "--config-from", metavar="REGEX",
    help="With --from-github: the config is this regex's first group (else its match) in the job name; "
         "jobs it does not match are skipped [default: the whole job name].")]
_RESULTS_OPT = Annotated[Optional[List[str]], typer.Option(
    "--results", metavar="FILE",
    help="A CI results file, repeatable: JUnit XML, lm-eval results, pytest-benchmark or Google Benchmark "
         "JSON, or any JSON read by json: extractors (the format from its content).")]
_RESULTS_FORMAT_OPT = Annotated[Optional[str], typer.Option(
    "--results-format", help="The format of the --results files: junit, lm-eval, pytest-benchmark, "
                             "google-benchmark or json.")]
_JSON_PATH_OPT = Annotated[Optional[List[str]], typer.Option(
    "--json-path", metavar="NAME=EXPR",
    help="With --results: the metric NAME is the value of this JMESPath expression, repeatable.")]


@app.command("add-run")
def add_run(
    pr: PR_OPT,
    run_id: Annotated[Optional[str], typer.Option("--run-id", help="The CI run id (required unless --from-github).")] = None,
    config: Annotated[Optional[str], typer.Option("--config", help="The config (leg) name; run id + config is the identity.")] = None,
    metric: Annotated[Optional[List[str]], typer.Option("--metric", "-m", help="NAME=VALUE (a number) or NAME=VALUE/N (a proportion of N samples; fail_rate=K/N: K failures of N tries), repeatable; NAME=V1,V2,V3 records repeats of the config. See the README's table of every input form.")] = None,
    status: Annotated[Optional[str], typer.Option("--status", help="What the run did: passed, failed, timeout, oom, crashed, cancelled or infra (required for a new run).")] = None,
    set_: Annotated[Optional[List[str]], typer.Option("--set", help="Provenance KEY=VALUE, repeatable (sha, image, branch, base, runner…).")] = None,
    log: Annotated[Optional[str], typer.Option("--log", help="A log file (plain or gzip, - for stdin): extract metrics and match known failures.")] = None,
    url: Annotated[Optional[str], typer.Option("--url", help="Link to the run.")] = None,
    note: Annotated[Optional[str], typer.Option("--note", help="A note shown with the run.")] = None,
    time: Annotated[Optional[str], typer.Option("--time", help="When the run happened (ISO 8601).")] = None,
    from_github: _FROM_GITHUB_OPT = None,
    config_from: _CONFIG_FROM_OPT = None,
    strict: Annotated[bool, typer.Option("--strict", help="An unknown metric or config is an error, not a warning.")] = False,
    results: _RESULTS_OPT = None,
    results_format: _RESULTS_FORMAT_OPT = None,
    json_path: _JSON_PATH_OPT = None,
    repo: REPO_OPT = None,
    format: FORMAT_OPT = "text",
) -> None:
    """Record a run, or update it (idempotent on run id + config).

    Examples:

    \b
      triage add-run --pr 30433 --run-id 28907609511 \\
          --config kimik26-fp8-1k1k-1p1d-aiterdecode \\
          --metric gsm8k=0.879/1319 --status failed --set sha=0aac976
      triage add-run --pr 30433 --run-id 28873810961 \\
          --config kimik26-fp8-1k1k-1p1d --log job.log.gz
      triage add-run --pr 128 --run-id 7001 --config e2e \\
          --metric wall_s=1486.0,1487.4 --status failed   # two repeats: runs 7001-r1, 7001-r2
      triage add-run --pr 30433 --from-github 28907609511 --config-from '\\((.+)\\)'
      triage add-run --pr 30433 --run-id 7 --config c7 --results junit.xml --results lm-eval.json

    A second call with the same run id and config updates that run: metrics
    and provenance are merged, other fields given replace the old ones.

    With --log, the investigation's extractors read metrics, provenance and
    a status from the log, and the first line that matches a known failure
    marks the run (it then never rules anything out); what was found is
    printed on stderr. --metric, --set and --status win over the log. A new
    run with no status from either gets one from the log: the known failure's
    outcome (crashed, oom, infra...), else passed/failed from the gate.

    With --from-github, each job of the workflow run becomes one run: its
    config is the job name, or what --config-from takes from it (above, the
    matrix job "nightly (kimik26-fp8-1k1k-1p1d)" gives kimik26-fp8-1k1k-1p1d).
    GitHub gives each job's status, URL, time and log, and the run's sha and
    branch; --set and --note add to every job. It needs a token (GITHUB_TOKEN
    or GH_TOKEN) that may read the repository's Actions.

    With --results, the files' metrics are recorded: JUnit XML gives test
    counts, fail_rate and failed:TEST per test case, and the status; lm-eval
    each task's metric with its n; benchmark JSON each benchmark's time, its
    repetitions as repeats of the run. --metric, --set and --status win.
    """
    from triage.ingest import runs as parse
    from triage.usecases.record import record

    _check_format(format, "text", "json")
    provenance = parse.parse_assignments(set_ or []) if set_ else None
    if from_github is not None:
        return _add_from_github(pr, repo, from_github, config_from, provenance, note, format, {
            "--run-id": run_id, "--config": config, "--metric": metric, "--status": status, "--log": log,
            "--url": url, "--time": time, "--results": results})
    base_id, items = _run_inputs(run_id, config, metric, status, provenance, url, time, note, log, config_from,
                                 results, results_format, json_path)
    url_db, _ = _open(create=True)
    _ready_to_evaluate()
    recorded, changed = record(url_db, pr, repo, base_id, items, metric=metric, strict=strict, results=results,
                               results_format=results_format, json_path=json_path, log=log, note=_err)
    _print_recorded(recorded, changed, format)


def _run_inputs(run_id: Optional[str], config: Optional[str], metric: Optional[List[str]], status: Optional[str],
                provenance: Optional[dict], url: Optional[str], time: Optional[str], note: Optional[str],
                log: Optional[str], config_from: Optional[str], results: Optional[List[str]],
                results_format: Optional[str], json_path: Optional[List[str]]) -> tuple[str, list]:
    """add-run's options as the runs to record: the run id given, and one run per repeat."""
    from triage.ingest import runs as parse
    from triage.kb import store

    if run_id is None or config is None:
        raise InputError("add-run needs --run-id and --config (or --from-github RUN_ID)")
    if config_from is not None:
        raise InputError("--config-from goes with --from-github")
    if (results_format or json_path) and not results:
        raise InputError(f"{'--results-format' if results_format else '--json-path'} goes with --results")
    # each proportion is checked on its metric's scale once the investigation is known
    repeats = parse.parse_repeats(metric, scales=None) if metric else [None]
    if len(repeats) > 1 and log is not None:
        raise InputError("--log reads one run: give repeats (--metric NAME=V1,V2,…) without --log")
    base_id = parse.check_text("--run-id", run_id, required=True)
    return base_id, [store.RunInput(
        run_id=base_id if len(repeats) == 1 else f"{base_id}-r{i}",  # one run per repeat, pooled as repeats
        config=parse.check_config("--config", config),
        status=parse.parse_status(status),
        metrics=metrics,
        provenance=provenance,
        url=parse.check_text("--url", url),
        time=parse.parse_time(time),
        note=parse.check_text("--note", note),
    ) for i, metrics in enumerate(repeats, 1)]


def _add_from_github(pr: int, repo: Optional[str], run_id: int, config_from: Optional[str],
                     provenance: Optional[dict], note: Optional[str], format: str, others: dict) -> None:
    """add-run --from-github: one run per job of the workflow run; ``others``, the options it
    takes from GitHub, must be left out."""
    from triage.ingest import fromgithub
    from triage.usecases.record import record_from_github

    given = [flag for flag, value in others.items() if value]
    if given:
        raise InputError(f"--from-github takes {', '.join(given)} from GitHub: leave {'it' if len(given) == 1 else 'them'} out")

    pattern = fromgithub.config_pattern(config_from)
    with _github() as client:  # first: a bad GITHUB_API_URL is bad input
        url_db, _ = _open(create=True)
        _ready_to_evaluate()
        recorded, changed = record_from_github(url_db, client, pr, repo, run_id, pattern=pattern,
                                               provenance=provenance, note=note)
    _print_recorded(recorded, changed, format)


def _print_recorded(recorded: list, changed: dict, format: str = "text") -> None:
    """One line per run recorded (messages from its log first), then the status changes."""
    for _, _, messages in recorded:
        for line in messages:
            _err(line)
    if format == "json":
        _json_out({
            "runs": [{"run_id": row.run_id, "config": row.config, "action": "recorded" if created else "updated",
                      "status": row.status, "metrics": row.metrics} for row, created, _ in recorded],
            "changes": [{"hypothesis": h, "from": before, "to": after}
                        for h, (before, after) in sorted(changed.items()) if before is not None],
        })
        return
    for row, created, _ in recorded:
        verb = "recorded" if created else "updated"
        metrics = ", ".join(f"{k}={v['value']}" + (f"/{v['n']}" if v.get("n") else "") for k, v in sorted(row.metrics.items()))
        _out(f"{verb} run {row.run_id} ({row.config}): {row.status}" + (f", {metrics}" if metrics else ""))
    _print_changes(changed)


@app.command("import")
def import_(
    file: Annotated[str, typer.Argument(help="A JSON Lines or CSV file of run records (- for stdin).")],
    pr: Annotated[Optional[int], typer.Option("--pr", help="Investigation for records that do not name one.", min=1, max=MAX_PR)] = None,
    format: RECORDS_FORMAT_OPT = None,
    repo: REPO_OPT = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace runs even with older records (by updated_at).")] = False,
    run_id: Annotated[Optional[str], typer.Option("--run-id", help="A results file's run (with --config and --pr).")] = None,
    config: Annotated[Optional[str], typer.Option("--config", help="A results file's config.")] = None,
    status: Annotated[Optional[str], typer.Option("--status", help="A results file's run status, if the file does not say.")] = None,
) -> None:
    """Import run records, or a CI results file as one run; all or nothing, idempotent.

    Examples:

    \b
      triage import examples/kimik26-disagg.runs.jsonl
      triage import runs.csv --pr 30433
      triage import junit.xml --pr 30433 --run-id 7 --config c7

    JSON Lines: one JSON object a line (what `triage export` writes); a metric
    is {"NAME": {"value": V}} (a number) or {"NAME": {"value": V, "n": N}} (a
    proportion of N samples; fail_rate: the proportion K/N of N tries failed),
    as add-run's NAME=VALUE and NAME=VALUE/N say. CSV: a header, then one run
    a row, with metric.NAME, metric.NAME/n and prov.KEY columns (see the
    README's table of every input form). A record replaces the run with the
    same run id and config, unless the stored run is newer (its updated_at is
    later than the record's): that record is skipped and counted as older,
    and --overwrite replaces it anyway. A bad record names its line and nothing
    from the file is kept. The investigation is evaluated once, after the import.
    A results file (JUnit .xml, lm-eval or benchmark .json, or --format junit, lm-eval, …)
    is one run, as add-run --results reads it: give --pr, --run-id and --config.
    """
    if _import_results(file, format, pr, repo, run_id, config, status):
        return
    from triage.ingest import importer
    from triage.inputs import check_regular
    from triage.usecases.imports import import_records

    fmt = importer.guess_format(file, format, results=True)
    if file != "-":
        check_regular(file)  # before anything opens it: a FIFO blocks
    url, _ = _open(create=True)
    _ready_to_evaluate()
    total = None if file == "-" else (os.path.getsize(file) if os.path.isfile(file) else None)
    with _progress(f"importing {file}", total) as update:
        result = import_records(url, file, fmt, pr=pr, repo=repo, overwrite=overwrite, settings=state.settings,
                                progress=(lambda done, _size: update(done)) if update is not None else None)
    older = f", {result.older} older (kept the newer)" if result.older else ""
    typer.echo(f"imported {result.total} run(s) from {file}: {result.created} new, {result.updated} updated{older}")


def _import_results(file: str, format: Optional[str], pr: Optional[int], repo: Optional[str],
                    run_id: Optional[str], config: Optional[str], status: Optional[str]) -> bool:
    """Whether ``file`` is a results file, recorded as one run as ``add-run --results`` does."""
    from triage.ingest.results import import_format

    kind = import_format(file, format)
    if kind is None:
        if run_id is not None or config is not None or status is not None:
            raise InputError("--run-id, --config and --status go with a results file, not with run records")
        return False
    if pr is None or run_id is None or config is None:
        raise InputError(f"{file}: a results file ({kind}) is one run: give --pr, --run-id and --config")
    add_run(pr=pr, run_id=run_id, config=config, metric=None, status=status, set_=None, log=None, url=None,
            note=None, time=None, from_github=None, config_from=None, results=[file], results_format=kind,
            json_path=None, repo=repo)
    return True


@app.command()
def export(
    pr: PR_OPT,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to a file instead of stdout.")] = None,
    format: RECORDS_FORMAT_OPT = None,
    repo: REPO_OPT = None,
) -> None:
    """Export an investigation's runs as JSON Lines or CSV (what `import` reads).

    Examples:

    \b
      triage export --pr 30433 -o runs.jsonl
      triage export --pr 30433 -o runs.csv      # CSV, by the extension
      triage export --pr 30433 --format csv

    Exported and imported again, into this or another knowledge base, the
    runs are the same: the round trip is lossless in both formats.
    """
    from triage.ingest.importer import guess_format
    from triage.usecases.imports import export_to

    fmt = guess_format(str(output) if output is not None else "-", format)
    url, _ = _open()
    with _writing(output) as write:  # a few thousand runs at a time, as they are read
        export_to(url, pr, repo, fmt, write)


#: The runs ``runs list`` shows as a table unless ``--last`` says otherwise: the last recorded.
RUNS_LISTED = 100


@runs_app.command("list")
def runs_list(
    pr: PR_OPT, repo: REPO_OPT = None, format: FORMAT_OPT = "text", wide: WIDE_OPT = False,
    last: Annotated[Optional[str], typer.Option("--last", help=f"Only the last runs recorded: a number or all [default: {RUNS_LISTED} in text, all in JSON].")] = None,
) -> None:
    """List an investigation's runs, in the order recorded.

    The table shows the last 100 recorded and says how many it left out.

    Example:

    \b
      triage runs list --pr 30433
      triage runs list --pr 30433 --last 20
      triage runs list --pr 30433 --format json     # every run
    """
    from triage.usecases.lookup import runs, runs_json

    _check_format(format, "text", "json")
    count = _runs_limit(last, "--last") if last is not None else (RUNS_LISTED if format == "text" else None)
    url, _ = _open()
    if format == "json":
        from triage.render.jsonout import write_list

        write_list(runs_json(url, pr, repo, count), lambda text: typer.echo(text, nl=False))
        return
    rows, prefix, total = runs(url, pr, repo, count)
    _runs_table(rows, prefix, wide)
    if total > len(rows):
        _out(f"the last {len(rows):,} of {total:,} runs recorded (--last all lists every one)")


def _runs_table(rows: list, prefix: Optional[str], wide: bool) -> None:
    from rich.table import Table

    console = _console(wide)
    narrow = not wide and console.width < 120
    table = Table(expand=True)
    for col in ("run", "config", "status", "metrics", "excluded"):
        table.add_column(col, overflow="fold")
    for r in rows:
        config = r.config
        if narrow and prefix and config.startswith(prefix) and len(config) > len(prefix):
            config = "…" + config[len(prefix):]
        metrics = ", ".join(f"{k}={v['value']}" for k, v in sorted(r.metrics.items()))
        table.add_row(*map(_cell, (r.run_id, config, r.status, metrics, r.excluded_reason if r.excluded else "")))
    console.print(table)


def _set_excluded(pr: Optional[int], repo: Optional[str], run: str, config: Optional[str], excluded: bool,
                  because: Optional[str]) -> None:
    from triage.usecases.runs import set_excluded

    url, _ = _open(create=True)
    _ready_to_evaluate()
    legs = set_excluded(url, run, excluded, because, config=config, pr=pr, repo=repo)
    word = "excluded" if excluded else "included again"
    for run_id, cfg in legs:
        _out(f"{word}: {run_id} ({cfg})")


@runs_app.command("exclude")
def runs_exclude(
    run: Annotated[str, typer.Argument(help="The run id.")],
    because: Annotated[str, typer.Option("--because", help="Why (shown in the report).")],
    config: Annotated[Optional[str], typer.Option("--config", help="Only this leg (default: every leg of the run).")] = None,
    pr: Annotated[Optional[int], typer.Option("--pr", help="The investigation, if the run id is in several.", min=1, max=MAX_PR)] = None,
    repo: REPO_OPT = None,
) -> None:
    """Exclude a run: it stays in the report but decides nothing.

    Example:

    \b
      triage runs exclude 28903343346 --because "based on plain main, not #30386"
    """
    if not because.strip():
        raise InputError("--because must say why")
    _set_excluded(pr, repo, run, config, True, because)


@runs_app.command("include")
def runs_include(
    run: Annotated[str, typer.Argument(help="The run id.")],
    config: Annotated[Optional[str], typer.Option("--config", help="Only this leg.")] = None,
    pr: Annotated[Optional[int], typer.Option("--pr", help="The investigation, if the run id is in several.", min=1, max=MAX_PR)] = None,
    repo: REPO_OPT = None,
) -> None:
    """Undo `runs exclude`.

    Example:

    \b
      triage runs include 28903343346
    """
    _set_excluded(pr, repo, run, config, False, None)


@runs_app.command("delete")
def runs_delete(
    run: Annotated[str, typer.Argument(help="The run id.")],
    because: Annotated[str, typer.Option("--because", help="Why it was a mistake (kept in the history).")],
    config: Annotated[Optional[str], typer.Option("--config", help="Only this leg (default: every leg of the run).")] = None,
    pr: Annotated[Optional[int], typer.Option("--pr", help="The investigation, if the run id is in several.")] = None,
    repo: REPO_OPT = None,
) -> None:
    """Delete a mistaken run (a wrong id, a run of another PR); kept in the history.

    Example:

    \b
      triage runs delete 29300000000 --config kimik26-fp8-1k1k-1p1d --because "recorded on the wrong PR"

    The whole record and the reason stay in the knowledge base (`triage
    history` lists them, with the record `triage import` reads back). To keep
    a run but let it decide nothing, use `triage runs exclude`.
    """
    from triage.usecases.runs import delete

    if not because.strip():
        raise InputError("--because must say why")
    url, _ = _open(create=True)
    _ready_to_evaluate()
    deleted, changed = delete(url, run, because, config=config, pr=pr, repo=repo)
    for run_id, cfg in deleted:
        typer.echo(f"deleted: {run_id} ({cfg})")
    _print_changes(changed)


@evidence_app.command("add")
def evidence_add(
    pr: PR_OPT,
    hypothesis: Annotated[str, typer.Option("--hypothesis", help="The hypothesis id.")],
    verdict: Annotated[str, typer.Option("--verdict", help="rules_out, confirms, supports or inconclusive.")],
    because: Annotated[str, typer.Option("--because", help="The reason, with its numbers or reference.")],
    author: Annotated[Optional[str], typer.Option("--author", help="Who found it.")] = None,
    run: Annotated[Optional[List[str]], typer.Option("--run", help="Run id(s) it rests on, repeatable.")] = None,
    repo: REPO_OPT = None,
) -> None:
    """Record manual evidence: not a run, but a reading (marked manual).

    Example:

    \b
      triage evidence add --pr 30433 --hypothesis runtime-args --verdict rules_out \\
          --because "kv_cache_dtype, chunked_prefill, mem_fraction identical in both legs" --author alice
    """
    from triage.usecases import byhand

    byhand.check_evidence(verdict, because)
    _by_hand(lambda url: byhand.evidence(url, pr, repo, hypothesis, verdict, because, author, run or []))
