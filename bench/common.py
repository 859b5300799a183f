"""What the benchmarks share: the table of results and the verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Sequence


def compile_bytecode() -> None:
    """Compile triage's modules to bytecode before anything is timed.

    An installed triage writes its bytecode on its first run and reads it after;
    where ``PYTHONDONTWRITEBYTECODE`` is set (some CI images and sandboxes) it never
    does, and every command would compile its modules from source again (about
    0.1 s a process).  The benchmarks measure commands as they run after the first."""
    package = Path(__file__).resolve().parent.parent / "triage"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True,
                   stdout=subprocess.DEVNULL)


def print_rows(rows: list[tuple[str, str]]) -> None:
    """Print ``(what, result)`` rows as two aligned columns."""
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


#: The exit status of a benchmark that ran, and measured something over its limit. Any
#: other failure (a command that failed, results that are not what they must be, a
#: crash) exits with 1: ``run_all.py --quick`` tells the two apart.
OVER_LIMIT = 3


def verdict(over: list[str], wrong: Sequence[str] = ()) -> int:
    """Print each failure (or OK) and return the exit status: ``wrong`` (results that
    are not what they must be) 1, else ``over`` (a measure over its limit) :data:`OVER_LIMIT`."""
    for f in wrong:
        print(f"WRONG: {f}")
    for f in over:
        print(f"FAIL: {f}")
    if not over and not wrong:
        print("OK")
    return 1 if wrong else OVER_LIMIT if over else 0
