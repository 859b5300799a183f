"""The command line's shared parts: the app, global options, opening the knowledge base,
printing, and the edge where every error becomes one message and an exit code."""

from __future__ import annotations

import copy
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Callable, Iterator, List, Optional

import typer

from triage import __version__
from triage.cli import coerce
from triage.errors import InputError, TriageError
from triage.settings import Settings

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


coerce.install()  # plain values taken without a pydantic validator each (triage.cli.coerce)

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
    settings: Settings = Settings()  # the environment's, read as each command starts (:func:`_root`)
    db: Optional[str] = None
    rules: Optional[list[str]] = None
    created: Optional[Path] = None  # the SQLite file this command started: gone again if it fails
    commits: int = 0  # commits of the knowledge base before this command
    command: str = "this command"  # its name, as typed (``runs exclude``)


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
    from triage import limits
    from triage.rules.language import kept

    state.settings = Settings.from_env()  # once per command: what the environment says now
    limits.configure(state.settings)
    kept.use(state.settings.cache_dir)  # definitions read back from the knowledge base, validated once
    state.db = db or state.settings.db
    state.rules = rules


def _rule_paths() -> list[str]:
    if state.rules:
        return list(state.rules)
    if state.settings.rules is not None:
        return list(state.settings.rules)
    return ["rules"] if Path("rules").is_dir() else []


def _open(create: bool = False, *, writes: Optional[bool] = None) -> tuple[str, Any]:
    """Validate rule files (nothing written if any is bad), then sync them.

    Only commands that write (``create``: add-run, import, runs exclude,
    include and delete, evidence add, bisect mark) or read rule files alone
    (scan, signatures) may start a new SQLite knowledge base; any other says
    there is none.  One that fails leaves no new file behind (:func:`main`).
    A knowledge base this process cannot write to is refused to a command
    that ``writes`` (by default, one that may ``create``), and read by any
    other from a private copy (:mod:`triage.kb.readonly`)."""
    from triage.kb import store
    from triage.rules.language.cache import CachedSet, load_rules

    paths = _rule_paths()
    ruleset = load_rules(paths, state.settings.cache_dir) if paths else CachedSet([])  # the loader only for a changed file
    url = _readable(store.resolve_url(state.db), create if writes is None else writes)
    missing = store.missing_file(url)
    if create:
        state.created, missing = missing, None
    if missing is not None:
        raise InputError(f"no knowledge base at {missing}: record runs first (`triage import FILE` or "
                         "`triage add-run …`), or name one with --db or TRIAGE_DB")
    store.sync_on_open(url, ruleset)
    return url, ruleset


def _github() -> Any:
    """A GitHub client of ``GITHUB_API_URL`` with the token of ``GITHUB_TOKEN``/``GH_TOKEN``
    (a bad URL or token is bad input)."""
    from triage.github import GitHubClient

    return GitHubClient(state.settings.github_api_url, state.settings.github_token)


def _readable(url: str, writes: bool) -> str:
    """``url``, or when this process cannot write to it, a private copy to read
    (a command that ``writes`` is refused: bad input)."""
    from triage.kb import readonly

    if not readonly.cannot_write(url):
        return url
    if writes:
        raise readonly.refuse(url, state.command)
    return readonly.private_copy(url)


def _ready_to_evaluate() -> None:
    """Import what an evaluation runs before a command that evaluates begins
    writing: imported under its write lock, every other writer would wait
    for the imports too (a third of the time the lock is held, at 800 runs)."""
    import triage.kb.pieces  # noqa: F401
    import triage.kb.runsource  # noqa: F401
    import triage.kb.snapshot  # noqa: F401
    import triage.render.report  # noqa: F401
    import triage.rules.engine.evaluate  # noqa: F401


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
    with _writing(output) as write:
        write(text)


@contextmanager
def _writing(output: Optional[Path]) -> Iterator[Callable[[str], Any]]:
    """``write(text)`` for the body to give its output to, a piece at a time: standard output
    (``output`` None or ``-``), or the file ``output``, written whole or not at all (a file
    beside it replaces it once the body is done; a body that fails leaves it as it was)."""
    if output is None or str(output) == "-":
        yield (lambda text: sys.stdout.write(_safe(text))) if sys.stdout.isatty() else sys.stdout.write
        return
    try:
        if output.exists() and not output.is_file():  # a device or a pipe (/dev/null, a FIFO): write to it
            with output.open("w", encoding="utf-8") as fh:
                yield fh.write
        else:  # a file: whole or not at all
            tmp = output.with_name(output.name + ".tmp")
            try:
                with tmp.open("w", encoding="utf-8") as fh:
                    yield fh.write
                tmp.replace(output)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
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
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=total)
        yield lambda completed: bar.update(task, completed=completed)


def _model(pr: int, repo: Optional[str], since: Optional[str] = None, *, runs: Optional[int] = 50,
           full: bool = False, emit: Optional[Callable[[dict], None]] = None,
           writes: bool = False, json: bool = False) -> tuple[str, dict]:
    """The knowledge base's URL and one investigation's view (:func:`triage.usecases.report.view`);
    ``writes``: the command goes on to write (post); ``json``: ``emit`` prints the JSON report alone."""
    from triage.usecases.report import view

    url, _ = _open(writes=writes)
    return url, view(url, pr, repo, since, runs=runs, full=full, emit=emit, settings=state.settings, json=json)


def _templates(given: Optional[str]) -> tuple[str, ...]:
    """The directories whose templates override ours: ``--templates``, then ``TRIAGE_TEMPLATES``."""
    return tuple(d for d in (given, state.settings.templates) if d)


