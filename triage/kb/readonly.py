"""A SQLite knowledge base this process cannot write to: on a read-only file
system, a file or directory of another user, or a URL that opens it read-only
(``sqlite:///file:PATH?mode=ro&uri=true``).

The commands that read (``report``, ``hypotheses``, ``bisect``, ``export``…)
still store what they work out (rule files, evaluations, the view), so they
read a private copy of it, made with SQLite's backup and removed at exit:
what they print is what they would print on the file itself, and the file
is left as it was.  A command that writes is refused (bad input, exit 2)
before it opens it.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Optional
from urllib.parse import parse_qs, quote

from triage.errors import InputError

__all__ = ["sqlite_path", "cannot_write", "refuse", "private_copy", "is_copy"]

URI = "sqlite:///file:"
_copies: set[str] = set()  # the URLs of this process's private copies


def sqlite_path(url: str) -> Optional[Path]:
    """The file a SQLite URL names (None: not SQLite, or in memory)."""
    if not url.startswith("sqlite:///") or ":memory:" in url or "mode=memory" in url:
        return None
    if url.startswith(URI):
        return Path(url[len(URI):].split("?", 1)[0])
    return Path(url[len("sqlite:///"):])


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(url.split("?", 1)[1]) if url.startswith(URI) and "?" in url else {}


def cannot_write(url: str) -> bool:
    """Whether the SQLite knowledge base at ``url`` exists and this process
    cannot write to it: opened read-only, or the file (or, for its write-ahead
    log, its directory) not writable here."""
    path = sqlite_path(url)
    if path is None or not path.is_file():
        return False
    query = _query(url)
    if query.get("mode") == ["ro"] or query.get("immutable") == ["1"]:
        return True
    if not os.access(path, os.W_OK):
        return True
    log = Path(f"{path}-wal")
    return not os.access(path.parent, os.W_OK) and not (log.exists() and os.access(log, os.W_OK))


def refuse(url: str, command: str) -> InputError:
    """The one line a command that writes says about a read-only knowledge base."""
    return InputError(f"the knowledge base {url} is read-only (this process cannot write to it): "
                      f"`{command}` writes; the commands that read (report, hypotheses, bisect, export, …) "
                      "work on it")


def private_copy(url: str) -> str:
    """A URL of a private, writable copy of the read-only knowledge base at
    ``url`` (removed when the process exits)."""
    from triage.kb.db import _safe

    path = sqlite_path(url)
    assert path is not None
    fd, name = tempfile.mkstemp(prefix="triage-read-", suffix=".sqlite")
    os.close(fd)
    atexit.register(_remove, name)
    copy = sqlite3.connect(name)
    try:
        # "mode=ro" needs the write-ahead log's index beside the file, or leave to
        # make it; "immutable" needs neither (nobody can write there either).
        for mode in ("mode=ro", "immutable=1"):
            try:
                source = sqlite3.connect(f"file:{quote(str(path))}?{mode}", uri=True)
            except sqlite3.Error:
                continue
            try:
                source.backup(copy)
                break
            except sqlite3.DatabaseError as e:
                if "not a database" in str(e):
                    raise InputError(f"the knowledge base {_safe(url)} is not a SQLite database: point --db "
                                     "at a knowledge base, or at a new file to start one") from None
            finally:
                source.close()
        else:
            raise InputError(f"the knowledge base {_safe(url)} cannot be read") from None
    finally:
        copy.close()
    _copies.add(f"sqlite:///{name}")
    return f"sqlite:///{name}"


def is_copy(url: str) -> bool:
    """Whether ``url`` is a private copy :func:`private_copy` made."""
    return url in _copies


def _remove(name: str) -> None:
    from triage.kb.db import dispose_engines

    dispose_engines()
    for extra in ("", "-wal", "-shm", "-journal"):
        Path(f"{name}{extra}").unlink(missing_ok=True)
