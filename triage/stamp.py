"""The package's code as a short hash: what a stored evaluation and the parsed
rule files' cache were made by (:mod:`triage.kb.snapshot`,
:mod:`triage.rules.language.cache`)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

#: Bump when what a snapshot holds changes shape.
ENGINE_VERSION = 1


@lru_cache(maxsize=1)
def code_stamp() -> str:
    """The package's code as a short hash (see :func:`stamp_of`)."""
    import triage

    return stamp_of(Path(triage.__file__).resolve().parent, triage.__version__)


def stamp_of(root: Path, version: str) -> str:
    """The code in ``root`` as a short hash.  Installed from a wheel, the hashes its
    ``RECORD`` lists for the package's files: the same code stamps alike on every
    machine and every fresh install (a CI job installs triage each time, and would
    otherwise evaluate every investigation again).  Otherwise (a checkout, edited in
    place) the size and modification time of every module and template, a stat each."""
    parts = [version, str(ENGINE_VERSION)]
    try:
        record = (root.parent / f"{root.name}-{version}.dist-info" / "RECORD").read_text(encoding="utf-8")
    except OSError:
        record = ""
    mine = sorted(line for line in record.splitlines() if line.startswith((f"{root.name}/", "templates/")))
    if any(line.startswith(f"{root.name}/") and ",sha256=" in line for line in mine):
        parts += ["record", *mine]
    else:
        for p in sorted([*root.rglob("*.py"), *root.parent.joinpath("templates").glob("*.j2")]):
            st = p.stat()
            parts.append(f"{p.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
