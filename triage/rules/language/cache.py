"""Rule files parsed once: an unchanged file costs a stat, not a parse.

``triage`` reads every rule file on every command, and a team's rules
directory holds one file per investigation.  A file whose size, modification
and change times and inode are the ones it had when it was last parsed (and
validated) is taken from the cache as it was; any other file is parsed and
validated as :func:`triage.rules.language.loader.load_rules` does, and the cross-file
checks always run on the whole set.  Only files without problems are kept,
under the code's stamp, so a new ``triage`` never reads an older one's parse.

The cache is a directory, ``rules-<stamp>/`` in the directory the caller
gives: ``$TRIAGE_CACHE`` (default ``$XDG_CACHE_HOME/triage`` or
``~/.cache/triage``; ``TRIAGE_CACHE=off``, None here, turns it off), read by
:class:`triage.settings.Settings`.  Its ``index.pickle`` holds, per file, its
stat, its hash and what the cross-file checks read of it (its investigation's
id, repository and PR, its signatures' ids); each file's parse is a file of
its own, read only when something reads that file's definitions.  A command
on one investigation of a thousand reads the index, not a thousand parses,
and a changed file is checked against the others' summaries.  A cache that
cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path
from typing import Any, Iterable, Optional

from triage.errors import Problem, RuleFileError

#: Cached files kept at most (the newest loads win), and sets of files known to pass the cross-file checks.
KEEP = 2000
SETS = 20


def _dir(where: Optional[Path]) -> Optional[Path]:
    from triage.stamp import code_stamp

    return where / f"rules-{code_stamp()}" if where is not None else None


def _stat(p: Path) -> Optional[tuple]:
    try:
        st = p.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def path_keys(paths: Iterable[Path]) -> list[str]:
    """``str(p.resolve())`` of each path, each directory resolved once.

    A file's key (here and in the knowledge base's record of loaded files) is
    its resolved path.  Resolving costs a system call per component of a
    path; a team's rules directory holds a file per investigation, so the
    directory is resolved once and the names joined to it, unless the name is
    a link (resolved alone) or not a plain name (``..``)."""
    dirs: dict[Path, Path] = {}
    keys: list[str] = []
    for p in paths:
        if p.name in ("", ".", "..") or p.is_symlink():
            keys.append(str(p.resolve()))
            continue
        parent = dirs.get(p.parent)
        if parent is None:
            parent = dirs[p.parent] = p.parent.resolve()
        keys.append(str(parent / p.name))
    return keys


def _read(where: Optional[Path]) -> dict:
    if where is None:
        return {}
    try:
        with (where / "index.pickle").open("rb") as fh:
            data = pickle.load(fh)
        return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {}
    except Exception:  # missing, partial or from another Python: parse again
        return {}


def _blob(key: str, sha256: str) -> str:
    """The name of a file's parse in the cache: of its key and its content."""
    return hashlib.sha256(f"{key}\0{sha256}".encode()).hexdigest()[:32] + ".pickle"


def _write(where: Path, data: dict, blobs: dict[str, bytes], dropped: Iterable[str]) -> None:
    """The new parses first, then the index that names them (each written whole, then
    renamed), then the parses no entry names any more."""
    try:
        where.mkdir(parents=True, exist_ok=True)
        for name, blob in [*blobs.items(), ("index.pickle", pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))]:
            tmp = where / f"{name}.{os.getpid()}.tmp"
            tmp.write_bytes(blob)
            tmp.replace(where / name)
        for name in dropped:
            (where / name).unlink(missing_ok=True)
    except OSError:
        pass


