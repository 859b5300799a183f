"""Read the pixels of an 8-bit RGB(A) PNG (what Chromium's --screenshot writes), for tests."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path


def pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows as RGB(A) bytes, unfiltered."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6) and chunk[12] == 0, "only 8-bit RGB(A), not interlaced"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r) if bpp == 3 else bytes(x for i, x in enumerate(r) if i % 4 != 3) for r in rows]


def colour_count(path: Path, rgb: tuple[int, int, int], tolerance: int = 8) -> int:
    """How many pixels are within ``tolerance`` of ``rgb`` in each channel."""
    _, _, rows = pixels(path)
    seen: Counter = Counter()
    for row in rows:
        seen.update(row[i:i + 3] for i in range(0, len(row), 3))
    return sum(n for px, n in seen.items() if all(abs(px[k] - rgb[k]) <= tolerance for k in range(3)))
