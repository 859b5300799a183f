"""What the benchmarks share: the table of results and the verdict."""

from __future__ import annotations


def print_rows(rows: list[tuple[str, str]]) -> None:
    """Print ``(what, result)`` rows as two aligned columns."""
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def verdict(failures: list[str]) -> int:
    """Print each failure (or OK) and return the exit status."""
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print("OK")
    return 1 if failures else 0
