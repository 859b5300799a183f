"""What a log is stored as, told by its first bytes (never by its name).

gzip, xz, bzip2 and zstd logs are decompressed as they are read (zstd with
the ``zstandard`` binding: the standard library reads it only from Python
3.14); the decoder reads through a :class:`Counted` wrapper, so that the
reader can refuse data that expands like a bomb (``TRIAGE_MAX_GZIP_RATIO``
applies to every format).  Other binary data is refused: archives and
formats triage does not unpack (zip, 7z, lz4, …) by their magic bytes, and
anything holding a NUL byte in its first 4 KiB (decompressed), which no log
of text does.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from typing import Any, BinaryIO, Optional

from triage.errors import InputError

__all__ = ["Counted", "sniff", "check_text", "DECODE_ERRORS"]

#: (magic bytes, format) of what is decompressed
READ = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"), (b"\x28\xb5\x2f\xfd", "zstd"))
#: (magic bytes, format) of what is refused
REFUSED = ((b"PK\x03\x04", "zip"), (b"7z\xbc\xaf\x27\x1c", "7z"), (b"\x04\x22\x4d\x18", "lz4"),
           (b"Rar!\x1a\x07", "rar"), (b"\x7fELF", "an ELF binary"), (b"\x89PNG", "PNG"), (b"%PDF-", "PDF"))
HEAD = 6
TEXT_CHECK = 4096

try:
    import zstandard as _zstd

    DECODE_ERRORS: tuple = (OSError, EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError, _zstd.ZstdError)
except ImportError:  # pragma: no cover - a dependency
    _zstd = None
    DECODE_ERRORS = (OSError, EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError)


class Prefixed(io.RawIOBase):
    """A read-only stream that yields ``head`` and then the rest of ``raw``.

    Used to sniff the magic bytes on a stream that cannot seek or peek (a
    pipe on standard input, or a test's ``BytesIO`` standing in for it).
    """

    def __init__(self, head: bytes, raw: BinaryIO) -> None:
        super().__init__()
        self._head = head
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._raw.read(len(b))
        if not data:
            return 0
        b[: len(data)] = data
        return len(data)


class Counted:
    """A file-like object for a decoder that counts the compressed bytes read."""

    def __init__(self, raw: BinaryIO, kind: str) -> None:
        self.raw = raw
        self.kind = kind
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.count += len(data)
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True


def _head(raw: BinaryIO) -> tuple[bytes, BinaryIO]:
    """The first bytes of ``raw``, and a stream that still starts with them."""
    peek = getattr(raw, "peek", None)
    if peek is not None:
        try:
            head = peek(HEAD)[:HEAD]
            if len(head) >= HEAD:
                return head, raw
        except (OSError, ValueError):
            pass
    # No peek, or a pipe that has delivered a few bytes so far: read them and
    # put them back in front of the stream.
    head = b""
    while len(head) < HEAD:
        more = raw.read(HEAD - len(head))
        if not more:
            break
        head += more
    return head, io.BufferedReader(Prefixed(head, raw), buffer_size=1 << 16)  # type: ignore[return-value]


def sniff(raw: BinaryIO, path: str) -> tuple[BinaryIO, Optional[Counted]]:
    """``raw`` as text bytes (decompressed when it is compressed), and the
    compressed bytes' counter (None for plain text)."""
    head, raw = _head(raw)
    for magic, kind in REFUSED:
        if head.startswith(magic):
            raise InputError(f"{path}: {kind} data, which triage does not read as a log; unpack it first")
    for magic, kind in READ:
        if head.startswith(magic):
            counted = Counted(raw, kind)
            return _decoder(kind, counted), counted
    return raw, None


def _decoder(kind: str, counted: Counted) -> BinaryIO:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=counted, mode="rb")  # type: ignore[return-value,arg-type]
    if kind == "xz":
        return lzma.LZMAFile(counted, mode="rb")  # type: ignore[return-value,arg-type]
    if kind == "bzip2":
        return bz2.BZ2File(counted, mode="rb")  # type: ignore[return-value,arg-type]
    if _zstd is None:  # pragma: no cover - a dependency
        raise InputError("zstd data: install the zstandard package to read it")
    reader = _zstd.ZstdDecompressor().stream_reader(counted, read_across_frames=True)
    return io.BufferedReader(reader, buffer_size=1 << 20)  # type: ignore[return-value,arg-type]


def check_text(data: Any, n: int, path: str) -> None:
    """Refuse data whose first bytes hold a NUL: no text log does."""
    if bytes(data[: min(n, TEXT_CHECK)]).find(b"\0") >= 0:
        raise InputError(f"{path}: not text (a NUL byte in its first {TEXT_CHECK:,} bytes); triage reads logs "
                         "as text, plain or compressed with gzip, xz, bzip2 or zstd")
