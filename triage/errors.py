"""One exception family for everything triage reports to a user.

Each error carries the process exit code it maps to at the command edge:
2 for bad input (flags, values, rule files, records), 3 when no investigation
names the PR asked for, 1 for runtime failures (network, database, remote
API).  The CLI prints ``Error: <message>`` (or one line per problem for rule
files) and exits with that code, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


class TriageError(Exception):
    """Base class: a failure with a message meant for the user."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def lines(self) -> list[str]:
        """The lines to print, without the ``Error:`` prefix."""
        return [self.message]


class InputError(TriageError):
    """Bad input from the user: a flag, a value, a record, a file. Exit 2."""

    exit_code = 2


class NoInvestigation(InputError):
    """No investigation names the PR (or repository) asked for. Exit 3, so that a
    workflow can tell "not ours, nothing to do" from a mistake (2)."""

    exit_code = 3


class RuntimeFailure(TriageError):
    """The input was fine but the work failed (database, network). Exit 1."""

    exit_code = 1


@dataclass(frozen=True, order=True)
class Problem:
    """One problem in a rule file, located at ``path:line:col`` (1-based)."""

    path: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"


class RuleFileError(InputError):
    """One or more rule files were refused; every problem is listed."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]
