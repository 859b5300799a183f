"""Commands that read an investigation: report, bisect (and bisect mark), similar, hypotheses, history."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Callable, List, Optional

import typer

from triage.cli.base import (
    FORMAT_OPT,
    PR_OPT,
    REPO_OPT,
    SINCE_HELP,
    TEMPLATES_OPT,
    WIDE_OPT,
    _cell,
    _check_format,
    _console,
    _fitted,
    _json_out,
    _model,
    _open,
    _out,
    _print_changes,
    _ready_to_evaluate,
    _runs_limit,
    _templates,
    _terminal,
    _write,
    app,
)
from triage.errors import InputError


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

    def emit(model: dict) -> None:  # in the command's transaction: a failed write writes nothing
        if format == "json":
            text = render.to_json(model)
        elif format == "text":
            width, color = _terminal(output)
            text = render.to_text(model, width=width, color=color)
        elif fit:
            text = _fitted(model, templates)
        else:
            text = render.to_markdown(model, _templates(templates))
        _write(text, output)

    _model(pr, repo, since, runs=_runs_limit(runs), full=full, emit=emit, json=format == "json")


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
    run of an outcome that is no result (crashed, timeout, oom, cancelled, infra,
    unless the investigation's failure: declares it), excluded or a known
    failure skips its point, never makes it bad; two runs of one point with different verdicts make it
    flaky.  The next point is the midpoint of the untested points between last
    good and first bad; with the bisect's run: template, its command is shown.
    A good_when of only `status:` judges each run by its verdict; a valid run
    without the number good_when compares is "no number"; `triage bisect mark`
    judges a point by hand.
    """
    import json

    from triage.render import report as render
    from triage.usecases.lookup import bisects

    if ctx.invoked_subcommand is not None:
        return
    if pr is None:
        raise InputError("--pr is required: the PR (or issue) number of the investigation")
    _check_format(format, "text", "json")
    url, _ = _open()
    _ready_to_evaluate()
    model = bisects(url, pr, repo, id_)
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
    from triage.usecases import byhand

    byhand.check_mark(verdict, because)
    _by_hand(lambda url: byhand.mark(url, pr, repo, bisect_id, point, verdict, because, author))


def _by_hand(record: Callable[[str], tuple[str, dict]]) -> None:
    """Record something judged by hand (a use case of :mod:`triage.usecases.byhand` on the
    knowledge base's URL), which evaluates again; say what it did and what changed."""
    url, _ = _open(create=True)  # recording by hand is recording: a new investigation may start here
    _ready_to_evaluate()
    said, changed = record(url)
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

    from triage.usecases.lookup import similar as lookup

    _check_format(format, "text", "json")
    url, _ = _open()
    _ready_to_evaluate()
    targets, matches = lookup(url, pr, repo, hypothesis, undecided=all_, min_score=min_score)
    if format == "json":
        typer.echo(json.dumps(matches, indent=2, ensure_ascii=False))
        return
    if not targets:
        typer.echo("Every open hypothesis has a recipe; name one with --hypothesis or use --all.")
        return
    from triage.render.report import similar_to_text

    sys.stdout.write(similar_to_text(targets, matches, min_score))


@app.command()
def hypotheses(pr: PR_OPT, repo: REPO_OPT = None, format: FORMAT_OPT = "text", wide: WIDE_OPT = False) -> None:
    """Show the hypotheses and their status as a table.

    Example:

    \b
      triage hypotheses --pr 30433
      triage hypotheses --pr 30433 --wide          # titles and every reason in full
      triage hypotheses --pr 30433 --format json

    The table fits the terminal: each hypothesis's first reason, cut to two
    lines (with how many more there are); the titles from 160 columns on;
    --wide shows the titles and every reason.
    """
    from triage.render.hypotable import hypotheses_table

    _check_format(format, "text", "json")
    _, model = _model(pr, repo)
    if format == "json":
        _json_out([{"id": h["id"], "title": h["title"], "parent": h.get("parent"), "status": h["status"],
                    "reasons": [x["reason"] for x in h["summary"]]} for h in model["hypotheses"]])
        return
    console = _console(wide)
    console.print(hypotheses_table(model, console.width, wide, _cell))


@app.command()
def history(pr: PR_OPT, repo: REPO_OPT = None, format: FORMAT_OPT = "text") -> None:
    """Show how each hypothesis's status changed, evaluation by evaluation, and the
    /triage commands taken from PR comments (who, what came of it, the comment).

    Example:

    \b
      triage history --pr 30433
      triage history --pr 30433 --format json
    """
    from triage.usecases.lookup import history as lookup

    _check_format(format, "text", "json")
    url, _ = _open()
    _ready_to_evaluate()
    found = lookup(url, pr, repo)
    changes, retired, deletions, commands = (found[k] for k in ("changes", "retired", "deleted_runs", "commands"))
    if format == "json":
        _json_out({
            "changes": [{"at": c.at.isoformat(), "hypothesis": c.hypothesis_id, "previous": c.previous,
                         "status": c.status} for c in changes],
            "retired": [{"at": e.retired_at.isoformat(), "hypothesis": e.hypothesis_id, "verdict": e.verdict,
                         "rule": e.rule_id, "reason": e.reason} for e in retired],
            "deleted_runs": [{"at": d.at.isoformat(), "run_id": d.run_id, "config": d.config, "because": d.because,
                              "record": d.record} for d in deletions],
            "commands": [{"at": c.at.isoformat(), "author": c.author, "line": c.line, "outcome": c.outcome,
                          "detail": c.detail, "url": c.url} for c in commands],
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
    if commands:
        typer.echo("\ncommands from comments:")
        for c in commands:
            _out(f"  {c.at:%Y-%m-%d %H:%M:%S}  {c.author}: {c.line} → {c.outcome}"
                 + (f" ({c.detail})" if c.detail else "") + f"  {c.url}")
