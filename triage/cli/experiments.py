"""Commands about the next experiment: replay, autopilot."""

from __future__ import annotations

import sys
from typing import Annotated, List, Optional

import typer

from triage.cli.base import (
    PR_OPT,
    REPO_OPT,
    _github,
    _open,
    app,
)
from triage.errors import InputError


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
    from triage.rules.next.replay import trace
    from triage.usecases.lookup import replay as lookup

    url, _ = _open()
    rp, prefix = lookup(url, pr, repo, start, _pairs(target, "--target"), _pairs(bisect_, "--bisect"),
                        leave_out or [], orders=orders, seed=seed)
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
    from triage.usecases.autopilot import run_for
    from triage.kb import store

    url, _ = _open(writes=not dry_run)
    with store.session(url) as s:
        iid = store.find_investigation(s, pr, repo).id
    if dry_run:
        step = run_for(url, iid, None, dry_run=True)
    else:
        with _github() as client:
            if not client.has_token:
                raise InputError("no GitHub token: set GITHUB_TOKEN or GH_TOKEN (a --dry-run works without one)")
            step = run_for(url, iid, client)
    sys.stdout.write(step.text())
