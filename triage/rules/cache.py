"""Rule files parsed once: an unchanged file costs a stat, not a parse.

``triage`` reads every rule file on every command, and a team's rules
directory holds one file per investigation.  A file whose size, modification
and change times and inode are the ones it had when it was last parsed (and
validated) is taken from the cache as it was; any other file is parsed and
validated as :func:`triage.rules.loader.load_rules` does, and the cross-file
checks always run on the whole set.  Only files without problems are kept,
under the code's stamp, so a new ``triage`` never reads an older one's parse.

The cache is one file, ``$TRIAGE_CACHE/rules-<stamp>.pickle`` (default
``$XDG_CACHE_HOME/triage`` or ``~/.cache/triage``); ``TRIAGE_CACHE=off``
turns it off.  A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Optional

from triage.errors import Problem, RuleFileError

#: Cached files kept at most (the newest loads win).
KEEP = 2000


def _dir() -> Optional[Path]:
    value = os.environ.get("TRIAGE_CACHE")
    if value == "off":
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "triage"


def _file() -> Optional[Path]:
    from triage.kb.snapshot import code_stamp

    where = _dir()
    return where / f"rules-{code_stamp()}.pickle" if where is not None else None


def _stat(p: Path) -> Optional[tuple]:
    try:
        st = p.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _read(path: Optional[Path]) -> dict:
    if path is None:
        return {}
    try:
        with path.open("rb") as fh:
            data = pickle.load(fh)
        return data if isinstance(data, dict) else {}
    except Exception:  # missing, partial or from another Python: parse again
        return {}


def _write(path: Path, data: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(data, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)
    except OSError:
        pass


def load_rules(paths: Iterable[str | Path]):  # -> RuleSet
    """:func:`triage.rules.loader.load_rules`, with unchanged files from the cache."""
    from triage.rules import loader

    where = _file()
    cache = _read(where)
    files: list = []
    problems: list[Problem] = []
    changed = False
    for p in loader.rule_paths(paths):
        key, stat = str(p.resolve()), _stat(p)
        hit = cache.get(key)
        if stat is not None and hit is not None and hit[0] == stat:
            loaded = hit[1] if hit[1].path == str(p) else replace(hit[1], path=str(p))
            files.append(loaded)
            continue
        loaded, probs = loader.load_file(p)
        problems += probs
        if loaded is not None:
            files.append(loaded)
            if not probs and stat is not None and stat == _stat(p):  # unchanged while it was read
                cache.pop(key, None)
                cache[key] = (stat, loaded)
                changed = True
    problems += loader._cross_file(files)
    if problems:
        raise RuleFileError(problems)
    if changed and where is not None:
        _write(where, dict(list(cache.items())[-KEEP:]))
    return loader.RuleSet(files)
