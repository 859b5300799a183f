"""The command line: parse, call, print. No SQL and no rule logic here."""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator, List, Optional

import typer

from triage import __version__
from triage.errors import InputError, TriageError

HELP = """\
Keep a CI investigation as data: runs, hypotheses and evidence in a SQL
knowledge base; YAML rules decide what each run rules out or confirms; the
report is the PR comment.

Example (the bundled investigation, sgl-project/sglang#30433):

\b
  triage import examples/kimik26-disagg.runs.jsonl
  triage report --pr 30433 --format text
  triage add-run --pr 30433 --run-id 29300000000 --config kimik26-fp8-1k1k-1p1d \\
      --metric gsm8k=0.881/1319 --status failed --set image=latest

The knowledge base is ./kb.sqlite unless --db or TRIAGE_DB names another
(any SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db). Rule files are
read from ./rules unless --rules or TRIAGE_RULES says otherwise.
"""

app = typer.Typer(
    help=HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
runs_app = typer.Typer(help="List runs, exclude or re-include them, delete a mistaken one.", no_args_is_help=True)
evidence_app = typer.Typer(help="Record manual evidence (a code reading, a config diff).", no_args_is_help=True)
signatures_app = typer.Typer(help="Known-failure signatures: list them, draft new ones from a log.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
app.add_typer(evidence_app, name="evidence")
app.add_typer(signatures_app, name="signatures")
db_app = typer.Typer(help="The knowledge base's schema: its version, and upgrading it.", no_args_is_help=True)
app.add_typer(db_app, name="db")


class State:
    db: Optional[str] = None
    rules: Optional[list[str]] = None


state = State()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"triage {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    db: Annotated[Optional[str], typer.Option("--db", help="Knowledge base: a SQLite path or SQLAlchemy URL [env: TRIAGE_DB; default: ./kb.sqlite].")] = None,
    rules: Annotated[Optional[List[str]], typer.Option("--rules", help="Rule file or directory (repeatable) [env: TRIAGE_RULES; default: ./rules].")] = None,
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    state.db = db
    state.rules = rules


# --------------------------------------------------------------------------
# Shared plumbing


def _rule_paths() -> list[str]:
    if state.rules:
        return list(state.rules)
    env = os.environ.get("TRIAGE_RULES")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return ["rules"] if Path("rules").is_dir() else []


def _open(create: bool = False) -> tuple[str, Any]:
    """Validate rule files (nothing written if any is bad), then sync them.

    Only commands that record runs or read rule files alone (``create``:
    add-run, import, scan, signatures) may start a new SQLite knowledge base;
    any other says there is none."""
    from triage.kb import store
    from triage.rules.cache import load_rules
    from triage.rules.loader import RuleSet

    paths = _rule_paths()
    ruleset = load_rules(paths) if paths else RuleSet([])
    url = store.resolve_url(state.db)
    missing = None if create else store.missing_file(url)
    if missing is not None:
        raise InputError(f"no knowledge base at {missing}: record runs first (`triage import FILE` or "
                         "`triage add-run …`), or name one with --db or TRIAGE_DB")
    store.sync_on_open(url, ruleset)
    return url, ruleset


# Control characters (ESC sequences, CR overwrites, bells) and bidirectional
# overrides in stored or logged text would act on the terminal or reorder
# what it shows: they are printed as escapes. Tabs and newlines stay.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _safe(text: Any) -> str:
    """Text as a terminal should show it: every unsafe character escaped."""
    s = "" if text is None else str(text)
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", s)


def _cell(text: Any) -> Any:
    """A Rich table cell that shows stored text as it is: no markup read in it, nothing unsafe."""
    from rich.text import Text

    return Text(_safe(text))


def _out(message: str) -> None:
    typer.echo(_safe(message))


def _err(message: str) -> None:
    typer.echo(_safe(message), err=True)


def _write(text: str, output: Optional[Path]) -> None:
    if output is None or str(output) == "-":
        sys.stdout.write(_safe(text) if sys.stdout.isatty() else text)
        return
    tmp = output.with_name(output.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(output)
    except OSError as e:
        raise InputError(f"-o {output}: {e.strerror}") from None
    _err(f"wrote {output}")


@contextmanager
def _progress(what: str, total: Optional[int]) -> Iterator[Optional[Callable[[int], None]]]:
    """A progress bar (bytes of ``total``) on stderr while the body runs, only
    when stderr is a terminal; yields ``update(completed)`` (None: no bar)."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=total)
        yield lambda completed: bar.update(task, completed=completed)


def _evaluate(s: Any, inv: Any) -> tuple[Any, Any, dict]:
    """Evaluate and store; keep the report's view of it, so that the next
    report of an unchanged knowledge base reads it instead of evaluating."""
    bundle, ev, changed, _ = _evaluate_kept(s, inv)
    return bundle, ev, changed


def _evaluate_kept(s: Any, inv: Any, runs: Optional[int] = 50) -> tuple[Any, Any, dict, dict]:
    """:func:`_evaluate`, and the view model with the newest ``runs`` runs."""
    from triage.kb import snapshot, store
    from triage.render.report import DEFAULT_RUNS, build
    from triage.rules.engine import evaluate

    store.lock_investigation(s, inv.id)  # evaluations of one investigation take turns
    bundle = store.load_bundle(s, inv)
    ev = evaluate(bundle)
    changed = store.store_evaluation(s, inv.id, ev)
    model = build(bundle, ev, runs_limit=runs)
    if runs == DEFAULT_RUNS:
        untested = [{"id": h.id, "title": h.title, "text": h.text or ""} for h in bundle.hypotheses if h.id in ev.untested]
        snapshot.write(s, inv.id, snapshot.fingerprint(s, inv.id), {"model": model, "untested": untested})
    return bundle, ev, changed, model


def _model(pr: int, repo: Optional[str], since: Optional[str] = None, *, runs: Optional[int] = 50,
           full: bool = False) -> tuple[str, dict]:
    """Evaluate one investigation; its view model (and the database URL).

    ``since`` adds the "new since" line: ``last-post``, a time or an age;
    ``post``: the line the posted comment carries (``store.post_since_view``).
    ``runs``: the newest runs the runs table shows (None: all).  When nothing
    the evaluation depends on changed since the last one, the stored
    evaluation is read instead (``full`` evaluates all the same).
    """
    from triage.kb import snapshot, store
    from triage.render.report import DEFAULT_RUNS, _dispatch_line
    from triage.rules.similar import DEFAULT_THRESHOLD

    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        fp = snapshot.fingerprint(s, inv.id)
        kept = None if full or runs != DEFAULT_RUNS else snapshot.read(s, inv.id, fp)
        if kept is not None:
            model, no_recipe = kept["model"], [_Untested(**h) for h in kept["untested"]]
        else:
            bundle, ev, _, model = _evaluate_kept(s, inv, runs)
            no_recipe = [_Untested(h.id, h.title, h.text or "") for h in bundle.hypotheses if h.id in ev.untested]
        if since == "post":
            model["since"] = store.post_since_view(s, inv)
        else:
            model["since"] = _since(s, inv, since)
        if kept is not None and "similar" in kept:
            model["similar"] = kept["similar"]
        else:
            model["similar"] = _seen_elsewhere(s, inv, no_recipe, DEFAULT_THRESHOLD) if no_recipe else []
            if runs == DEFAULT_RUNS:
                version = kept["others"] if kept is not None else snapshot.others(s)
                snapshot.write_similar(s, inv.id, version, model["similar"])
        # what autopilot started changes without the runs: read it every time
        model["dispatched"] = [_dispatch_line(d) for d in store.dispatches(s, inv.id)]
    return url, model


class _Untested:
    """A hypothesis no recipe tests, as "Seen elsewhere" compares it."""

    def __init__(self, id: str, title: str, text: str) -> None:
        self.id, self.title, self.text = id, title, text


def _fitted(model: dict, templates: Optional[str]) -> str:
    """The comment as posted: shortened to GitHub's limit, saying so on stderr."""
    from triage.render.fit import fit
    from triage.render.report import to_markdown

    fitted = fit(model, render=lambda m: to_markdown(m, templates))
    if fitted.note:
        _err(f"shortened to fit GitHub's comment limit: {fitted.note}")
    return fitted.body


FORMAT_OPT = Annotated[str, typer.Option("--format", "-f", help="text or json.")]
WIDE_OPT = Annotated[bool, typer.Option("--wide", help="Every column in full, whatever the terminal's width.")]


def _json_out(data: Any) -> None:
    import json

    typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def _console(wide: bool = False) -> Any:
    """A console that prints stored text as text (no markup), at the terminal's width."""
    from rich.console import Console

    return Console(highlight=False, markup=False, emoji=False, width=200 if wide else None)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


#: PR numbers are 32-bit integers in the knowledge base (PostgreSQL's integer).
MAX_PR = 2**31 - 1
PR_OPT = Annotated[int, typer.Option("--pr", help="The PR (or issue) number of the investigation.", min=1, max=MAX_PR)]
REPO_OPT = Annotated[Optional[str], typer.Option("--repo", help="OWNER/NAME, where several investigations share a PR number.")]
TEMPLATES_OPT = Annotated[Optional[str], typer.Option("--templates", help="A directory whose templates override ours [env: TRIAGE_TEMPLATES].")]


# --------------------------------------------------------------------------
# Commands


@app.command("add-run")
def add_run(
    pr: PR_OPT,
    run_id: Annotated[Optional[str], typer.Option("--run-id", help="The CI run id (required unless --from-github).")] = None,
    config: Annotated[Optional[str], typer.Option("--config", help="The config (leg) name; run id + config is the identity.")] = None,
    metric: Annotated[Optional[List[str]], typer.Option("--metric", "-m", help="NAME=VALUE[/N] (N: the sample count), repeatable; NAME=V1,V2,V3 records repeats of the config.")] = None,
    status: Annotated[Optional[str], typer.Option("--status", help="passed, failed, crashed, cancelled or error (required for a new run).")] = None,
    set_: Annotated[Optional[List[str]], typer.Option("--set", help="Provenance KEY=VALUE, repeatable (sha, image, branch, base, runner…).")] = None,
    log: Annotated[Optional[str], typer.Option("--log", help="A log file (plain or gzip, - for stdin): extract metrics and match known failures.")] = None,
    url: Annotated[Optional[str], typer.Option("--url", help="Link to the run.")] = None,
    note: Annotated[Optional[str], typer.Option("--note", help="A note shown with the run.")] = None,
    time: Annotated[Optional[str], typer.Option("--time", help="When the run happened (ISO 8601).")] = None,
    from_github: Annotated[Optional[int], typer.Option(
        "--from-github", min=1, max=2**63 - 1, metavar="RUN_ID",
        help="Record a GitHub Actions workflow run of the investigation's repository: one run per job, "
             "with its status, URL, sha, branch and log.")] = None,
    config_from: Annotated[Optional[str], typer.Option(
        "--config-from", metavar="REGEX",
        help="With --from-github: the config is this regex's first group (else its match) in the job name; "
             "jobs it does not match are skipped [default: the whole job name].")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="An unknown metric or config is an error, not a warning.")] = False,
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

    A second call with the same run id and config updates that run: metrics
    and provenance are merged, other fields given replace the old ones.

    With --log, the investigation's extractors read metrics, provenance and
    a status from the log, and the first line that matches a known failure
    marks the run (it then never rules anything out); what was found is
    printed on stderr. --metric, --set and --status win over the log. A new
    run with no status from either gets one from the log: crashed or error
    after a known failure, else passed/failed from the gate.

    With --from-github, each job of the workflow run becomes one run: its
    config is the job name, or what --config-from takes from it (above, the
    matrix job "nightly (kimik26-fp8-1k1k-1p1d)" gives kimik26-fp8-1k1k-1p1d).
    GitHub gives each job's status, URL, time and log, and the run's sha and
    branch; --set and --note add to every job. It needs a token (GITHUB_TOKEN
    or GH_TOKEN) that may read the repository's Actions.
    """
    from triage.ingest import runs as parse
    from triage.kb import store

    _check_format(format, "text", "json")
    provenance = parse.parse_assignments(set_ or []) if set_ else None
    if from_github is not None:
        given = [flag for flag, value in (("--run-id", run_id), ("--config", config), ("--metric", metric),
                                          ("--status", status), ("--log", log), ("--url", url), ("--time", time))
                 if value]
        if given:
            raise InputError(f"--from-github takes {', '.join(given)} from GitHub: leave {'it' if len(given) == 1 else 'them'} out")
        _add_from_github(pr, repo, from_github, config_from, provenance, note, format)
        return
    if run_id is None or config is None:
        raise InputError("add-run needs --run-id and --config (or --from-github RUN_ID)")
    if config_from is not None:
        raise InputError("--config-from goes with --from-github")
    repeats = parse.parse_repeats(metric) if metric else [None]
    if len(repeats) > 1 and log is not None:
        raise InputError("--log reads one run: give repeats (--metric NAME=V1,V2,…) without --log")
    base_id = parse.check_text("--run-id", run_id, required=True)
    items = [store.RunInput(
        run_id=base_id if len(repeats) == 1 else f"{base_id}-r{i}",  # one run per repeat, pooled as repeats
        config=parse.check_text("--config", config, required=True),
        status=parse.parse_status(status),
        metrics=metrics,
        provenance=provenance,
        url=parse.check_text("--url", url),
        time=parse.parse_time(time),
        note=parse.check_text("--note", note),
    ) for i, metrics in enumerate(repeats, 1)]
    url_db, _ = _open(create=True)
    recorded = []
    with store.session(url_db) as s:
        inv = store.find_investigation(s, pr, repo)
        _check_names(s, inv, items[0], strict)
        for data in items:
            if log is not None:
                from triage.ingest.logread import read_log_into

                for line in read_log_into(s, inv, data, log):
                    _err(line)
            row, created = store.upsert_run(s, inv.id, data)
            recorded.append((row, created, []))
        _, _, changed = _evaluate(s, inv)
    _print_recorded(recorded, changed, format)


def _check_names(s: Any, inv: Any, data: Any, strict: bool) -> None:
    """Warn (or with ``strict`` refuse) a metric or config the investigation never names: a typo, most likely."""
    from triage.kb import store
    from triage.rules.names import closest

    metrics, configs = store.known_names(s, inv)
    problems = []
    for name in sorted(data.metrics or {}):
        if name not in metrics:
            hint = closest(name, metrics)
            problems.append(f"--metric {name}: no rule, reference or extractor of {inv.id} uses it"
                            + (f"; did you mean {hint}?" if hint else ""))
    if data.config not in configs and not store.has_config(s, inv.id, data.config):
        hint = closest(data.config, configs)
        problems.append(f"--config {data.config}: not a recipe, the base or a bisect's config of {inv.id}"
                        + (f"; did you mean {hint}?" if hint else ""))
    if problems and strict:
        raise InputError("; ".join(problems) + " (--strict)")
    for p in problems:
        _err(f"warning: {p}")


def _add_from_github(pr: int, repo: Optional[str], run_id: int, config_from: Optional[str],
                     provenance: Optional[dict], note: Optional[str], format: str = "text") -> None:
    from triage.github import GitHubClient
    from triage.ingest import fromgithub
    from triage.kb import store

    pattern = fromgithub.config_pattern(config_from)
    with GitHubClient() as client:  # first: a bad GITHUB_API_URL is bad input
        url_db, _ = _open(create=True)
        with store.session(url_db) as s:
            where = store.find_investigation(s, pr, repo).repo
        items = fromgithub.fetch(client, where, run_id, pattern=pattern, provenance=provenance, note=note)
    with store.session(url_db) as s:
        inv = store.find_investigation(s, pr, repo)
        recorded = fromgithub.record(s, inv, items)
        _, _, changed = _evaluate(s, inv)
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


def _print_changes(changed: dict) -> None:
    for hid, (before, after) in sorted(changed.items()):
        if before is not None:
            _out(f"  {hid}: {before} → {after}")


def _check_format(value: str, *allowed: str) -> None:
    if value not in allowed:
        raise InputError(f"--format {value!r}: expected {', '.join(allowed[:-1])} or {allowed[-1]}")


def _terminal(output: Optional[Path]) -> tuple[int, bool]:
    """Width and colour for text written to a terminal (110 columns, no colour otherwise)."""
    if output is None and sys.stdout.isatty():
        import shutil

        return max(80, shutil.get_terminal_size().columns), not os.environ.get("NO_COLOR")
    return 110, False


def _seen_elsewhere(s: Any, inv: Any, hypotheses: list, min_score: float) -> list[dict]:
    """Hypotheses of other investigations that read like ``hypotheses``, with how they were decided."""
    from dataclasses import replace

    from triage.kb import elsewhere
    from triage.rules import similar

    matches = similar.find_similar(hypotheses, elsewhere.known_hypotheses(s, inv.id), threshold=min_score)
    decided = {(k.investigation, k.id): k for k in elsewhere.decisions_of(s, [x.other for x in matches])}
    return [similar.view(replace(x, other=decided[(x.other.investigation, x.other.id)])) for x in matches]


def _since(s: Any, inv: Any, since: Optional[str]) -> Optional[dict]:
    from triage.ingest.runs import parse_since
    from triage.kb import store

    if since is None:
        return None
    if since == "last-post":
        at = store.last_post_time(s, inv.id)
        if at is None:
            raise InputError(f"--since last-post: {inv.repo}#{inv.pr} has no posted report yet; "
                             "give a time (2026-06-26T12:00Z) or an age (2d)")
        label = f"the last report ({at:%Y-%m-%d %H:%M} UTC)"
    else:
        at = parse_since(since, store.now())
        label = f"{at:%Y-%m-%d %H:%M} UTC"
    return store.since_view(s, inv, at, label)


SINCE_HELP = "Add a 'new since' line: last-post, an ISO 8601 time, or an age such as 12h, 2d, 1w."


@app.command()
def report(
    pr: PR_OPT,
    format: Annotated[str, typer.Option("--format", "-f", help="markdown (the PR comment), json or text.")] = "markdown",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to a file instead of stdout.")] = None,
    templates: TEMPLATES_OPT = None,
    since: Annotated[Optional[str], typer.Option("--since", help=SINCE_HELP)] = None,
    fit: Annotated[bool, typer.Option("--fit", help="Shorten the markdown to GitHub's 65,536-character limit, as `triage post` does.")] = False,
    repo: REPO_OPT = None,
    runs: Annotated[str, typer.Option("--runs", help="How many of the newest runs the runs table shows: a number or all.")] = "50",
    full: Annotated[bool, typer.Option("--full", help="Evaluate the whole investigation even when nothing changed since the last evaluation.")] = False,
) -> None:
    """Evaluate the rules and render the report.

    Examples:

    \b
      triage report --pr 30433                 # markdown: everything
      triage report --pr 30433 --fit           # markdown exactly as the post command sends it
      triage report --pr 30433 --format text   # for the terminal
      triage report --pr 30433 --format json -o report.json
      triage report --pr 30433 --since last-post   # what arrived since the last posted report
      triage report --pr 30433 --since 2d          # … or in the last two days
      triage report --pr 30433 --runs all          # every run, not only the newest 50

    The markdown shows everything unless --fit: a report above GitHub's limit
    then loses its oldest runs, then the evidence details, then long texts,
    and says so in a line near the top.
    """
    from triage.render import report as render

    _check_format(format, "markdown", "json", "text")
    if fit and format != "markdown":
        raise InputError("--fit shortens the markdown comment: use it with --format markdown")
    _, model = _model(pr, repo, since, runs=_runs_limit(runs), full=full)
    if format == "json":
        text = render.to_json(model)
    elif format == "text":
        width, color = _terminal(output)
        text = render.to_text(model, width=width, color=color)
    elif fit:
        text = _fitted(model, templates)
    else:
        text = render.to_markdown(model, templates)
    _write(text, output)


bisect_app = typer.Typer(no_args_is_help=False, subcommand_metavar="[mark ...]")
app.add_typer(bisect_app, name="bisect")


@bisect_app.callback(invoke_without_command=True)
def bisect(
    ctx: typer.Context,
    pr: Annotated[Optional[int], typer.Option("--pr", help="The PR (or issue) number of the investigation.", min=1)] = None,
    id_: Annotated[Optional[List[str]], typer.Option("--id", help="Only this bisect (repeatable; default: all).")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    repo: REPO_OPT = None,
) -> None:
    """Show each bisect: its points, the ends check, last good, first bad, and the next point to run.

    Example:

    \b
      triage bisect --pr 30433
      triage bisect --pr 30433 --id image --format json
      triage bisect mark --pr 30433 image v0.5.14-rocm720-mi35x-20260626 bad --because "gsm8k 0.87 by hand"

    A point is good or bad through the bisect's good_when (noise-aware); a
    crashed, errored, cancelled, excluded or known-failure run skips its point,
    never makes it bad; two runs of one point with different verdicts make it
    flaky.  The next point is the midpoint of the untested points between last
    good and first bad; with the bisect's run: template, its command is shown.
    A good_when of only `status:` judges each run by its verdict; a valid run
    without the number good_when compares is "no number"; `triage bisect mark`
    judges a point by hand.
    """
    import json

    from triage.kb import store
    from triage.render import report as render

    if ctx.invoked_subcommand is not None:
        return
    if pr is None:
        raise InputError("--pr is required: the PR (or issue) number of the investigation")
    _check_format(format, "text", "json")
    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        bundle, ev, _ = _evaluate(s, inv)
    model = render.build(bundle, ev)
    known = [b["id"] for b in model["bisects"]]
    if not known:
        raise InputError(f"{inv.repo}#{inv.pr} has no bisects: add one under bisects: in its rule file")
    unknown = [i for i in id_ or [] if i not in known]
    if unknown:
        raise InputError(f"--id {unknown[0]!r}: no such bisect; known: {', '.join(known)}")
    model["bisects"] = [b for b in model["bisects"] if not id_ or b["id"] in id_]
    if format == "json":
        keys = ("id", "title", "axis", "last_good", "first_bad", "next", "remaining", "steps", "ends", "ends_ok",
                "done", "command", "notes", "points")
        typer.echo(json.dumps([{k: b[k] for k in keys} for b in model["bisects"]], indent=2, ensure_ascii=False))
        return
    width, color = _terminal(None)
    sys.stdout.write(render.bisects_to_text(model, width=width, color=color))


@bisect_app.command("mark")
def bisect_mark(
    pr: PR_OPT,
    bisect_id: Annotated[str, typer.Argument(metavar="BISECT", help="The bisect id.")],
    point: Annotated[str, typer.Argument(metavar="POINT", help="The point's label, as `triage bisect` shows it.")],
    verdict: Annotated[str, typer.Argument(metavar="good|bad", help="The verdict, as git bisect good|bad.")],
    because: Annotated[str, typer.Option("--because", help="Why: what was run and seen.")],
    author: Annotated[Optional[str], typer.Option("--author", help="Who judged it.")] = None,
    repo: REPO_OPT = None,
) -> None:
    """Judge a bisect point by hand, as git bisect good|bad does (shown as manual).

    Example:

    \b
      triage bisect mark --pr 30433 image v0.5.14-rocm720-mi35x-20260626 bad \\
          --because "gsm8k 0.87 on a local run" --author alice

    A mark is never overridden silently: a run (or another mark) that
    disagrees makes the point flaky.
    """
    from triage.kb import store

    if verdict not in ("good", "bad"):
        raise InputError(f"verdict {verdict!r}: expected good or bad")
    _record_by_hand(pr, repo, because, f"marked {bisect_id} {point} {verdict} (manual)",
                    lambda s, iid: store.add_bisect_mark(s, iid, bisect_id, point, verdict, because, author))


def _record_by_hand(pr: int, repo: Optional[str], because: str, said: str, add: Callable[[Any, str], Any]) -> None:
    """Record something judged by hand (`add(session, investigation id)`), re-evaluate, say what changed."""
    from triage.kb import store

    if not because.strip():
        raise InputError("--because must say why")
    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        add(s, inv.id)
        _, _, changed = _evaluate(s, inv)
    typer.echo(said)
    _print_changes(changed)


@app.command()
def similar(
    pr: PR_OPT,
    hypothesis: Annotated[Optional[List[str]], typer.Option("--hypothesis", help="Match this hypothesis (repeatable; default: the open ones no recipe tests).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Match every hypothesis that is not decided yet.")] = False,
    min_score: Annotated[float, typer.Option("--min-score", min=0, max=100, help="Similarity (0-100) a match needs.")] = 70.0,
    format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    repo: REPO_OPT = None,
) -> None:
    """Find hypotheses in other investigations that read alike, and how they were decided.

    Example:

    \b
      triage similar --pr 30433                       # the open hypotheses with no recipe
      triage similar --pr 30433 --hypothesis image-aiter --min-score 60

    Titles and text are compared with rapidfuzz (token set and token sort
    ratios, stop words dropped); each match shows the other investigation,
    its status there, and the recipes and evidence that decided it.
    """
    import json

    from triage.kb import store
    from triage.rules.engine import UNDECIDED

    _check_format(format, "text", "json")
    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        bundle, ev, _ = _evaluate(s, inv)
        known = {h.id: h for h in bundle.hypotheses}
        for h in hypothesis or []:
            if h not in known:
                raise InputError(f"--hypothesis {h!r}: no such hypothesis in {inv.repo}#{inv.pr}")
        if hypothesis:
            targets = [known[h] for h in hypothesis]
        elif all_:
            targets = [h for h in bundle.hypotheses if ev.statuses.get(h.id) in UNDECIDED]
        else:
            targets = [h for h in bundle.hypotheses if h.id in ev.untested]
        matches = _seen_elsewhere(s, inv, targets, min_score) if targets else []
    if format == "json":
        typer.echo(json.dumps(matches, indent=2, ensure_ascii=False))
        return
    if not targets:
        typer.echo("Every open hypothesis has a recipe; name one with --hypothesis or use --all.")
        return
    from triage.render.report import similar_to_text

    sys.stdout.write(similar_to_text(targets, matches, min_score))


@app.command()
def init(
    id_: Annotated[str, typer.Option("--id", help="The investigation id (also the file name).")],
    repo: Annotated[str, typer.Option("--repo", help="OWNER/NAME of the repository.")],
    pr: Annotated[int, typer.Option("--pr", help="The PR (or issue) that tracks the regression.", min=1)],
    metric: Annotated[str, typer.Option("--metric", help="The primary metric (gsm8k, p99_ms, wall_s…).")],
    gate: Annotated[float, typer.Option("--gate", help="The gate the metric must pass.")],
    direction: Annotated[str, typer.Option("--direction", help="Which way is better: higher or lower.")] = "higher",
    tolerance: Annotated[Optional[str], typer.Option("--tolerance", help="The difference that is noise: 0.01 or 2%.")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="A one-line title [default: METRIC regression on REPO#PR].")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
) -> None:
    """Scaffold a new investigation: a rule file and its test file, valid as written.

    Example:

    \b
      triage init --id p99-regression --repo acme/server --pr 1234 \\
          --metric p99_ms --direction lower --gate 150 --tolerance 3%
      triage check
      triage test

    Writes rules/ID.yaml (the first --rules directory, else ./rules) with one
    hypothesis and one recipe, plus commented examples of a rule, a bisect, a
    signature and an extractor; and rules/tests/ID.test.yaml with two cases.
    """
    from triage.rules import scaffold

    paths = _rule_paths()
    where = Path(paths[0]) if paths and not paths[0].endswith((".yaml", ".yml")) else Path("rules")
    spec = scaffold.Scaffold(id_, repo, pr, metric, direction, gate, tolerance, title)
    for path in scaffold.write(spec, where, force=force):
        typer.echo(f"wrote {path}")
    typer.echo("next: edit the hypotheses and recipes, then `triage check` and `triage test`")


@app.command()
def check(
    paths: Annotated[Optional[List[Path]], typer.Argument(help="Rule files or directories (default: the rules in use).")] = None,
    format: FORMAT_OPT = "text",
) -> None:
    """Validate rule files; list every problem as path:line:col.

    Example:

    \b
      triage check rules/
      triage check rules/kimik26-disagg.yaml
      triage check --format json

    Exits 0 when all are valid, 2 when any is not (nothing is loaded then).
    With --format json the problems are printed as JSON on stdout too.
    """
    from triage.errors import RuleFileError
    from triage.rules.loader import direction_warnings, load_rules

    _check_format(format, "text", "json")
    targets = [str(p) for p in paths] if paths else _rule_paths()
    if not targets:
        raise InputError("no rule files: give paths, --rules, or create ./rules")
    warnings: list = []
    try:
        ruleset = load_rules(targets, warnings)
    except RuleFileError as e:
        if format == "json":
            _json_out({"ok": False, "files": [], "problems": [
                {"path": p.path, "line": p.line, "col": p.col, "message": p.message} for p in e.problems],
                "warnings": [str(w) for w in sorted(warnings)]})
        raise
    finally:
        for w in sorted(warnings):
            _err(str(w))
    keys = ("hypotheses", "recipes", "rules", "evidence", "bisects", "signatures", "extractors")
    files = []
    for f in ruleset.files:
        for w in direction_warnings(f):
            _err(str(w))
            warnings.append(w)
        spec = f.spec
        counts = {key: len(getattr(spec, key)) for key in keys if getattr(spec, key)}
        inv = spec.investigation
        files.append({"path": f.path, "investigation": inv.id if inv else None,
                      "repo": inv.repo if inv else None, "pr": inv.pr if inv else None, "counts": counts})
    if format == "json":
        _json_out({"ok": True, "files": files, "problems": [], "warnings": [str(w) for w in sorted(warnings)]})
        return
    for f in files:
        what = ([f"investigation {f['investigation']}"] if f["investigation"] else [])
        what += [f"{n} {key}" for key, n in f["counts"].items()]
        typer.echo(f"{f['path']}: ok ({', '.join(what) or 'empty'})")


def _pairs(values: Optional[List[str]], flag: str) -> dict[str, str]:
    out = {}
    for v in values or []:
        key, eq, value = v.partition("=")
        if not eq or not key or not value:
            raise InputError(f"{flag} {v!r}: expected NAME=VALUE")
        out[key] = value
    return out


@app.command()
def replay(
    pr: PR_OPT,
    start: Annotated[List[str], typer.Option("--start", help="A run to start from: ID (every config) or ID/CONFIG; repeatable.")],
    target: Annotated[Optional[List[str]], typer.Option("--target", help="HYP=STATUS the verdict needs; repeatable.")] = None,
    bisect_: Annotated[Optional[List[str]], typer.Option("--bisect", help="ID=FIRST_BAD: the bisect must end there; repeatable.")] = None,
    leave_out: Annotated[Optional[List[str]], typer.Option("--leave-out", help="A recorded run the replay may not use; repeatable.")] = None,
    orders: Annotated[int, typer.Option("--orders", min=0, help="Random orders for the median.")] = 20,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random orders.")] = 0,
    repo: REPO_OPT = None,
) -> None:
    """Replay a finished investigation: how many runs would the suggestions have spent?

    Example:

    \b
      triage replay --pr 30433 --start nightly-current --start 28873810961 \\
          --target image-regression=confirmed --bisect image=v0.5.14-rocm720-mi35x-20260626

    From the start runs, again and again, the best suggestion that a recorded
    run answers gets that run (one run id + config; crashed runs count),
    until the target statuses and bisect ends hold. Prints each step and the
    runs to verdict, with the same count for the recorded order and the
    median of random orders. Nothing is written to the knowledge base.
    """
    from triage.kb import store
    from triage.rules.replay import replay as run_replay
    from triage.rules.replay import trace

    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        bundle = store.load_bundle(s, inv)
    rp = run_replay(bundle, start, _pairs(target, "--target"), _pairs(bisect_, "--bisect"), leave_out or [],
                    orders=orders, seed=seed)
    prefix = bundle.spec.config_prefix or ""
    typer.echo(trace(rp, lambda c: c[len(prefix):] if prefix and c.startswith(prefix) and c != prefix else c), nl=False)


@app.command()
def autopilot(
    pr: PR_OPT,
    repo: REPO_OPT = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what it would start and why; send nothing (no network).")] = False,
) -> None:
    """Start the top suggestion through GitHub's workflow_dispatch (opt-in, within a budget).

    Examples:

    \b
      triage autopilot --pr 30433 --dry-run    # what it would start, and why
      triage autopilot --pr 30433              # start it (needs a token with actions: write)

    Enabled by `autopilot: {max_runs: N, max_cost: C}` in the rule file, or
    the PR label triage:autopilot. One run in flight at a time: it waits for
    the run it started to be recorded (add-run --from-github), never starts
    twice for one evaluation, never beyond the budget, never a recipe whose
    last run was a known failure awaiting its remedy, and stops when the
    verdict holds. Each start is recorded and shown in the comment.
    """
    from triage.github import GitHubClient
    from triage.github.autopilot import run_for
    from triage.kb import store

    url, _ = _open()
    with store.session(url) as s:
        iid = store.find_investigation(s, pr, repo).id
    if dry_run:
        step = run_for(url, iid, None, dry_run=True)
    else:
        with GitHubClient() as client:
            if not client.has_token:
                raise InputError("no GitHub token: set GITHUB_TOKEN or GH_TOKEN (a --dry-run works without one)")
            step = run_for(url, iid, client)
    sys.stdout.write(step.text())


@app.command("test")
def test_rules(
    paths: Annotated[Optional[List[str]], typer.Argument(help="*.test.yaml files or directories (default: rules/tests).")] = None,
    format: FORMAT_OPT = "text",
) -> None:
    """Run rule-file unit tests: runs in, expected statuses out.

    Example:

    \b
      triage test                                   # every rules/tests/*.test.yaml
      triage test rules/tests/kimik26-disagg.test.yaml
      triage test --format json

    Nothing is read from or written to the knowledge base. Exits 1 when a
    case fails, 2 when a test or rule file is bad.
    """
    from triage.rules.testing import default_test_dirs, find_test_files, run_test_file

    _check_format(format, "text", "json")
    targets = list(paths) if paths else default_test_dirs(_rule_paths())
    if not targets:
        raise InputError("no rule tests: give paths, or create rules/tests/*.test.yaml")
    cases = [case for path in find_test_files(targets) for case in run_test_file(path)]
    failed = sum(not c.ok for c in cases)
    if format == "json":
        _json_out({"passed": len(cases) - failed, "failed": failed, "cases": [
            {"file": c.file, "name": c.name, "ok": c.ok, "failures": c.failures} for c in cases]})
        if failed:
            raise typer.Exit(1)
        return
    for case in cases:
        typer.echo(f"{'ok  ' if case.ok else 'FAIL'}  {case.file}: {case.name}")
        for line in case.failures:
            typer.echo(f"        {line}")
    typer.echo(f"{len(cases) - failed} passed, {failed} failed")
    if failed:
        raise typer.Exit(1)


@app.command()
def post(
    pr: PR_OPT,
    repo: REPO_OPT = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the request and the comment it would send; send nothing.")] = False,
    bot_login: Annotated[Optional[str], typer.Option(
        "--bot-login",
        help="The account whose comment is ours [default: the token's own login (GET /user); "
             "github-actions[bot] when GitHub will not say, as for the Actions GITHUB_TOKEN].")] = None,
    offline: Annotated[bool, typer.Option("--offline", help="A --dry-run that asks GitHub nothing (no token, no listing): the comment it would create.")] = False,
    templates: TEMPLATES_OPT = None,
    format: FORMAT_OPT = "text",
) -> None:
    """Create or update the one sticky comment on the PR.

    Examples:

    \b
      triage post --pr 30433                  # prints e.g. "updated https://github.com/…#issuecomment-…"
      triage post --pr 30433 --dry-run        # the request and the comment, nothing sent
      triage post --pr 30433 --offline        # the same without asking GitHub anything
      triage post --pr 30433 --bot-login my-app[bot]
      triage post --pr 30433 --format json    # {"action": …, "url": …}

    The comment is the markdown report, shortened to GitHub's 65,536-character
    limit if need be (see `triage report --fit`), ending with a hidden marker
    that names the investigation. The comment that carries the marker and was
    written by our account is edited when its body changed and left alone when
    it did not; without one, a comment is created. Comments by anyone else are
    never touched, even when they quote the marker. The repository and PR are
    the investigation's (--repo only picks among investigations).

    The token comes from GITHUB_TOKEN or GH_TOKEN (it is never printed), the API
    from GITHUB_API_URL (default https://api.github.com). Rate limits and
    server errors are retried with backoff, within bounds, and a retry never
    posts a second comment. Posts of one investigation take turns (a lock in
    the knowledge base), and a post that raced past it deletes its own
    duplicate: one comment, however many run at once.
    """
    from triage.github import GitHubClient
    from triage.github.comments import validate_login

    _check_format(format, "text", "json")
    if bot_login is not None:
        validate_login(bot_login)
    with GitHubClient() as client:  # first: a bad GITHUB_API_URL is bad input
        if not (dry_run or offline) and not client.has_token:
            raise InputError("no GitHub token: set GITHUB_TOKEN or GH_TOKEN (a --dry-run works without one)")
        result, body, inv = _post_report(client, pr, repo, bot_login=bot_login, dry_run=dry_run or offline,
                                         offline=offline, templates=templates)
    if format == "json":
        _json_out({"action": result.action, "url": result.url, "repo": inv["repo"], "pr": inv["pr"],
                   "request": result.request, "body": body if result.request is not None else None})
        return
    where = result.url or f"a new comment on {inv['repo']}#{inv['pr']}"
    typer.echo(f"{result.action} {where}")
    if result.request is not None:
        typer.echo(result.request)
        typer.echo("")
        sys.stdout.write(body)


def _post_report(client: Any, pr: int, repo: Optional[str], *, bot_login: Optional[str] = None,
                 dry_run: bool = False, offline: bool = False, templates: Optional[str] = None) -> tuple:
    """Evaluate, render and upsert the sticky comment; record a write (`post`, and `serve`'s workers).

    Returns the PostResult, the body and the investigation's view.
    """
    from datetime import datetime

    from triage.github import upsert_comment
    from triage.kb import store

    url, model = _model(pr, repo, "post")
    body = _fitted(model, templates)
    inv = model["investigation"]
    with store.session(url) as s:
        store.lock_investigation(s, inv["id"])  # one post of an investigation at a time, across processes
        result = upsert_comment(client, inv["repo"], inv["pr"], body, model["marker"],
                                bot_login=bot_login, dry_run=dry_run, offline=offline)
        if result.action in ("created", "updated"):
            since = model["since"]["at"] if model["since"] else None
            store.record_post(s, inv["id"], result.url, result.action,
                              datetime.fromisoformat(since) if since else None)
    return result, body, inv


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port to listen on.", min=0, max=65535)] = 8080,
    workers: Annotated[int, typer.Option("--workers", help="Deliveries worked on at once.", min=1, max=64)] = 4,
    auth: Annotated[Optional[str], typer.Option(
        "--auth", envvar="TRIAGE_DASHBOARD_TOKEN", metavar="TOKEN",
        help="Require 'Authorization: Bearer TOKEN' for the dashboard pages.")] = None,
    insecure_no_signature: Annotated[bool, typer.Option(
        "--insecure-no-signature", help="Accept unsigned webhooks (no TRIAGE_WEBHOOK_SECRET); loopback only.")] = False,
    bot_login: Annotated[Optional[str], typer.Option(
        "--bot-login", help="The account whose comment is ours [default: the App's <slug>[bot], else the token's login].")] = None,
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1, help="Attempts before a delivery is kept as failed.")] = 5,
) -> None:
    """Run the GitHub App: follow CI by webhook, keep the comments current, show a dashboard.

    Examples:

    \b
      triage serve --insecure-no-signature    # local: the dashboard at http://127.0.0.1:8080/
      triage serve --host 0.0.0.0 --workers 8 # behind TLS, with TRIAGE_WEBHOOK_SECRET and TRIAGE_DB set

    POST /webhook takes GitHub's deliveries, signed with TRIAGE_WEBHOOK_SECRET
    (X-Hub-Signature-256; wrong or missing: 401). Each completed workflow run
    or job that an investigation follows (its PR, or its rule file's match:)
    is queued in the knowledge base, answered at once, then recorded as with
    `add-run --from-github`, evaluated, and posted as with `triage post`; a
    failure is retried with backoff, a redelivery changes nothing. GET / lists
    the investigations, /pr/OWNER/NAME/N shows one (N.json: the JSON report),
    /deliveries the failed deliveries, /healthz says it is up.

    GitHub access: as a GitHub App with TRIAGE_APP_ID and TRIAGE_APP_PRIVATE_KEY
    (or TRIAGE_APP_PRIVATE_KEY_FILE), needing pip install 'triage[serve]'; else
    with GITHUB_TOKEN. Secrets and tokens are never logged.
    """
    import os

    from triage.github.comments import validate_login
    from triage.serve.app import Settings, run

    if bot_login is not None:
        validate_login(bot_login)
    secret = os.environ.get("TRIAGE_WEBHOOK_SECRET") or None
    if secret is None and not insecure_no_signature:
        raise InputError("set TRIAGE_WEBHOOK_SECRET to the webhook's secret "
                         "(or, on a loopback address only, pass --insecure-no-signature)")
    url, _ = _open(create=True)
    run(Settings(db_url=url, secret=secret.encode() if secret else None, host=host, port=port, workers=workers,
                 auth=auth, max_attempts=max_attempts, bot_login=bot_login), post=_post_report)


@app.command()
def hypotheses(pr: PR_OPT, repo: REPO_OPT = None, format: FORMAT_OPT = "text", wide: WIDE_OPT = False) -> None:
    """Show the hypotheses and their status as a table.

    Example:

    \b
      triage hypotheses --pr 30433
      triage hypotheses --pr 30433 --wide          # titles and every reason in full
      triage hypotheses --pr 30433 --format json

    Under 120 columns the table shows each hypothesis's first reason, cut to
    fit; --wide shows the titles and every reason.
    """
    from rich.table import Table

    from triage.render.report import STATUS_WORDS

    _check_format(format, "text", "json")
    _, model = _model(pr, repo)
    if format == "json":
        _json_out([{"id": h["id"], "title": h["title"], "parent": h.get("parent"), "status": h["status"],
                    "reasons": [x["reason"] for x in h["summary"]]} for h in model["hypotheses"]])
        return
    inv = model["investigation"]
    console = _console(wide)
    narrow = not wide and console.width < 120
    table = Table(title=_cell(f"{inv['title']} ({inv['repo']}#{inv['pr']})"), title_justify="left", expand=True)
    table.add_column("id", no_wrap=not narrow, overflow="fold")
    if not narrow:
        table.add_column("title")
    table.add_column("status", no_wrap=True)
    table.add_column("evidence", ratio=3)
    for h in model["hypotheses"]:
        reasons = [x["reason"] for x in h["summary"]]
        if narrow:
            more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
            reason = (_shorten(reasons[0], 90) + more) if reasons else "—"
            table.add_row(*map(_cell, (h["tree"] + h["id"], STATUS_WORDS[h["status"]], reason)))
        else:
            table.add_row(*map(_cell, (h["tree"] + h["id"], h["title"], STATUS_WORDS[h["status"]], "; ".join(reasons) or "—")))
    console.print(table)


@app.command()
def history(pr: PR_OPT, repo: REPO_OPT = None, format: FORMAT_OPT = "text") -> None:
    """Show how each hypothesis's status changed, evaluation by evaluation.

    Example:

    \b
      triage history --pr 30433
      triage history --pr 30433 --format json
    """
    from triage.kb import store

    _check_format(format, "text", "json")
    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        _evaluate(s, inv)
        changes = store.status_history(s, inv.id)
        evidence = store.evidence_history(s, inv.id)
        deletions = store.run_deletions(s, inv.id)
    retired = [e for e in evidence if e.retired_at is not None]
    if format == "json":
        _json_out({
            "changes": [{"at": c.at.isoformat(), "hypothesis": c.hypothesis_id, "previous": c.previous,
                         "status": c.status} for c in changes],
            "retired": [{"at": e.retired_at.isoformat(), "hypothesis": e.hypothesis_id, "verdict": e.verdict,
                         "rule": e.rule_id, "reason": e.reason} for e in retired],
            "deleted_runs": [{"at": d.at.isoformat(), "run_id": d.run_id, "config": d.config, "because": d.because,
                              "record": d.record} for d in deletions],
        })
        return
    for c in changes:
        _out(f"{c.at:%Y-%m-%d %H:%M:%S}  {c.hypothesis_id}: {c.previous or '(new)'} → {c.status}")
    if retired:
        typer.echo("\nevidence no longer derived:")
        for e in retired:
            _out(f"  {e.retired_at:%Y-%m-%d %H:%M:%S}  {e.hypothesis_id}: {e.verdict} ({e.rule_id}) {e.reason}")
    if deletions:
        typer.echo("\nruns deleted:")
        for d in deletions:
            _out(f"  {d.at:%Y-%m-%d %H:%M:%S}  {d.run_id} ({d.config}): {d.because}")


def _read_log(path: str, pr: Optional[int], repo: Optional[str], threshold: float, candidates: int) -> Any:
    """Scan a log against the knowledge base's signatures (and, with --pr,
    the investigation's extractors), with a progress bar on a terminal."""
    from triage.ingest import logread
    from triage.ingest.logs import open_log
    from triage.kb import store

    if not 0 < threshold <= 100:
        raise InputError(f"--threshold {threshold:g}: expected a score above 0 and at most 100")
    url, _ = _open(create=True)
    with store.session(url) as s:
        matcher = logread.matcher_of(s, threshold)
        extractors = logread.extractors_of(s, store.find_investigation(s, pr, repo)) if pr is not None else []
    if matcher is None:
        raise InputError("no signatures in the knowledge base: declare some under `signatures:` in a rule file")
    with open_log(path) as log, _progress(f"scanning {path}", log.progress()[1]) as update:
        tick = (lambda: update(log.progress()[0])) if update is not None else None
        found = logread.scan_log(log, matcher, extractors, candidates=candidates, progress=tick)
    if log.lines_cut:
        _err(logread.cut_note(log))
    if found.matches_left_out:
        _err(f"scan: {len(found.matches):,} matching lines kept; reading stopped there")
    return matcher, found


THRESHOLD_OPT = Annotated[float, typer.Option("--threshold", help="Lowest fuzzy score (0-100) that counts as a match.")]


@app.command()
def scan(
    log: Annotated[str, typer.Argument(help="A log file, plain or gzip (- for stdin).")],
    pr: Annotated[Optional[int], typer.Option("--pr", help="Also apply this investigation's extractors.", min=1, max=MAX_PR)] = None,
    threshold: THRESHOLD_OPT = 88.0,
    format: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    candidates: Annotated[int, typer.Option("--candidates", help="At most this many unmatched error lines.", min=0)] = 50,
    repo: REPO_OPT = None,
) -> None:
    """Find known failures in a log, and the error lines no signature knows.

    Examples:

    \b
      triage scan job.log
      triage scan job.log.gz --pr 30433 --format json
      gh run view 28903343346 --log | triage scan -

    Each match shows its line number, the signature and its class, the score
    (100 for exact and regex matches) and how it matched; then come the
    error-looking lines that match no signature, deduplicated: candidates
    for a new one (`triage signatures suggest LOG` drafts them). Lines are
    normalised first (timestamps, ranks, numbers, paths), so the same error
    with another model name or rank still matches. The log is streamed.
    """
    from triage.ingest.logread import shown

    if format not in ("text", "json"):
        raise InputError(f"--format {format!r}: expected text or json")
    matcher, found = _read_log(log, pr, repo, threshold, candidates)
    classes = {x.id: x.cls for x in matcher.signatures}

    ex = found.extracted
    if format == "json":
        import json

        doc = {
            "log": log,
            "matches": [{"line": m.line_no, "signature": m.signature_id, "class": classes[m.signature_id],
                         "score": round(m.score, 1), "how": m.how, "text": shown(m.line)} for m in found.matches],
            "candidates": [{"line": no, "text": shown(line)} for no, line in found.candidates],
        }
        if pr is not None:
            doc["extracted"] = {
                "metrics": {k: {"value": v} | ({"n": n} if n is not None else {}) for k, (v, n) in sorted(ex.metrics.items())},
                "provenance": dict(sorted(ex.provenance.items())),
                "status": ex.status,
                "found": [{"line": no, "extractor": ident, "text": shown(text)} for no, ident, text in ex.found],
            }
        typer.echo(json.dumps(doc, ensure_ascii=False, indent=2))
        return
    out: list[str] = []
    if found.matches:
        width = max(len(m.signature_id) for m in found.matches)
        cwidth = max(len(classes[m.signature_id]) for m in found.matches)
        lwidth = len(str(found.matches[-1].line_no))
        out.append(f"known failures ({len(found.matches)}):")
        for m in found.matches:
            out.append(f"  {m.line_no:>{lwidth}}  {m.signature_id:<{width}}  {classes[m.signature_id]:<{cwidth}}  "
                       f"{m.score:>3.0f} {m.how:<5}  {shown(m.line)}")
    else:
        out.append("known failures: none")
    if found.candidates:
        lwidth = len(str(found.candidates[-1][0]))
        out.append(f"unmatched error lines ({len(found.candidates)}; `triage signatures suggest {log}` drafts signatures):")
        out += [f"  {no:>{lwidth}}  {shown(line)}" for no, line in found.candidates]
    elif candidates:
        out.append("unmatched error lines: none")
    if pr is not None:
        out.append("extracted:" + ("" if ex.found else " nothing"))
        out += [f"  {no}  {ident}: {shown(text)}" for no, ident, text in ex.found]
    _out("\n".join(out))


@signatures_app.command("suggest")
def signatures_suggest(
    log: Annotated[str, typer.Argument(help="A log file, plain or gzip (- for stdin).")],
    limit: Annotated[int, typer.Option("--limit", help="At most this many drafts.", min=1)] = 10,
    threshold: THRESHOLD_OPT = 88.0,
) -> None:
    """Draft signatures from the error lines of a log that no signature knows.

    Example:

    \b
      triage signatures suggest job.log >> drafts.yaml

    Prints YAML ready to paste under `signatures:` in a rule file: each
    draft's text is the line with its timestamps, ranks, numbers and paths
    masked, and its class is a guess; fill in meaning and remedy.
    """
    import yaml

    from triage.ingest.signatures import draft

    _, found = _read_log(log, None, None, threshold, limit)
    if not found.candidates:
        _err(f"no unmatched error lines in {log}")
        return
    drafts, ids = [], set()
    for no, line in found.candidates:
        d = draft(line)
        base, k = d["id"], 2
        while d["id"] in ids:
            d["id"], k = f"{base}-{k}", k + 1
        ids.add(d["id"])
        body = yaml.safe_dump([d], sort_keys=False, allow_unicode=True, width=1000)
        drafts.append(f"# {log}:{no}\n{body}")
    typer.echo(f"# {len(drafts)} draft(s): check the class, fill in meaning and remedy, paste under `signatures:`")
    typer.echo("".join(drafts), nl=False)


@signatures_app.command("list")
def signatures_list() -> None:
    """List the known-failure signatures in the knowledge base.

    Example:

    \b
      triage signatures list
    """
    from rich.console import Console
    from rich.table import Table

    from triage.ingest.logread import signature_from_spec
    from triage.kb import store

    url, _ = _open(create=True)
    with store.session(url) as s:
        specs = store.signature_specs(s)
    table = Table(expand=True)
    table.add_column("id", no_wrap=True)
    table.add_column("class", no_wrap=True)
    table.add_column("text (or /regex/)", ratio=3)
    table.add_column("meaning", ratio=2)
    for d in specs:
        sig = signature_from_spec(d)
        table.add_row(*map(_cell, (sig.id, sig.cls, f"/{sig.text}/" if sig.regex else sig.text, sig.meaning)))
    Console(highlight=False).print(table)


def _runs_limit(value: str) -> Optional[int]:
    """``--runs``: a count of newest runs, or ``all`` (None)."""
    if value.strip().lower() == "all":
        return None
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise InputError(f"--runs {value}: give a number of runs (0 or more) or all")
    return n


RECORDS_FORMAT_OPT = Annotated[Optional[str], typer.Option("--format", "-f", help="jsonl or csv [default: by the file's extension; jsonl].")]


@app.command("import")
def import_(
    file: Annotated[str, typer.Argument(help="A JSON Lines or CSV file of run records (- for stdin).")],
    pr: Annotated[Optional[int], typer.Option("--pr", help="Investigation for records that do not name one.", min=1, max=MAX_PR)] = None,
    format: RECORDS_FORMAT_OPT = None,
    repo: REPO_OPT = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace runs even with older records (by updated_at).")] = False,
) -> None:
    """Import run records; all or nothing, idempotent.

    Examples:

    \b
      triage import examples/kimik26-disagg.runs.jsonl
      triage import runs.csv --pr 30433

    JSON Lines: one JSON object a line (what `triage export` writes). CSV: a
    header, then one run a row, with metric.NAME, metric.NAME/n and prov.KEY
    columns (see the README). A record replaces the run with the same run
    id and config, unless the stored run is newer (its updated_at is later
    than the record's): that record is skipped and counted as older, and
    --overwrite replaces it anyway. A bad record names its line and nothing
    from the file is kept. The investigation is evaluated once, after the import.
    """
    from triage.ingest.importer import guess_format, import_file
    from triage.kb import store

    fmt = guess_format(file, format)
    url, _ = _open(create=True)
    with store.session(url) as s:
        default = store.find_investigation(s, pr, repo).id if pr is not None else None
        total = None if file == "-" else (os.path.getsize(file) if os.path.isfile(file) else None)
        with _progress(f"importing {file}", total) as update:
            tick = (lambda done, _size: update(done)) if update is not None else None
            result = import_file(s, file, default_investigation=default, fmt=fmt, progress=tick, overwrite=overwrite)
        for iid in result.investigations:
            _evaluate(s, store.find_investigation(s, ident=iid))
    older = f", {result.older} older (kept the newer)" if result.older else ""
    typer.echo(f"imported {result.total} run(s) from {file}: {result.created} new, {result.updated} updated{older}")


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
    import io

    from triage.ingest.importer import guess_format
    from triage.ingest.records import dumps, run_to_record, write_csv
    from triage.kb import store

    fmt = guess_format(str(output) if output is not None else "-", format)
    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        records = [run_to_record(r) for r in store.runs_of(s, inv.id)]
    if fmt == "csv":
        buf = io.StringIO()
        write_csv(records, buf)
        text = buf.getvalue()
    else:
        text = "".join(dumps(rec) + "\n" for rec in records)
    _write(text, output)


@runs_app.command("list")
def runs_list(pr: PR_OPT, repo: REPO_OPT = None, format: FORMAT_OPT = "text", wide: WIDE_OPT = False) -> None:
    """List an investigation's runs.

    Example:

    \b
      triage runs list --pr 30433
      triage runs list --pr 30433 --format json
    """
    from rich.table import Table

    from triage.kb import store

    _check_format(format, "text", "json")
    url, _ = _open()
    with store.session(url) as s:
        inv = store.find_investigation(s, pr, repo)
        rows = store.runs_of(s, inv.id)
        prefix = inv.spec.get("config_prefix") if isinstance(inv.spec, dict) else None
    if format == "json":
        _json_out([{"run_id": r.run_id, "config": r.config, "status": r.status, "metrics": r.metrics,
                    "provenance": r.provenance, "time": r.time.isoformat() if r.time else None, "url": r.url,
                    "note": r.note, "signature": r.signature_id, "excluded": r.excluded,
                    "excluded_reason": r.excluded_reason} for r in rows])
        return
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
    from triage.kb import store

    url, _ = _open()
    with store.session(url) as s:
        inv, hits = _find_run(s, pr, repo, run, config)
        for r in hits:
            store.upsert_run(s, r.investigation_id, store.RunInput(
                run_id=r.run_id, config=r.config, excluded=excluded, excluded_reason=because if excluded else ""))
        _evaluate(s, inv)
    word = "excluded" if excluded else "included again"
    for r in hits:
        _out(f"{word}: {r.run_id} ({r.config})")


def _find_run(s: Any, pr: Optional[int], repo: Optional[str], run: str, config: Optional[str]) -> tuple[Any, list]:
    """The investigation and the legs of ``run`` (every leg unless ``config``); exactly one investigation."""
    from triage.kb import store

    invs = [store.find_investigation(s, pr, repo)] if pr is not None else store.list_investigations(s)
    hits = [(inv, r) for inv in invs for r in store.find_runs(s, inv.id, run, config)]
    if not hits:
        leg = f" with config {config}" if config else ""
        raise InputError(f"no run {run}{leg} in the knowledge base")
    if len({inv.id for inv, _ in hits}) > 1:
        raise InputError(f"run {run} is in several investigations: add --pr")
    return hits[0][0], [r for _, r in hits]


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
    from triage.kb import store

    if not because.strip():
        raise InputError("--because must say why")
    url, _ = _open()
    with store.session(url) as s:
        inv, hits = _find_run(s, pr, repo, run, config)
        store.delete_runs(s, hits, because)
        _, _, changed = _evaluate(s, inv)
        deleted = [(r.run_id, r.config) for r in hits]
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
    from triage.kb import store
    from triage.rules.schema import THEN_ALIASES

    if verdict not in THEN_ALIASES:
        raise InputError(f"--verdict {verdict!r}: expected rules_out, confirms, supports or inconclusive")
    _record_by_hand(pr, repo, because, f"recorded manual evidence for {hypothesis}: {THEN_ALIASES[verdict]}",
                    lambda s, iid: store.add_manual_evidence(s, iid, hypothesis, THEN_ALIASES[verdict], because,
                                                             author, run or []))


@db_app.command("status")
def db_status() -> None:
    """Show the knowledge base's schema version and whether it needs an upgrade.

    Example:

    \b
      triage db status

    Changes nothing. A knowledge base with no version, or one this triage
    does not know, is an error (exit 1) that says what to do.
    """
    from triage.kb import migrate, store

    url = store.resolve_url(state.db)
    engine = store.get_engine(url, upgrade=False)
    try:
        found = migrate.prepare(engine, store._safe(url), upgrade=False)
    finally:
        engine.dispose()
    if found.state == "empty":
        typer.echo(f"schema version: none yet (empty); the first command creates it at version {found.head}")
    elif found.state == "older":
        typer.echo(f"schema version {found.version}, this triage writes {found.head}: "
                   "`triage db upgrade` upgrades it (so does any other command)")
    else:
        typer.echo(f"schema version {found.version}: up to date")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Upgrade the knowledge base to this triage's schema version.

    Example:

    \b
      triage db upgrade

    All migrations run in one transaction; a SQLite file is first copied
    next to itself (kb.sqlite.v1.bak). Any command upgrades an older
    knowledge base the same way when it opens it.
    """
    from triage.kb import migrate, store

    url = store.resolve_url(state.db)
    engine = store.get_engine(url, upgrade=False)
    try:
        found = migrate.prepare(engine, store._safe(url), notify=typer.echo)
    finally:
        engine.dispose()
    if found.state == "empty":
        typer.echo(f"created the knowledge base at schema version {found.head}")
    elif found.state == "current":
        typer.echo(f"schema version {found.head}: up to date, nothing to do")


# --------------------------------------------------------------------------
# The edge: every error becomes one clear message and an exit code.


def _usage_errors() -> Any:
    from typer._click import exceptions  # typer vendors click from 0.29 on (pinned)

    return exceptions


GLOBAL_OPTIONS = ("--db", "--rules")


def hoist_global_options(argv: list[str]) -> list[str]:
    """Move ``--db``/``--rules`` given after the subcommand to before it, so
    ``triage report --pr 1 --db x.sqlite`` means what it says."""
    out: list[str] = []
    moved: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out += argv[i:]
            break
        name = arg.partition("=")[0]
        if name in GLOBAL_OPTIONS and out:
            if "=" in arg:
                moved.append(arg)
                i += 1
                continue
            if i + 1 < len(argv):
                moved += argv[i:i + 2]
                i += 2
                continue
        out.append(arg)
        i += 1
    return moved + out


def main(argv: Optional[list[str]] = None) -> None:
    click = _usage_errors()
    argv = hoist_global_options(list(sys.argv[1:] if argv is None else argv))
    try:
        rv = app(args=argv, prog_name="triage", standalone_mode=False)
    except click.UsageError as e:
        where = e.ctx.command_path if e.ctx is not None else "triage"
        _err(f"Error: {e.format_message()} (see '{where} --help')")
        raise SystemExit(2) from None
    except click.ClickException as e:
        _err(f"Error: {e.format_message()}")
        raise SystemExit(e.exit_code) from None
    except typer.Abort:
        _err("Aborted.")
        raise SystemExit(130) from None
    except TriageError as e:
        lines = e.lines()
        if len(lines) == 1:
            _err(f"Error: {lines[0]}")
        else:
            for line in lines:
                _err(line)
            _err(f"Error: {len(lines)} problems; nothing was loaded")
        raise SystemExit(e.exit_code) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as e:  # the database or another library failed
        from sqlalchemy.exc import SQLAlchemyError

        if isinstance(e, SQLAlchemyError):
            detail = " ".join(str(getattr(e, "orig", None) or e).split())
            _err(f"Error: the knowledge base failed: {detail}")
            raise SystemExit(1) from None
        raise
    raise SystemExit(rv if isinstance(rv, int) else 0)
