"""Commands over logs: scan, signatures suggest|list."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from triage.cli.base import (
    MAX_PR,
    REPO_OPT,
    _cell,
    _err,
    _open,
    _out,
    _progress,
    app,
    signatures_app,
)
from triage.errors import InputError


def _read_log(path: str, pr: Optional[int], repo: Optional[str], threshold: float, candidates: int) -> Any:
    """Scan a log (:func:`triage.usecases.scan.scan`), with a progress bar on a terminal."""
    from triage.usecases.scan import check_threshold, scan

    check_threshold(threshold)
    url, _ = _open(create=True, writes=False)  # reads (a read-only knowledge base too)
    return scan(url, path, pr=pr, repo=repo, threshold=threshold, candidates=candidates, note=_err,
                progress=lambda size: _progress(f"scanning {path}", size))


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

    from triage.usecases.scan import drafts as draft_signatures

    _, found = _read_log(log, None, None, threshold, limit)
    if not found.candidates:
        _err(f"no unmatched error lines in {log}")
        return
    drafts = [f"# {log}:{no}\n" + yaml.safe_dump([d], sort_keys=False, allow_unicode=True, width=1000)
              for no, d in draft_signatures(found)]
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

    from triage.usecases.scan import signatures

    url, _ = _open(create=True, writes=False)  # reads (a read-only knowledge base too)
    found = signatures(url)
    table = Table(expand=True)
    table.add_column("id", no_wrap=True)
    table.add_column("class", no_wrap=True)
    table.add_column("text (or /regex/)", ratio=3)
    table.add_column("meaning", ratio=2)
    for sig in found:
        table.add_row(*map(_cell, (sig.id, sig.cls, f"/{sig.text}/" if sig.regex else sig.text, sig.meaning)))
    Console(highlight=False).print(table)