class CachedFile:
    """A rule file as it was validated: its path, hash and summary at once, its
    definitions read from the cache only when something reads them.  Reads as a
    :class:`triage.rules.language.loader.LoadedFile`."""

    def __init__(self, path: str, sha256: str, summary: tuple, blob: Path) -> None:
        self.path, self.sha256, self.summary, self._blob = path, sha256, summary, blob
        self._file: Any = None

    def _whole(self) -> Any:
        if self._file is None:
            try:
                self._file = pickle.loads(self._blob.read_bytes())
            except Exception:  # gone since the index was read (another command kept newer files)
                from triage.rules.language import loader

                loaded, problems = loader.load_file(Path(self.path))
                if loaded is None or problems:
                    raise RuleFileError(problems) from None
                self._file = loaded
            self._file.path = self.path
        return self._file

    spec = property(lambda self: self._whole().spec)
    values = property(lambda self: self._whole().values)
    keys = property(lambda self: self._whole().keys)

    def where(self, path: tuple, *, key: bool = False) -> tuple[int, int]:
        return self._whole().where(path, key=key)


class CachedSet:
    """The files of a set that passed every check before, as a ``RuleSet`` reads."""

    def __init__(self, files: list) -> None:
        self.files = files

    @property
    def investigations(self) -> list:
        return [f for f in self.files if f.spec.investigation is not None]


def _paths(paths: Iterable[str | Path]) -> list[Path]:
    """Directories as their ``*.yaml``/``*.yml`` files, as the loader expands them."""
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            return []  # a file, or a missing path: the loader says what to
        # the directory's entries know their kind: no stat for each file here (the stamp is one)
        with os.scandir(p) as entries:
            out += sorted(p / e.name for e in entries
                          if os.path.splitext(e.name)[1] in (".yaml", ".yml") and e.is_file())
    return out


def load_rules(paths: Iterable[str | Path], cache_dir: Optional[Path]):  # -> RuleSet
    """:func:`triage.rules.language.loader.load_rules`, with unchanged files from the cache
    in ``cache_dir`` (None: no cache).

    When every file is one the cache holds and this very set of files passed
    the cross-file checks before, nothing is parsed, unpickled or even
    imported: the loader and the schema load only when a file changed.
    """
    paths = list(paths)
    where = _dir(cache_dir)
    cache = _read(where)
    known: dict = cache.setdefault("files", {})
    passed: list = cache.setdefault("sets", [])
    listed = _paths(paths)
    if listed and where is not None:
        stamps = list(zip(path_keys(listed), map(_stat, listed)))
        hits = [known.get(key) for key, _ in stamps]
        if all(h is not None and h[0] == st for h, (_, st) in zip(hits, stamps)) and hash_of(stamps) in passed:
            return CachedSet([CachedFile(str(p), h[1], h[2], where / h[3]) for p, h in zip(listed, hits)])
    return _load(paths, where, cache)


def _load(paths: list, where: Optional[Path], cache: dict):  # -> RuleSet
    from triage.rules.language import loader

    known: dict = cache["files"]
    passed: list = cache["sets"]
    files: list = []
    problems: list[Problem] = []
    blobs: dict[str, bytes] = {}  # the parses to write: name -> pickle
    stamps = []
    listed = loader.rule_paths(paths)
    for p, key in zip(listed, path_keys(listed)):
        stat = _stat(p)
        stamps.append((key, stat))
        hit = known.get(key)
        if stat is not None and hit is not None and hit[0] == stat and where is not None:
            files.append(CachedFile(str(p), hit[1], hit[2], where / hit[3]))
            continue
        loaded, probs = loader.load_file(p)
        problems += probs
        if loaded is not None:
            files.append(loaded)
            if not probs and stat is not None and stat == _stat(p):  # unchanged while it was read
                known.pop(key, None)
                name = _blob(key, loaded.sha256)
                known[key] = (stat, loaded.sha256, loaded.summary, name)
                blobs[name] = pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL)
    whole = hash_of(stamps)
    problems += loader._cross_file(files)
    if problems:
        raise RuleFileError(problems)
    if (blobs or whole not in passed) and where is not None:
        entries = list(known.items())
        cache["files"] = dict(entries[-KEEP:])
        named = {entry[3] for entry in cache["files"].values()}
        cache["sets"] = [x for x in passed if x != whole][-SETS + 1:] + [whole]
        _write(where, cache, blobs, {entry[3] for _, entry in entries[:-KEEP]} - named)
    return loader.RuleSet(files)


def hash_of(stamps: list) -> str:
    import hashlib

    return hashlib.sha256(repr(stamps).encode()).hexdigest()
