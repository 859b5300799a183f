"""Streaming log readers: plain or compressed files, or standard input.

``open_log(path)`` returns a :class:`LogReader`, which is an iterator over the
log's lines (decoded as UTF-8 with ``errors="replace"``, without the trailing
newline) and a context manager that closes the file::

    with open_log("run.log.gz") as log:
        for line in log:
            ...

``-`` means standard input.  gzip, xz, bzip2 and zstd are recognised by
their magic bytes, never by the file name, so ``run.log`` holding gzip data
and ``run.gz`` holding plain text both read correctly; other binary data is
refused (:mod:`triage.ingest.compressed`).

Lines end at ``\\n``; a ``\\r`` right before it is dropped (CRLF logs), a lone
``\\r`` (progress bars redrawing themselves) stays inside the line.  A final
line without a newline is still a line; an empty file has no lines.

Memory stays flat in the log size: the reader holds one block (``size``
bytes, 8 MiB by default) at a time.  A line longer than ``TRIAGE_MAX_LOG_LINE``
bytes (8 MiB) is cut to that many bytes and counted in ``lines_cut``; a log
of more than ``TRIAGE_MAX_LOG_BYTES`` (8 GiB, decompressed), or a compressed
log that expands more than ``TRIAGE_MAX_GZIP_RATIO`` times (200, checked past its
first 64 MiB), is refused.  Scanners that want speed over big logs
use :meth:`LogReader.spans` (no copies), :meth:`LogReader.byte_blocks` or
:func:`iter_chunks`, which hand out whole lines in large blocks so that one
regex pass covers many lines at C speed; :func:`blocks` cuts any source of
lines (a reader, a list, a string) into such blocks.
"""

from __future__ import annotations

import os
import re
import sys
from itertools import islice
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Optional

from triage import limits
from triage.errors import InputError
from triage.ingest.compressed import DECODE_ERRORS, check_text, sniff

__all__ = ["LogReader", "open_log", "iter_chunks", "Block", "blocks", "hit_lines", "ANSI", "BLOCK_SIZE"]

#: ANSI escape sequences (colours, cursor moves, OSC titles), removed before
#: a line is matched or shown.
ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")

BLOCK_SIZE = 8 << 20
#: Lines per block when cutting an ordinary iterable of lines into blocks.
BATCH_LINES = 8192
#: The gzip ratio is checked once this much has been decompressed.
_RATIO_AFTER = 64 << 20


