"""Plain words for the YAML syntax errors a rule file's author meets most.

PyYAML says "while parsing a block collection did not find expected '-'
indicator"; the author needs to hear which line is indented wrong and how.
The common cases: a tab in the indentation, a line indented to no level of
the lines above (mixed indentation), a list item without its ``- ``, and a
``key: value`` indented deeper than its siblings.
"""

from __future__ import annotations

from typing import Optional


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _levels_above(lines: list[str], at: int) -> list[int]:
    """The indentation levels open at line ``at`` (0-based): each earlier line's, innermost last."""
    levels: list[int] = []
    for line in lines[:at]:
        body = line.strip()
        if not body or body.startswith("#"):
            continue
        width = _indent(line)
        while levels and levels[-1] >= width:
            levels.pop()
        levels.append(width)
        if body.startswith("- "):  # the item's keys sit after its dash
            levels.append(width + 2)
    return levels


def hint(text: str, line: int, problem: str) -> Optional[str]:
    """A plain-words hint for a syntax error PyYAML reported at ``line`` (1-based), or None."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    at = line - 1
    for i in (at, at - 1):  # PyYAML may point a line late
        if 0 <= i < len(lines) and "\t" in lines[i][: len(lines[i]) - len(lines[i].lstrip())]:
            return f"line {i + 1} has a tab in its indentation: YAML indents with spaces only"
    here = lines[at]
    levels = _levels_above(lines, at)
    width = _indent(here)
    if "expected '-' indicator" in problem or "expected <block end>" in problem:
        if width not in levels:
            near = sorted(set(levels), key=lambda x: (abs(x - width), x))[:2]
            return (f"line {line} is indented {width} spaces, a level no line above has "
                    f"({' or '.join(map(str, sorted(near)))}): mixed indentation")
        if not here.lstrip().startswith("-"):
            return (f"line {line} sits in a list but does not start with `- `: "
                    "add the dash, or indent it under the item above")
    if "mapping values are not allowed" in problem:
        before = next((lines[i] for i in range(at - 1, -1, -1) if lines[i].strip()), "")
        if width > _indent(before) + (2 if before.lstrip().startswith("- ") else 0):
            return (f"line {line} is indented deeper than the line above it: "
                    "align it with its siblings (or quote a value that holds ': ')")
        return "a value that holds ': ' must be quoted"
    return None
