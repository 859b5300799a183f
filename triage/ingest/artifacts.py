"""A workflow run's artifacts: the results files in their zip archives.

GitHub keeps what a workflow uploads as zip archives.  Each archive is
checked before anything in it is used: at most ``TRIAGE_MAX_ARTIFACT_BYTES``
to download (by the size GitHub lists, and by what arrives), at most
``TRIAGE_MAX_ARTIFACT_ENTRIES`` entries, no entry whose path would leave its
directory (absolute, ``..``, a drive or a backslash) and no link, each entry
expanding at most ``TRIAGE_MAX_GZIP_RATIO`` times (past its first MiB) and
to at most ``TRIAGE_MAX_RESULTS_BYTES``, counted as it is read, not as the
archive claims, and the results files together to ``TRIAGE_MAX_ARTIFACT_BYTES``.  Only the results files (``.xml``, ``.json``) are kept; they
are written under a temporary directory by names of triage's own and read
by :mod:`triage.ingest.results`.

An artifact belongs to the job whose config it is named after (the config
itself, or the longest config within its name), or to the only job.
"""

from __future__ import annotations

import io
import stat
from pathlib import Path, PurePosixPath
from typing import Iterable, Optional

from triage import limits
from triage.errors import InputError

__all__ = ["results_in_zip", "owner", "write_results"]

RESULT_SUFFIXES = (".xml", ".json")
#: Bytes an entry may hold before its expansion ratio is checked.
RATIO_GRACE = 1 << 20


def _unsafe(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return (not name or name.startswith(("/", "\\")) or "\\" in name or ".." in parts
            or (parts and ":" in parts[0]) or "\x00" in name)


def results_in_zip(artifact: str, data: bytes) -> list[tuple[str, bytes]]:
    """``(entry name, content)`` of each results file in the zip ``data``; InputError past a limit."""
    import zipfile

    where = f"artifact {artifact[:100]!r}"
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        raise InputError(f"{where}: not a zip archive") from None
    with archive:
        infos = archive.infolist()
        most = limits.get("artifact_entries")
        if len(infos) > most:
            raise InputError(f"{where}: more than {most:,} entries; TRIAGE_MAX_ARTIFACT_ENTRIES raises the limit")
        for info in infos:
            if _unsafe(info.filename):
                raise InputError(f"{where}: the entry {info.filename[:200]!r} would leave its directory")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise InputError(f"{where}: the entry {info.filename[:200]!r} is a link")
        kept, total, most = [], 0, limits.get("artifact_bytes")
        for info in infos:
            if not info.is_dir() and info.filename.lower().endswith(RESULT_SUFFIXES):
                kept.append((info.filename, _read(archive, info, where)))
                total += len(kept[-1][1])
                if total > most:
                    raise InputError(f"{where}: its results files unpack to more than {most:,} bytes; "
                                     "TRIAGE_MAX_ARTIFACT_BYTES raises the limit")
        return kept


def _read(archive: "object", info: "object", where: str) -> bytes:
    """The entry's bytes, counted as they are read, within the size and ratio limits."""
    import zipfile

    most, ratio = limits.get("results_bytes"), limits.get("gzip_ratio")
    out = bytearray()
    try:
        with archive.open(info) as fh:  # type: ignore[attr-defined]
            while chunk := fh.read(1 << 20):
                out += chunk
                if len(out) > most:
                    raise InputError(f"{where}: {info.filename[:200]!r} holds more than {most:,} bytes; "  # type: ignore[attr-defined]
                                     "TRIAGE_MAX_RESULTS_BYTES raises the limit")
                if len(out) > RATIO_GRACE and len(out) > ratio * max(info.compress_size, 1):  # type: ignore[attr-defined]
                    raise InputError(f"{where}: {info.filename[:200]!r} expands more than {ratio} times "  # type: ignore[attr-defined]
                                     "(a decompression bomb?); TRIAGE_MAX_GZIP_RATIO raises the limit")
    except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError) as e:
        raise InputError(f"{where}: cannot unpack {info.filename[:200]!r} ({e})") from None  # type: ignore[attr-defined]
    return bytes(out)


def owner(artifact: str, configs: Iterable[str]) -> Optional[str]:
    """The config an artifact belongs to: the one it is named, the longest one
    within its name, or the only one; None when that does not tell."""
    configs = list(configs)
    if artifact in configs:
        return artifact
    within = sorted((c for c in configs if c and c in artifact), key=len, reverse=True)
    if within:
        return within[0]
    return configs[0] if len(configs) == 1 else None


def write_results(files: list[tuple[str, bytes]], where: Path) -> list[str]:
    """The files written under ``where`` by names of triage's own (``3-junit.xml``): no entry's path is used."""
    paths = []
    for i, (name, data) in enumerate(files):
        base = PurePosixPath(name).name
        suffix = ".xml" if base.lower().endswith(".xml") else ".json"
        path = where / f"{i}-{''.join(c if c.isalnum() or c in '-_.' else '_' for c in base[:80])}"
        path = path if path.name.endswith(suffix) else path.with_name(path.name + suffix)
        path.write_bytes(data)
        paths.append(str(path))
    return paths
