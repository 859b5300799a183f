"""Definitions read back from a knowledge base, validated once for each text.

Every command that evaluates reads its investigation's definitions back from
the knowledge base (the spec, hypotheses, recipes, rules, bisects and manual
evidence, stored as JSON) and validates them into the schema's objects.  The
first validation of each kind of definition in a process builds its
validator, which costs more than the validation itself (about 20 ms for a
wide investigation, against 2 ms to unpickle its definitions).  What was
validated is kept here, pickled under a hash of the texts it was validated
from, in ``definitions-<stamp>-…/`` beside the rule cache
(:mod:`triage.rules.language.cache`): the same texts under the same code give
the same objects, so a later command unpickles them instead.

The edge that knows the cache directory says so (:func:`use`, as the
command line does with ``TRIAGE_CACHE``); without it every read validates.
A kept file that cannot be read or written is ignored, as the rule cache's are.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path
from typing import Callable, Optional, TypeVar

T = TypeVar("T")

#: Kept validations at most (as many as the rule cache keeps files): the oldest go past it.
KEEP = 2000

_cache_dir: Optional[Path] = None


def use(cache_dir: Optional[Path]) -> None:
    """Keep validated definitions under ``cache_dir`` (the rule cache's directory; None: never)."""
    global _cache_dir
    _cache_dir = cache_dir


def validated(texts: str, make: Callable[[], T]) -> T:
    """``make()``, which validates the definitions stored as ``texts``: kept under their hash
    the first time, unpickled for the same texts from then on."""
    if _cache_dir is None:
        return make()
    where = _cache_dir / _name()
    path = where / (hashlib.sha256(texts.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".pickle")
    try:
        return pickle.loads(path.read_bytes())
    except Exception:  # not kept yet, partial, or from another Python: validate again
        pass
    value = make()
    _keep(where, path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value


def _name() -> str:
    """The directory of this code's kept definitions: its stamp, and the Python and
    pydantic that pickled them (an upgrade of either in place keeps the stamp)."""
    import sys

    from triage.stamp import code_stamp

    return f"definitions-{code_stamp()}-py{sys.version_info[0]}.{sys.version_info[1]}-pydantic{pydantic_version()}"


def pydantic_version() -> str:
    """pydantic's version, read from its ``version.py``: importing pydantic for it costs a command
    that validates nothing (a report of an unchanged knowledge base) 0.04-0.1 s."""
    import importlib.util
    import re

    try:
        origin = importlib.util.find_spec("pydantic").origin  # type: ignore[union-attr]
        text = Path(origin).with_name("version.py").read_text(encoding="utf-8")  # type: ignore[arg-type]
        return re.search(r"^VERSION = ['\"]([^'\"]+)['\"]", text, re.MULTILINE).group(1)  # type: ignore[union-attr]
    except Exception:  # another layout: ask pydantic
        from pydantic import VERSION

        return VERSION


def _keep(where: Path, path: Path, blob: bytes) -> None:
    """Write ``blob`` whole, then rename it into place; drop the oldest past :data:`KEEP`."""
    try:
        where.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        tmp.replace(path)
        names = [n for n in os.listdir(where) if n.endswith(".pickle")]  # a name each: cheap below the limit
        if len(names) > KEEP:
            kept = sorted((os.stat(where / n).st_mtime_ns, n) for n in names)
            for _, old in kept[:len(kept) - KEEP]:
                (where / old).unlink(missing_ok=True)
    except OSError:
        pass
