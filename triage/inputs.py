"""Reading input files within the limits: rule files and run records.

A path must name a file: a FIFO (or a socket) would block for ever, so it
is refused before it is opened (standard input is ``-``, read within the
same limits); a device such as ``/dev/zero`` is read within the limits.  A whole file is read
up to its limit and no further; a file read by lines gets each line up to
its limit, and a longer line is an error that names it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO, Any, Iterator

from triage import limits
from triage.errors import InputError

__all__ = ["check_regular", "read_bounded", "bounded_lines"]


def check_regular(path: "str | Path") -> None:
    """Refuse a path that is no file (before opening it: opening a FIFO blocks)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, not a file")
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)):  # a device (/dev/null) is read within the limits
        raise InputError(f"{path}: not a file (a pipe or a socket); give a file, or - for standard input")


def read_bounded(path: "str | Path", limit: str) -> bytes:
    """The whole file, at most ``limits.get(limit)`` bytes of it."""
    check_regular(path)
    most = limits.get(limit)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(most + 1)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(raw) > most:
        raise InputError(f"{path}: more than {most:,} bytes; {limits.LIMITS[limit].env} raises the limit")
    return raw


def bounded_lines(fh: IO[Any], path: str, limit: str = "record_bytes") -> Iterator[Any]:
    """The lines of ``fh`` (bytes or text), each at most ``limits.get(limit)`` long."""
    most = limits.get(limit)
    number = 0
    while True:
        line = fh.readline(most + 1)
        if not line:
            return
        number += 1
        if len(line) > most:
            raise InputError(f"{path}:{number}: a line longer than {most:,} bytes; "
                             f"{limits.LIMITS[limit].env} raises the limit")
        yield line
