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
from pathlib import Path
from typing import Any, Iterable, Optional

from triage.errors import Problem, RuleFileError

#: Cached files kept at most (the newest loads win), and sets of files known to pass the cross-file checks.
KEEP = 2000
SETS = 20


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
        return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {}
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


def _cached_file():  # the class, defined on first use: the loader is imported lazily
    from triage.rules.loader import LoadedFile

    class CachedFile(LoadedFile):
        """A file as it was validated: its path and hash at once, its
        definitions unpickled only when something reads them."""

        def __init__(self, path: str, sha256: str, blob: bytes) -> None:  # noqa: D107
            self.__dict__.update(path=path, sha256=sha256, _blob=blob)

        def _whole(self) -> Any:
            if "_whole_file" not in self.__dict__:
                self.__dict__["_whole_file"] = pickle.loads(self.__dict__["_blob"])
            return self.__dict__["_whole_file"]

        spec = property(lambda self: self._whole().spec)  # type: ignore[assignment]
        values = property(lambda self: self._whole().values)  # type: ignore[assignment]
        keys = property(lambda self: self._whole().keys)  # type: ignore[assignment]

    return CachedFile


def load_rules(paths: Iterable[str | Path]):  # -> RuleSet
    """:func:`triage.rules.loader.load_rules`, with unchanged files from the cache.

    When every file is one the cache holds and this very set of files passed
    the cross-file checks before, nothing is parsed or unpickled at all.
    """
    from triage.rules import loader

    where = _file()
    cache = _read(where)
    known: dict = cache.setdefault("files", {})
    passed: list = cache.setdefault("sets", [])
    cached = _cached_file()
    files: list = []
    problems: list[Problem] = []
    changed = False
    stamps = []
    for p in loader.rule_paths(paths):
        key, stat = str(p.resolve()), _stat(p)
        stamps.append((key, stat))
        hit = known.get(key)
        if stat is not None and hit is not None and hit[0] == stat:
            files.append(cached(str(p), hit[1], hit[2]))
            continue
        loaded, probs = loader.load_file(p)
        problems += probs
        if loaded is not None:
            files.append(loaded)
            if not probs and stat is not None and stat == _stat(p):  # unchanged while it was read
                known.pop(key, None)
                known[key] = (stat, loaded.sha256, pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL))
                changed = True
    whole = hash_of(stamps)
    if changed or whole not in passed:
        problems += loader._cross_file(files)
    if problems:
        raise RuleFileError(problems)
    if (changed or whole not in passed) and where is not None:
        cache["files"] = dict(list(known.items())[-KEEP:])
        cache["sets"] = [x for x in passed if x != whole][-SETS + 1:] + [whole]
        _write(where, cache)
    return loader.RuleSet(files)


def hash_of(stamps: list) -> str:
    import hashlib

    return hashlib.sha256(repr(stamps).encode()).hexdigest()
