"""A shell command as a reader sees it: one argument per line when it is long.

The comment's "run them" command sits in a code block that scrolls
sideways: on one line, what it runs (the configs, the point) is off-screen.
Broken before each option, with a ``\\`` continuation, it reads top to
bottom and still pastes into a shell as the same command.
"""

from __future__ import annotations

import re

WIDTH = 80  # a command longer than this is broken, one option a line
INDENT = "    "
OPTION = re.compile(r"--?[A-Za-z]")


def words(line: str) -> list[str]:
    """The shell words of ``line`` as written (quotes kept), split on unquoted blanks."""
    out: list[str] = []
    word, quote, escaped = "", "", False
    for ch in line:
        if escaped:
            word, escaped = word + ch, False
        elif ch == "\\" and quote != "'":
            word, escaped = word + ch, True
        elif quote:
            word += ch
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            word, quote = word + ch, ch
        elif ch in " \t":
            if word:
                out.append(word)
            word = ""
        else:
            word += ch
    if word:
        out.append(word)
    return out


def wrap(command: str, width: int = WIDTH) -> str:
    """``command`` (one or more lines) with each line longer than ``width``
    broken before each option (an option keeps its value), continued with ``\\``."""
    return "\n".join(_wrap_line(line, width) for line in command.splitlines())


def _wrap_line(line: str, width: int) -> str:
    if len(line) <= width or line.rstrip().endswith("\\"):
        return line
    groups: list[list[str]] = []
    for w in words(line):
        if not groups or OPTION.match(w):  # an option starts a line; its value and plain words follow it
            groups.append([w])
        else:
            groups[-1].append(w)
    return (" \\\n" + INDENT).join(" ".join(g) for g in groups)