class LogReader:
    """An open log: iterate it for lines, or ask for blocks of whole lines."""

    def __init__(self, path: str, size: int = BLOCK_SIZE) -> None:
        self.path = path
        self.size = max(int(size), 1 << 10)
        self._owned: BinaryIO | None = None
        if path == "-":
            if sys.stdin is None:
                raise InputError("-: there is no standard input to read a log from")
            raw: BinaryIO = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin  # type: ignore[assignment]
        else:
            try:
                raw = open(path, "rb")
            except FileNotFoundError:
                raise InputError(f"{path}: no such log file") from None
            except IsADirectoryError:
                raise InputError(f"{path}: is a directory, not a log file") from None
            except OSError as e:
                raise InputError(f"{path}: cannot read log file: {e.strerror or e}") from None
            self._owned = raw
        self._raw = raw
        self._stream, self._compressed = sniff(raw, path)
        #: Lines longer than ``max_line`` bytes: kept cut to that many bytes.
        self.lines_cut = 0
        self.max_line = max(limits.get("log_line"), 1 << 10)
        self._max_bytes = limits.get("log_bytes")
        self._max_ratio = limits.get("gzip_ratio")
        self._read = 0
        self._checked = False  # whether the first bytes were looked at for text
        self._lines: Iterator[str] | None = None
        self._started = False
        #: Called after each block has been read and handed out (a progress bar).
        self.on_span: Optional[Callable[[], None]] = None

    # -- context manager and closing ------------------------------------
    def __enter__(self) -> "LogReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the file (standard input itself is left open)."""
        if self._stream is not self._raw:  # a gzip decoder or a sniffing wrapper
            try:
                self._stream.close()  # neither closes the stream under it
            except Exception:
                pass
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def progress(self) -> tuple[int, Optional[int]]:
        """``(bytes read, file size)`` of the file as stored (compressed, for
        gzip), for a progress bar; the size is None for standard input."""
        if self._owned is None:
            return 0, None
        try:
            return self._owned.tell(), os.fstat(self._owned.fileno()).st_size
        except (OSError, ValueError):
            return 0, None

    # -- blocks -----------------------------------------------------------
    def spans(self) -> Iterator[tuple[bytes | bytearray, int]]:
        """Yield ``(data, end)``: ``data[:end]`` holds whole lines joined by
        ``\\n`` (CRLF turned into LF), without a trailing newline.

        This is the cheapest form, for scanners: no copy of the block and no
        line counting.  ``data`` may be a buffer that the next step of the
        iteration overwrites, so copy out (slice) what must be kept, and do
        not hold on to ``data`` itself.  A log is read once: a second call
        yields nothing.
        """
        for span in self._spans():
            yield span
            if self.on_span is not None:
                self.on_span()

    def _spans(self) -> Iterator[tuple[bytes | bytearray, int]]:
        if self._started:
            return
        self._started = True
        readinto = getattr(self._stream, "readinto", None)
        try:
            if readinto is None:
                yield from self._spans_by_read()
                return
            buf = bytearray(min(self.size, self.max_line))
            have = 0  # bytes of an unfinished line at the front of buf
            skipping = False  # in the rest of a line that was cut
            while True:
                if have == len(buf):  # one line longer than the buffer
                    if len(buf) < self.max_line:
                        buf.extend(bytes(min(len(buf), self.max_line - len(buf))))
                    else:  # longer than any line may be: keep its start, skip the rest
                        self.lines_cut += 1
                        yield self._crlf(buf, have)
                        have, skipping = 0, True
                with memoryview(buf) as view:
                    n = readinto(view[have:])
                if not n:
                    break
                if not self._checked:
                    self._text(buf, have + n)
                self._count(n)
                total = have + n
                if skipping:
                    nl = buf.find(b"\n", 0, total)
                    if nl < 0:
                        continue
                    total -= nl + 1
                    buf[:total] = buf[nl + 1 : nl + 1 + total]
                    skipping = False
                cut = buf.rfind(b"\n", 0, total)
                if cut < 0:
                    have = total
                    continue
                yield self._crlf(buf, cut)
                have = total - cut - 1
                buf[:have] = buf[cut + 1 : total]
            if have and not skipping:
                yield self._crlf(buf, have)
        except DECODE_ERRORS as e:
            raise InputError(f"{self.path}: cannot read log file: {e}") from None

    def _text(self, data: Any, n: int) -> None:
        self._checked = True
        check_text(data, n, self.path)

    def _count(self, n: int) -> None:
        """Refuse a log past the size limit, or a gzip one that expands like a bomb."""
        self._read += n
        if self._read > self._max_bytes:
            raise InputError(f"{self.path}: the log holds more than {self._max_bytes:,} bytes; "
                             "TRIAGE_MAX_LOG_BYTES raises the limit")
        packed = self._compressed
        if packed is not None and self._read > _RATIO_AFTER and self._read > self._max_ratio * max(packed.count, 1):
            raise InputError(f"{self.path}: the {packed.kind} data expands more than {self._max_ratio:,} times "
                             "(a decompression bomb?); TRIAGE_MAX_GZIP_RATIO raises the limit")

    def _spans_by_read(self) -> Iterator[tuple[bytes, int]]:
        read = self._stream.read
        size = min(self.size, self.max_line)
        carry = b""
        skipping = False
        while True:
            data = read(size)
            if not data:
                break
            if not self._checked:
                self._text(data, len(data))
            self._count(len(data))
            if skipping:
                nl = data.find(b"\n")
                if nl < 0:
                    continue
                data, skipping = data[nl + 1 :], False
            if carry:
                data = carry + data
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) >= self.max_line:
                    self.lines_cut += 1
                    yield self._crlf(data, self.max_line)
                    carry, skipping = b"", True
                else:
                    carry = data
                continue
            carry = data[cut + 1 :]
            yield self._crlf(data, cut)
        if carry:
            yield self._crlf(carry, len(carry))

    @staticmethod
    def _crlf(data: bytes | bytearray, end: int) -> tuple[bytes | bytearray, int]:
        if data.find(b"\r", 0, end) < 0:
            return data, end
        block = bytes(data[:end]).replace(b"\r\n", b"\n")
        if block.endswith(b"\r"):  # the CR of the LF that ends the span
            block = block[:-1]
        return block, len(block)

    def byte_blocks(self) -> Iterator[tuple[int, bytes]]:
        """Yield ``(first_line_number, block)`` pairs, line numbers 1-based.

        Each block holds whole lines joined by ``\\n`` (CRLF turned into LF),
        without a trailing newline, so ``block.split(b"\\n")`` gives exactly
        its lines.  A log is read once: a second call yields nothing.
        """
        line_no = 1
        for data, end in self.spans():
            block = bytes(data[:end]) if isinstance(data, bytearray) or end != len(data) else data
            yield line_no, block
            line_no += block.count(b"\n") + 1

    def chunks(self) -> Iterator[tuple[int, str]]:
        """Like :meth:`byte_blocks`, decoded to text."""
        for first, block in self.byte_blocks():
            yield first, block.decode("utf-8", "replace")

    # -- lines --------------------------------------------------------------
    def _iter_lines(self) -> Iterator[str]:
        for _, text in self.chunks():
            yield from text.split("\n")

    def __iter__(self) -> "LogReader":
        return self

    def __next__(self) -> str:
        if self._lines is None:
            self._lines = self._iter_lines()
        return next(self._lines)