def _fitted(model: dict, templates: Optional[str]) -> str:
    """The comment as posted: shortened to GitHub's limit, saying so on stderr."""
    from triage.usecases.post import fitted

    body, left_out = fitted(model, _templates(templates))
    if left_out:
        _err(f"shortened to fit GitHub's comment limit: {left_out}")
    return body


FORMAT_OPT = Annotated[str, typer.Option("--format", "-f", help="text or json.")]


WIDE_OPT = Annotated[bool, typer.Option("--wide", help="Every column in full, whatever the terminal's width.")]


def _json_out(data: Any) -> None:
    import json

    from triage.render import jsonout

    try:  # the same text at C speed (json.dumps indents in Python: seconds for a hundred thousand runs)
        text = jsonout.dumps(data)
    except TypeError:  # a value JSON has no word for: as text
        text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    typer.echo(text)


def _console(wide: bool = False) -> Any:
    """A console that prints stored text as text (no markup), at the terminal's width."""
    from rich.console import Console

    return Console(highlight=False, markup=False, emoji=False, width=200 if wide else None)


#: PR numbers are 32-bit integers in the knowledge base (PostgreSQL's integer).


MAX_PR = 2**31 - 1


PR_OPT = Annotated[int, typer.Option("--pr", help="The PR (or issue) number of the investigation.", min=1, max=MAX_PR)]


REPO_OPT = Annotated[Optional[str], typer.Option("--repo", help="OWNER/NAME, where several investigations share a PR number.")]


TEMPLATES_OPT = Annotated[Optional[str], typer.Option("--templates", help="A directory whose templates override ours [env: TRIAGE_TEMPLATES].")]


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

        return max(80, shutil.get_terminal_size().columns), state.settings.color
    return 110, False


SINCE_HELP = "Add a 'new since' line: last-post, an ISO 8601 time, or an age such as 12h, 2d, 1w."


def _runs_limit(value: str, option: str = "--runs") -> Optional[int]:
    """``--runs`` (or ``option``): a count of newest runs, or ``all`` (None)."""
    if value.strip().lower() == "all":
        return None
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise InputError(f"{option} {value}: give a number of runs (0 or more) or all")
    return n


RECORDS_FORMAT_OPT = Annotated[Optional[str], typer.Option("--format", "-f", help="jsonl or csv [default: by the file's extension; jsonl].")]


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


def _command_at(argv: list[str]) -> Optional[int]:
    """Where the command's name is in ``argv``, after the global options (None: nowhere)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in GLOBAL_OPTIONS:
            i += 2
        elif arg.partition("=")[0] in GLOBAL_OPTIONS:
            i += 1
        elif arg.startswith("-"):
            return None
        else:
            return i
    return None


def _command_name(argv: list[str]) -> str:
    """The command ``argv`` names, with its subcommand (``runs exclude``)."""
    i = _command_at(argv)
    if i is None:
        return "this command"
    words = argv[i:i + 2] if any(g.name == argv[i] for g in app.registered_groups) else argv[i:i + 1]
    return " ".join(w for w in words if not w.startswith("-"))


def narrowed(argv: list[str]) -> typer.Typer:
    """``app`` with only the command (or group of commands) ``argv`` names: typer
    builds every registered command's parameters from its signature before it
    parses anything, a cost of its own on every run. Anything else (no command,
    ``--help``, ``--version``, a name that is not a command) gets the whole app,
    with its listing and its suggestions."""
    i = _command_at(argv)
    if i is None:
        return app
    name = argv[i]
    commands = [c for c in app.registered_commands
                if (c.name or typer.main.get_command_name(c.callback.__name__)) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if len(commands) + len(groups) != 1:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = commands, groups
    return only


def main(argv: Optional[list[str]] = None) -> None:
    """``triage ARGV``: exits with the command's code; a command that fails
    leaves no knowledge base it created behind."""
    state.created, state.commits = None, _commits()
    try:
        _main(argv)
    except SystemExit as e:
        if e.code not in (0, None) and state.created is not None:
            from triage.kb import store

            store.discard_new(state.created)
        raise


def _main(argv: Optional[list[str]]) -> None:
    click = _usage_errors()
    argv = hoist_global_options(list(sys.argv[1:] if argv is None else argv))
    state.command = _command_name(argv)
    try:
        rv = narrowed(argv)(args=argv, prog_name="triage", standalone_mode=False)
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
        _interrupted()
    except Exception as e:  # the database or another library failed
        from sqlalchemy.exc import SQLAlchemyError

        if isinstance(e, SQLAlchemyError):
            detail = " ".join(str(getattr(e, "orig", None) or e).split())
            _err(f"Error: the knowledge base failed: {detail}")
            raise SystemExit(1) from None
        raise
    if rv == INTERRUPTED:  # typer turns Ctrl-C into this exit code
        _interrupted()
    raise SystemExit(rv if isinstance(rv, int) else 0)


INTERRUPTED = 130


def _interrupted() -> None:
    """Ctrl-C: say what was written (each command's writes are one transaction, rolled back)."""
    _err("interrupted: nothing was written" if not _committed() else
         "interrupted: what was written before the interruption stays; run the command again for the rest")
    raise SystemExit(INTERRUPTED) from None


def _commits() -> int:
    """Sessions committed so far by this process (:func:`triage.kb.db.session`)."""
    db = sys.modules.get("triage.kb.db")  # not imported: nothing committed
    return db.commits() if db is not None else 0


def _committed() -> bool:
    """Whether this command committed a write."""
    return _commits() > state.commits
