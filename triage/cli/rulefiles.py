"""Commands about rule files: init, check, test."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from triage.cli.base import (
    FORMAT_OPT,
    _check_format,
    _err,
    _json_out,
    _rule_paths,
    app,
    state,
)
from triage.errors import InputError


@app.command()
def init(
    id_: Annotated[str, typer.Option("--id", help="The investigation id (also the file name).")],
    repo: Annotated[str, typer.Option("--repo", help="OWNER/NAME of the repository.")],
    pr: Annotated[int, typer.Option("--pr", help="The PR (or issue) that tracks the regression.", min=1)],
    metric: Annotated[str, typer.Option("--metric", help="The primary metric (gsm8k, p99_ms, wall_s…).")],
    gate: Annotated[Optional[float], typer.Option("--gate", help="The value the metric must pass, if there is one [default: none: a revert is compared with the bad runs].")] = None,
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
    hypothesis and one recipe, a revert that confirms it when it recovers
    (passes the gate; without --gate, beats the bad runs), plus commented
    examples of a rule, a bisect, a signature and an extractor; and
    rules/tests/ID.test.yaml with two cases.
    """
    from triage.rules.language import scaffold

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
    from triage.kb import store
    from triage.usecases.rulefiles import check as check_files

    _check_format(format, "text", "json")
    targets = [str(p) for p in paths] if paths else _rule_paths()
    if not targets:
        raise InputError("no rule files: give paths, --rules, or create ./rules")
    warnings: list = []
    try:
        files = check_files(targets, store.resolve_url(state.db), warnings)
    except RuleFileError as e:
        if format == "json":
            _json_out({"ok": False, "files": [], "problems": [
                {"path": p.path, "line": p.line, "col": p.col, "message": p.message} for p in e.problems],
                "warnings": [str(w) for w in warnings]})
        raise
    finally:
        for w in warnings:
            _err(str(w))
    if format == "json":
        _json_out({"ok": True, "files": files, "problems": [], "warnings": [str(w) for w in sorted(warnings)]})
        return
    for f in files:
        what = ([f"investigation {f['investigation']}"] if f["investigation"] else [])
        what += [f"{n} {key}" for key, n in f["counts"].items()]
        typer.echo(f"{f['path']}: ok ({', '.join(what) or 'empty'})")
        for said in f["decides"]:
            typer.echo(f"  {said}")


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
    from triage.usecases.ruletests import default_test_dirs, find_test_files, run_test_file

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