def open_log(path: str, size: int = BLOCK_SIZE) -> LogReader:
    """Open a log for streaming; ``-`` is standard input.

    Raises :class:`~triage.errors.InputError` (exit 2) when the file does not
    exist or cannot be read.
    """
    return LogReader(path, size)


def iter_chunks(path: str, size: int = BLOCK_SIZE) -> Iterator[tuple[int, str]]:
    """Yield ``(first_line_number, text_block)`` for a log, whole lines only.

    The block's lines are joined by ``\\n`` with no trailing newline.  The
    file is opened at once (a missing file raises here, not at the first
    ``next``) and closed when the iteration ends.
    """
    log = open_log(path, size)

    def blocks() -> Iterator[tuple[int, str]]:
        with log:
            yield from log.chunks()

    return blocks()


class Block:
    """Whole lines from one place in a log, as bytes or as text.

    ``first`` is the 1-based number of the first line.  Each form (UTF-8
    bytes, text, list of lines) is made on first use from the one at hand.
    """

    __slots__ = ("first", "_data", "_text", "_lines")

    def __init__(
        self, first: int, data: bytes | None = None, text: str | None = None, lines: list[str] | None = None
    ) -> None:
        self.first = first
        self._data = data
        self._text = text
        self._lines = lines

    def data(self) -> bytes:
        if self._data is None:
            self._data = self.text().encode("utf-8", "surrogatepass")
        return self._data

    def text(self) -> str:
        if self._text is None:
            if self._lines is not None:
                self._text = "\n".join(self._lines)
            else:
                self._text = self._data.decode("utf-8", "replace")  # type: ignore[union-attr]
        return self._text

    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text().split("\n")
        return self._lines

    def has_data(self) -> bool:
        """Whether the UTF-8 bytes are at hand (no encoding needed)."""
        return self._data is not None

    def has_lines(self) -> bool:
        """Whether the lines are at hand as str (no decoding needed)."""
        return self._lines is not None


def blocks(source: "Iterable[str] | str | LogReader | Block") -> Iterator[Block]:
    """Cut any source of lines into blocks of whole lines.

    ``source`` is a :class:`LogReader` (read in large blocks), a whole log as
    one string, one :class:`Block` (yielded as it is: a caller that reads a
    log once can hand each block to several scanners), or any iterable of
    lines; lines may still end in ``\\n`` (as from a file object), which is
    dropped.
    """
    if isinstance(source, Block):
        yield source
        return
    if isinstance(source, LogReader):
        for first, data in source.byte_blocks():
            yield Block(first, data=data)
        return
    if isinstance(source, str):
        text = source.replace("\r\n", "\n")
        if text.endswith("\n"):
            text = text[:-1]
        source = text.split("\n") if text else []
    it = iter(source)
    first = 1
    while True:
        batch = list(islice(it, BATCH_LINES))
        if not batch:
            return
        joined = "\n".join(batch)
        if joined.count("\n") != len(batch) - 1 or "\r" in joined:
            # Lines that still carry their newline, or hold several lines:
            # one line each, newline-free (a lone CR stays).
            batch = [ln.rstrip("\r\n").replace("\r\n", " ").replace("\n", " ") for ln in batch]
            yield Block(first, lines=batch)
        else:
            yield Block(first, text=joined, lines=batch)
        first += len(batch)


def hit_lines(search: Callable[..., Any], text: "str | bytes", newline: "str | bytes" = "\n",
              end: Optional[int] = None) -> Iterator[tuple[int, int, int]]:
    """Yield ``(index, start, stop)`` for each line of ``text[:end]`` that
    ``search`` hits, once per line and in order: the 0-based line index and
    the line's bounds (``text[start:stop]``, without its newline).

    ``search(text, pos, end)`` is a compiled pattern's ``search`` (``re`` or
    RE2, on ``str`` or ``bytes``).  The pattern runs over the whole block at
    C speed; Python only sees the lines it hits.  Newlines are counted once,
    up to each hit, never line by line.
    """
    n = len(text) if end is None else end
    pos = 0
    counted_to = 0
    idx = 0
    while pos <= n:
        m = search(text, pos, n)
        if m is None:
            return
        s = m.start()
        ls = text.rfind(newline, 0, s) + 1  # type: ignore[arg-type]
        le = text.find(newline, s, n)  # type: ignore[arg-type]
        if le < 0:
            le = n
        idx += text.count(newline, counted_to, ls)  # type: ignore[arg-type]
        counted_to = ls
        yield idx, ls, le
        pos = le + 1
